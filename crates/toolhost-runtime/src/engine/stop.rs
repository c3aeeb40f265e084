//! Why a run stops in the middle of a reply's calls, by the embedding program's code: its
//! middleware raised an error, evaluating a tool's approval policy did, or a hook cancelled the
//! run before a call or ended it after a failed one. The calls that did not start are answered
//! "not run", the thread is marked failed (idle, for a cancellation, which can be resumed), and
//! the run returns the error (spec 003: these surface as run errors). The run is stopped so by
//! [`Runtime::stop_for`](super::Runtime) (in `ending.rs`).

use super::error::RuntimeError;
use super::middleware::{middleware_error, Failed};
use crate::variables::Redactor;
use toolhost_store::ThreadStatus;

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
    /// A hook before a call cancelled the run (redacted already).
    Cancelled {
        /// Why.
        reason: String,
    },
    /// A hook after a failed call ended the run (redacted already).
    EndedByHook {
        /// Why.
        reason: String,
    },
}

impl Stop {
    /// What the calls it leaves unrun are answered.
    pub fn not_run_text(&self) -> String {
        let why = match self {
            Stop::Middleware((stage, _)) => format!("{} middleware failed", stage.as_str()),
            Stop::Policy { part, .. } => format!("evaluating the approval policy's {part} failed"),
            Stop::Cancelled { reason } => format!("a hook cancelled it: {reason}"),
            Stop::EndedByHook { reason } => format!("a hook ended it: {reason}"),
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
            Stop::Cancelled { reason } => RuntimeError::Cancelled {
                tool: tool.unwrap_or_default().to_owned(),
                reason,
            },
            Stop::EndedByHook { reason } => RuntimeError::EndedByHook {
                tool: tool.unwrap_or_default().to_owned(),
                reason,
            },
        }
    }

    /// The thread's status after it: a cancelled run can be resumed, the rest failed.
    pub fn status(&self) -> ThreadStatus {
        match self {
            Stop::Cancelled { .. } => ThreadStatus::Idle,
            _ => ThreadStatus::Failed,
        }
    }
}
