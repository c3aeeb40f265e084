//! What a call of an agent tool returns, as a plain function of how the child's run ended and
//! its stored history.

use super::super::outcome::{RunOutcome, StopReason, Waiting};
use toolhost_core::ToolResult;
use toolhost_store::{Message, Role};

/// The call's result from the child's run: the `sessionStop` call's message (or, without one,
/// the child's last reply), an error with the `sessionFail` call's message, or an error saying
/// the child was stopped or waits for a person (naming the child, where the wait is answered).
pub(in crate::engine) fn session_result(
    child: &str,
    outcome: &RunOutcome,
    history: &[Message],
) -> ToolResult {
    let last_reply = || {
        history
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant && m.depth == 0)
            .and_then(|m| m.content.clone())
            .unwrap_or_default()
    };
    match outcome {
        RunOutcome::Done(StopReason::SessionStop(end)) => {
            ToolResult::success(end.message.clone().unwrap_or_else(last_reply))
        }
        RunOutcome::Done(StopReason::SessionFail(end)) => ToolResult::error(format!(
            "the sub-agent's session failed: {}",
            end.message.clone().unwrap_or_else(last_reply)
        )),
        RunOutcome::Done(StopReason::Stopped) => ToolResult::error(format!(
            "the sub-agent (thread {child}) was stopped before its session ended"
        )),
        RunOutcome::Done(_) => ToolResult::success(last_reply()),
        RunOutcome::Paused(waiting) => ToolResult::error(format!(
            "the sub-agent (thread {child}) waits for {}; its session did not end",
            match waiting {
                Waiting::Approval(r) => format!("a decision on its call of \"{}\"", r.tool),
                Waiting::Variables { names, .. } => format!("values of {}", names.join(", ")),
            }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::SessionEnd;

    #[test]
    fn a_session_stop_returns_its_message_and_a_failure_is_an_error() {
        let end = SessionEnd {
            tool: "done".into(),
            message: Some("found it".into()),
            attachments: Vec::new(),
        };
        let ok = session_result(
            "c",
            &RunOutcome::Done(StopReason::SessionStop(end.clone())),
            &[],
        );
        assert!(ok.is_success());
        let failed = session_result("c", &RunOutcome::Done(StopReason::SessionFail(end)), &[]);
        assert!(!failed.is_success());
        let stopped = session_result("c", &RunOutcome::Done(StopReason::Stopped), &[]);
        assert!(!stopped.is_success());
    }
}
