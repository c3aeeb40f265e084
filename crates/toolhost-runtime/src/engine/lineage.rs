//! What a tool sees of its thread's place in a tree of threads (spec 001 §5–§6): the arguments
//! the thread was started with as a sub-agent (`ThreadState.arguments`, catalogue SA-17), and
//! the way a sub-agent tells its parent something (`notifyParent`, for instances whose parent
//! hears from them explicitly).

use super::state::ThreadState;
use super::state_error::StateError;
use super::subagent::{display_name, INSTANCE_KEY};
use serde_json::Value;
use sha2::{Digest, Sha256};
use toolhost_store::{QueueItem, Role, StoreError, Write};

impl ThreadState {
    /// The arguments the call that started this thread as a sub-agent gave (for a resumable
    /// instance, `subagent_create`'s `arguments`), as they were validated; `None` for a thread
    /// no call started. Secrets in them were redacted when they were stored.
    pub async fn arguments(&self) -> Result<Option<Value>, StoreError> {
        let started = self.store().value(self.thread_id(), INSTANCE_KEY).await?;
        Ok(started.and_then(|v| v.get("arguments").cloned()))
    }

    /// Sends `message` to this thread's parent (the spec's `notifyParent()`): it is queued
    /// there as a user message naming this thread, taken at the parent's next step, and starts
    /// the parent's next turn when its run is idle. Secrets are redacted from it. The same call
    /// sending the same message again (after a crash) queues it once. Refused on a thread
    /// that has no parent.
    pub async fn notify_parent(&self, message: &str) -> Result<(), StateError> {
        let failed = |source: StoreError| StateError::Store {
            op: "notifyParent",
            source,
        };
        let thread = self
            .store()
            .thread(self.thread_id())
            .await
            .map_err(failed)?;
        let Some(parent) = thread.parent.clone() else {
            return Err(StateError::NoParent(self.thread_id().to_owned()));
        };
        let name = display_name(&thread).unwrap_or(&thread.agent);
        let content = self.redactor().text(&format!(
            "The sub-agent \"{name}\" (thread {}) says:\n{message}",
            thread.id
        ));
        let digest = Sha256::digest(content.as_bytes());
        let hash: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        let key = format!("notify:{}:{}:{hash}", thread.id, self.call_id());
        let item = QueueItem::Message {
            role: Role::User,
            content,
        };
        self.store()
            .apply(&parent, vec![Write::EnqueueOnce { key, item }])
            .await
            .map(|_| ())
            .map_err(failed)
    }
}
