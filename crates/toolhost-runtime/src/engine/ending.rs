//! How a run ends: paused, with what the thread waits for recorded once; done, with the
//! thread's status saying how; or stopped in the middle of a reply's calls (see
//! [`super::stop`]), with the calls that did not start answered "not run".

use super::approvals::requested_event;
use super::events::{ThreadEvent, VariablesRequested};
use super::execute::mark_hook;
use super::offer::Offer;
use super::outcome::{RunOutcome, StopReason, Waiting};
use super::ownership::OwnerId;
use super::plan::answer_writes;
use super::state::ThreadState;
use super::stop::Stop;
use super::{Runtime, RuntimeError};
use toolhost_core::ToolResult;
use toolhost_store::{new_id, HookOutcome, ThreadStatus, ToolCallRecord, Write};

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
                    .services
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
                    .services
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
                        writes.push(
                            VariablesRequested {
                                request_id: id.clone(),
                                names: names.clone(),
                            }
                            .write(),
                        );
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
        // A stopped thread can be resumed; a finished one waits for a new message. A thread
        // its node hands on (the node stopping, a person's stop not among the reasons) stays
        // `running`: work for whichever process takes it up.
        let status = match reason {
            StopReason::Stopped if self.hands_back(thread_id) => ThreadStatus::Running,
            StopReason::Stopped => ThreadStatus::Idle,
            StopReason::SessionFail(_) => ThreadStatus::Failed,
            _ => ThreadStatus::Done,
        };
        self.commit(thread_id, owner, vec![Write::SetStatus(status)])
            .await?;
        Ok(RunOutcome::Done(reason))
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
            let journaled = match self.services.db.call(state.thread_id(), &call.id).await {
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
