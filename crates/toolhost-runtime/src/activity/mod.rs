//! Activities that run outside the process: programs declared in `agents/activities/NAME.json`.

pub mod channel;
pub(crate) mod process;
pub(crate) mod state_ops;
mod streams;

pub use process::{ActivityInput, ApprovalRule, ProcessActivity, ProcessActivityError, STOP_GRACE};
