//! Why a run stops in the middle of a reply's calls, by the embedding program's code: its
//! middleware raised an error, or evaluating a tool's approval policy did. The call where it
//! happened and the ones after it (none of which started) are answered "not run", the thread
//! is marked failed, and the run returns the error (spec 003: these errors surface as run
//! errors).

use super::middleware::{middleware_error, Failed};
use super::ownership::OwnerId;
use super::{Runtime, RuntimeError};
use crate::variables::Redactor;
use toolhost_store::{ThreadStatus, Write};

/// What stopped the run.
#[derive(Debug)]
pub(super) enum Stop {
    /// A middleware callback failed.
    Middleware(Failed),
    /// Evaluating a tool's approval policy failed (`when`, `reason` or `rejectMessage`); the
    /// message is redacted already.
    Policy {
        /// The part that failed.
        part: &'static str,
        /// What it said.
        message: String,
    },
}

impl Stop {
    /// What the calls it leaves unrun are answered.
    pub fn not_run_text(&self) -> String {
        let why = match self {
            Stop::Middleware((stage, _)) => format!("{} middleware failed", stage.as_str()),
            Stop::Policy { part, .. } => format!("evaluating the approval policy's {part} failed"),
        };
        format!("the call was not run: the run stopped because {why}")
    }

    /// The run error, naming `tool`.
    pub fn error(self, tool: Option<&str>, redactor: &Redactor) -> RuntimeError {
        match self {
            Stop::Middleware(failed) => middleware_error(failed, tool, redactor),
            Stop::Policy { part, message } => RuntimeError::ApprovalPolicy {
                tool: tool.unwrap_or_default().to_owned(),
                part,
                message,
            },
        }
    }
}

impl Runtime {
    /// Marks the thread failed and returns `error` (or the store's error, if marking failed).
    pub(super) async fn mark_failed(
        &self,
        thread_id: &str,
        owner: &OwnerId,
        error: RuntimeError,
    ) -> RuntimeError {
        let writes = vec![Write::SetStatus(ThreadStatus::Failed)];
        match self.commit(thread_id, owner, writes).await {
            Ok(_) => error,
            Err(e) => e,
        }
    }
}
