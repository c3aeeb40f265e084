//! Conversations that go on: a message or a tool queued for a thread (the spec's `queueMessage`
//! and `queueTool`) is stored durably and taken at the thread's next step; when no run owns the
//! thread, sending starts one.

use super::outcome::RunOutcome;
use super::{Runtime, RuntimeError};
use serde_json::Value;
use toolhost_store::{Lease, QueueItem, Role, Write};

/// What became of a message sent to a thread.
#[derive(Debug, Clone, PartialEq)]
pub enum Delivery {
    /// No run owned the thread: this call ran it, and this is how the run ended.
    Ran(RunOutcome),
    /// Another run owns the thread: the message is stored and that run takes it at its next
    /// step (or, if it is just ending, as it ends).
    Queued(Lease),
}

impl Runtime {
    /// Stores a user message for the thread's next step, without running it; the thread's
    /// secrets are redacted from it first.
    pub async fn queue_message(&self, thread_id: &str, content: &str) -> Result<(), RuntimeError> {
        let content = self
            .variables()
            .thread_redactor(thread_id)
            .await?
            .text(content);
        self.services
            .db
            .apply(
                thread_id,
                vec![Write::Enqueue(QueueItem::Message {
                    role: Role::User,
                    content,
                })],
            )
            .await?;
        Ok(())
    }

    /// Stores a call of `tool` that the thread runs at its next step, before the model is asked
    /// again; its arguments are validated when it runs, like a model's. The thread's secrets are
    /// redacted from them first (a tool gets secrets from its variables).
    pub async fn queue_tool(
        &self,
        thread_id: &str,
        tool: &str,
        arguments: Value,
    ) -> Result<(), RuntimeError> {
        let arguments = self
            .variables()
            .thread_redactor(thread_id)
            .await?
            .json(arguments);
        self.services
            .db
            .apply(
                thread_id,
                vec![Write::Enqueue(QueueItem::Tool {
                    name: tool.to_owned(),
                    arguments,
                })],
            )
            .await?;
        Ok(())
    }

    /// Sends a user message: it is stored first, then, when no run owns the thread, the thread
    /// runs its next turn here. When another run owns it, the message waits for that run.
    pub async fn send(&self, thread_id: &str, message: &str) -> Result<Delivery, RuntimeError> {
        let thread = self.services.db.thread(thread_id).await?;
        // A thread whose agent cannot run is told so before the message is stored.
        self.check_agent(&thread.agent)?;
        self.queue_message(thread_id, message).await?;
        match self.run(thread_id).await {
            Ok(outcome) => Ok(Delivery::Ran(outcome)),
            Err(RuntimeError::ThreadBusy { lease, .. }) => Ok(Delivery::Queued(lease)),
            Err(e) => Err(e),
        }
    }
}
