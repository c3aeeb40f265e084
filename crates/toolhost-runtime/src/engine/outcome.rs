//! What a run decides and reports, shared by every part of the engine: why a run ended, what a
//! paused thread waits for, and the texts a model sees for calls that did not run. This module
//! sits at the bottom of the engine and imports nothing from it.

use toolhost_store::ApprovalRequest;

/// Why a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// The model replied without calling tools.
    Response,
    /// The side's stop tool was called.
    StopTool(String),
    /// The step budget of the turn was used up.
    MaxSteps(u32),
    /// A `dual_ai` session had its last turn.
    MaxSessionTurns(u32),
    /// [`Runtime::stop`](super::Runtime::stop) was called.
    Stopped,
    /// The side called its `sessionStop` tool: the session ended successfully.
    SessionStop(SessionEnd),
    /// The side called its `sessionFail` tool: the session ended as failed (the thread's
    /// status is `failed`).
    SessionFail(SessionEnd),
}

/// How a session binding's call ended the session: the tool, and what the call's arguments
/// named by the binding's `messageProperty` and `attachmentsProperty` hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionEnd {
    /// The tool called.
    pub tool: String,
    /// The text of its `messageProperty` argument (JSON text when it is not a string).
    pub message: Option<String>,
    /// The paths in its `attachmentsProperty` argument.
    pub attachments: Vec<String>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RunOutcome {
    /// The thread finished its turn.
    Done(StopReason),
    /// The thread waits durably for a person; it goes on when [`Runtime::run`](super::Runtime::run) is called after
    /// the wait is over.
    Paused(Waiting),
}

/// What a paused thread waits for.
#[derive(Debug, Clone, PartialEq)]
pub enum Waiting {
    /// A decision on a call that needs approval.
    Approval(ApprovalRequest),
    /// Values of variables it needs: the request id and the names (never values).
    Variables {
        /// The request's id.
        request_id: String,
        /// The missing variables.
        names: Vec<String>,
    },
}

/// The text a model sees for a call that was not run because the thread was stopped.
pub const NOT_RUN_STOPPED: &str =
    "ToolCallError: this call was not run: the thread was stopped before it.";

/// The text a model sees for a call whose outcome a crash left unknown.
pub const OUTCOME_UNKNOWN: &str = "ToolCallError: the outcome of this call is unknown: toolhost stopped while it was running, so it may or may not have taken effect. Check its effect before calling it again.";
