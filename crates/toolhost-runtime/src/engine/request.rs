//! What one request (one run of a thread started with [`Runtime::run_with`]) may bring of its
//! own (spec 003): an approval handler that takes precedence over the runtime's, and approval
//! policies that apply to this request only, in place of the tools' own.
//!
//! The settings hold for the runs this call makes of the thread (a run that takes up work
//! arriving as it ends included), not for child threads, and not for runs made by other calls:
//! a person resuming the thread later gets the runtime's handler and the tools' policies.

use super::outcome::RunOutcome;
use super::verdict::ApprovalHandler;
use super::{Runtime, RuntimeError};
use std::collections::HashMap;
use std::sync::Arc;
use toolhost_core::approval::ApprovalPolicy;

/// The settings of one request.
#[derive(Clone, Default)]
pub struct RunRequest {
    /// Decides approval requests of this request; wins over [`Runtime::set_approval_handler`].
    pub approval_handler: Option<Arc<dyn ApprovalHandler>>,
    /// Approval policies for this request only, by tool name, in place of the tools' own.
    pub approvals: HashMap<String, Arc<dyn ApprovalPolicy>>,
}

impl RunRequest {
    /// A request with its own approval handler.
    pub fn with_approval_handler(mut self, handler: Arc<dyn ApprovalHandler>) -> Self {
        self.approval_handler = Some(handler);
        self
    }

    /// A request that applies `policy` to the calls of `tool`.
    pub fn with_approval(mut self, tool: &str, policy: impl ApprovalPolicy + 'static) -> Self {
        self.approvals.insert(tool.to_owned(), Arc::new(policy));
        self
    }
}

/// Forgets a request's settings when its run ends.
struct Held<'a> {
    runtime: &'a Runtime,
    thread_id: String,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.runtime
            .process
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.thread_id);
    }
}

impl Runtime {
    /// Runs the thread like [`Runtime::run`], with `request`'s settings. While one such run of
    /// a thread is under way in this runtime, another `run_with` of it is refused as busy.
    pub async fn run_with(
        &self,
        thread_id: &str,
        request: RunRequest,
    ) -> Result<RunOutcome, RuntimeError> {
        let busy = {
            let mut held = self
                .process
                .requests
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            let busy = held.contains_key(thread_id);
            if !busy {
                held.insert(thread_id.to_owned(), Arc::new(request));
            }
            busy
        };
        if busy {
            return match self.owner_of(thread_id).await? {
                Some(lease) => Err(RuntimeError::ThreadBusy {
                    thread: thread_id.to_owned(),
                    lease,
                }),
                None => self.run(thread_id).await,
            };
        }
        let _held = Held {
            runtime: self,
            thread_id: thread_id.to_owned(),
        };
        self.run(thread_id).await
    }

    /// The settings of the request that runs `thread_id`, if one brought any.
    pub(super) fn request_for(&self, thread_id: &str) -> Arc<RunRequest> {
        self.process
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(thread_id)
            .cloned()
            .unwrap_or_default()
    }
}
