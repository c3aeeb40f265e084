//! Why a run stops in the middle of a reply's calls, by the embedding program's code: its
//! middleware raised an error, evaluating a tool's approval policy did, or a hook cancelled the
//! run before a call or ended it after a failed one. The calls that did not start are answered
//! "not run", the thread is marked failed (idle, for a cancellation, which can be resumed), and
//! the run returns the error (spec 003: these surface as run errors).

use super::calls::Offer;
use super::execute::mark_hook;
use super::middleware::{middleware_error, Failed};
use super::ownership::OwnerId;
use super::plan::answer_writes;
use super::state::ThreadState;
use super::{Runtime, RuntimeError};
use crate::variables::Redactor;
use toolhost_core::ToolResult;
use toolhost_store::{HookOutcome, ThreadStatus, ToolCallRecord, Write};

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

impl Runtime {
    /// Marks the thread failed and returns `error` (or the store's error, if marking failed).
    pub(super) async fn mark_failed(
        &self,
        thread_id: &str,
        owner: &OwnerId,
        error: RuntimeError,
    ) -> RuntimeError {
        self.mark_stopped(thread_id, owner, ThreadStatus::Failed, error)
            .await
    }

    /// Gives the thread `status` and returns `error` (or the store's error, if that failed).
    pub(super) async fn mark_stopped(
        &self,
        thread_id: &str,
        owner: &OwnerId,
        status: ThreadStatus,
        error: RuntimeError,
    ) -> RuntimeError {
        let writes = vec![Write::SetStatus(status)];
        match self.commit(thread_id, owner, writes).await {
            Ok(_) => error,
            Err(e) => e,
        }
    }
}

impl Runtime {
    /// Stops the run for `stop`, which happened at a call of `tool` (default: the first of
    /// `calls`): `calls` (none of which started) are answered "not run", the thread is marked
    /// failed (idle, for a cancellation), and the run error is returned.
    pub(super) async fn stop_for(
        &self,
        state: &ThreadState,
        offer: &Offer,
        owner: &OwnerId,
        (calls, tool): (&[ToolCallRecord], Option<String>),
        stop: Stop,
    ) -> RuntimeError {
        let tool = tool.or_else(|| calls.first().map(|c| c.name.clone()));
        let text = stop.not_run_text();
        let mut writes = Vec::new();
        for (i, call) in calls.iter().enumerate() {
            let journaled = match self.db.call(state.thread_id(), &call.id).await {
                Ok(c) => c.is_some(),
                Err(e) => return e.into(),
            };
            let mut answer = answer_writes(call, journaled, &ToolResult::error(text.clone()));
            if let (0, Stop::Cancelled { reason }) = (i, &stop) {
                let reason = reason.clone();
                mark_hook(&mut answer, HookOutcome::Cancelled { reason });
            }
            writes.extend(answer);
        }
        if let Err(e) = self
            .commit(state.thread_id(), owner, offer.placed(writes))
            .await
        {
            return e;
        }
        let status = stop.status();
        let error = stop.error(tool.as_deref(), state.redactor());
        self.mark_stopped(state.thread_id(), owner, status, error)
            .await
    }
}
