//! Activities that run outside the process: programs declared in `agents/activities/NAME.json`.

mod process;

pub use process::{ActivityInput, ApprovalRule, ProcessActivity, ProcessActivityError};
