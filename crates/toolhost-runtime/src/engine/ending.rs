//! How a run ends: paused, with what the thread waits for recorded once, or done, with the
//! thread's status saying how.

use super::approvals::requested_event;
use super::outcome::{RunOutcome, StopReason, Waiting};
use super::ownership::OwnerId;
use super::{Runtime, RuntimeError};
use serde_json::json;
use toolhost_store::{new_id, EventKind, ThreadStatus, Write};

impl Runtime {
    /// Records what the thread waits for (once, also when it is run again while it waits) and
    /// pauses it.
    pub(super) async fn pause(
        &self,
        thread_id: &str,
        owner: &OwnerId,
        waiting: Waiting,
    ) -> Result<RunOutcome, RuntimeError> {
        tracing::debug!(thread = thread_id, "pausing: waiting for a person");
        let mut writes = vec![Write::SetStatus(ThreadStatus::Paused)];
        let waiting = match waiting {
            Waiting::Approval(request) => {
                let asked = self
                    .db
                    .approvals(thread_id)
                    .await?
                    .iter()
                    .any(|r| r.request.call_id == request.call_id);
                if !asked {
                    writes.push(Write::RequestApproval(request.clone()));
                    writes.push(requested_event(&request));
                }
                Waiting::Approval(request)
            }
            Waiting::Variables { names, .. } => {
                let open = self
                    .db
                    .variable_requests(thread_id)
                    .await?
                    .into_iter()
                    .find(|r| r.answered_at.is_none() && r.names == names);
                let request_id = match open {
                    Some(r) => r.id,
                    None => {
                        let id = new_id();
                        writes.push(Write::RequestVariables {
                            id: id.clone(),
                            names: names.clone(),
                        });
                        writes.push(Write::Event {
                            kind: EventKind::VariablesRequested,
                            data: json!({"requestId": id, "names": names}),
                        });
                        id
                    }
                };
                Waiting::Variables { request_id, names }
            }
        };
        self.commit(thread_id, owner, writes).await?;
        Ok(RunOutcome::Paused(waiting))
    }

    pub(super) async fn finish(
        &self,
        thread_id: &str,
        owner: &OwnerId,
        reason: StopReason,
    ) -> Result<RunOutcome, RuntimeError> {
        // A stopped thread can be resumed; a finished one waits for a new message.
        let status = match reason {
            StopReason::Stopped => ThreadStatus::Idle,
            StopReason::SessionFail(_) => ThreadStatus::Failed,
            _ => ThreadStatus::Done,
        };
        self.commit(thread_id, owner, vec![Write::SetStatus(status)])
            .await?;
        Ok(RunOutcome::Done(reason))
    }
}
