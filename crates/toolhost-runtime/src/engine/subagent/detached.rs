//! Sub-agents that do not block (`blocking: false`, catalogue SA-13): the call returns a
//! reference to the child at once, the child runs beside its parent, and its session result
//! reaches the parent later as a queued message.
//!
//! - **Who runs the child**: the parent's run. It keeps the parent's lease while children it
//!   started run, drives them beside its own steps, and takes up each result as it arrives (a
//!   result that comes after the parent's turn ended starts its next turn). A parent's run also
//!   picks up, when it starts, every detached child of the thread whose result was not yet
//!   delivered (after a crash, a stop or a child that waited for a person), so nothing started
//!   is forgotten.
//! - **Exactly once**: the result is queued with [`Write::EnqueueOnce`] under a key derived from
//!   the child, so however many runs see the child's session end (its parent's, its own run
//!   resumed by a person, a run after a crash) the parent gets one message. Whoever delivers
//!   then marks the child delivered, so later runs of the parent no longer look at it.
//! - **A child's own run** (resumed by a person after an approval, say) delivers too when its
//!   session ends, and starts the parent's next turn when no run owns the parent.
//! - A child that was stopped, or waits for a person, delivers nothing yet: its session did not
//!   end.

use super::super::outcome::{RunOutcome, StopReason};
use super::super::ownership::OwnerId;
use super::super::turns::opens_session;
use super::super::{Runtime, RuntimeError};
use super::{INSTANCE_KEY, RESUMABLE_TAG};
use serde_json::{json, Value};
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use tokio::sync::mpsc;
use toolhost_core::tool::AbortSignal;
use toolhost_core::Attachment;
use toolhost_store::{QueueItem, Role, Thread, ThreadChanges, ThreadStatus, Write};

/// The tag of a child started by a call that did not wait for it.
pub(in crate::engine) const DETACHED_TAG: &str = "detached";

/// The child's value saying its result was delivered to its parent.
pub(super) const DELIVERED_KEY: &str = "toolhost.subagent.delivered";

/// How often a parent's run that waits for its children looks for other work it could not
/// hear of (a message sent to it through another process sharing a SQLite file): work stored
/// through this process (a message, a result a child's own run delivered) is heard as it
/// commits.
const IDLE_POLL: std::time::Duration = std::time::Duration::from_millis(200);

type ChildRun<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// The runs of the detached children a parent's run drives, polled together.
#[derive(Default)]
struct Children<'a>(Vec<ChildRun<'a>>);

impl<'a> Children<'a> {
    fn push(&mut self, run: ChildRun<'a>) {
        self.0.push(run);
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Completes when one of the runs completes (never, when there are none).
    async fn next(&mut self) {
        std::future::poll_fn(|cx| {
            for i in 0..self.0.len() {
                if self.0[i].as_mut().poll(cx).is_ready() {
                    drop(self.0.swap_remove(i));
                    return Poll::Ready(());
                }
            }
            Poll::Pending
        })
        .await
    }
}

/// Removes the parent's entry from the runtime's registry when its run ends.
struct Registration<'a> {
    runtime: &'a Runtime,
    thread_id: String,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.runtime
            .process
            .detached
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.thread_id);
    }
}

/// What a call of a detached sub-agent returns at once.
pub(super) fn reference(child: &str, agent: &str) -> String {
    json!({
        "reference": child,
        "agent": agent,
        "status": "running",
        "result": "arrives as a message when the sub-agent's session ends",
    })
    .to_string()
}

impl Runtime {
    /// Hands a detached child to the run of its parent that is under way in this runtime.
    /// Without one (which a call inside a run cannot meet), the parent's next run finds the
    /// child in the store.
    pub(super) fn detach(&self, parent: &str, child: &str) {
        let registry = self
            .process
            .detached
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = registry.get(parent) {
            let _ = tx.send(child.to_owned());
        }
    }

    /// The step cycle of a thread this run owns, with the detached children it starts (or
    /// finds undelivered) driven beside it; returns when the thread's turn ended and no child
    /// runs any more.
    pub(in crate::engine) async fn run_with_children(
        &self,
        thread_id: &str,
        owner: &OwnerId,
        abort: &AbortSignal,
    ) -> Result<RunOutcome, RuntimeError> {
        let (tx, mut started) = mpsc::unbounded_channel();
        self.process
            .detached
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(thread_id.to_owned(), tx);
        let _registration = Registration {
            runtime: self,
            thread_id: thread_id.to_owned(),
        };
        // Subscribed before the queue is first looked at, so that no work falls between.
        let mut changes = ThreadChanges::new(self.services.db.blocking().as_ref(), thread_id);
        let mut children = Children::default();
        for child in self.undelivered_children(thread_id).await? {
            children.push(self.drive_detached(child, abort));
        }
        let mut run = Some(Box::pin(self.run_owned(thread_id, owner, abort)));
        let mut last = None;
        loop {
            while let Ok(child) = started.try_recv() {
                children.push(self.drive_detached(child, abort));
            }
            if run.is_none() && children.is_empty() {
                return Ok(
                    last.expect("the thread's turn ended before its children are waited for")
                );
            }
            tokio::select! {
                outcome = async {
                    match run.as_mut() {
                        Some(step) => step.await,
                        None => std::future::pending().await,
                    }
                } => {
                    run = None;
                    // A run that failed leaves its children: the next run picks them up.
                    last = Some(outcome?);
                }
                () = children.next() => {}
                Some(child) = started.recv() => {
                    children.push(self.drive_detached(child, abort));
                }
                () = changes.next(IDLE_POLL), if run.is_none() => {}
            }
            // Between turns, work that arrived (a child's result, a message sent to the thread)
            // starts the next turn; a thread that waits for a person or was stopped waits on.
            let idle = run.is_none()
                && matches!(&last, Some(RunOutcome::Done(r)) if *r != StopReason::Stopped);
            if idle && !abort.is_aborted() {
                changes.mark();
                if !self.services.db.queued(thread_id).await?.is_empty() {
                    run = Some(Box::pin(self.run_owned(thread_id, owner, abort)));
                }
            }
        }
    }

    /// The thread's detached children whose results were not delivered.
    async fn undelivered_children(&self, parent: &str) -> Result<Vec<String>, RuntimeError> {
        let mut found = Vec::new();
        for child in self.services.db.threads(Some(parent)).await? {
            // A deferred instance waits for variables: it runs once they are given.
            if child.tags.iter().any(|t| t == DETACHED_TAG)
                && self
                    .services
                    .db
                    .value(&child.id, DELIVERED_KEY)
                    .await?
                    .is_none()
                && self.deferred_request(&child.id).await?.is_none()
            {
                found.push(child.id);
            }
        }
        Ok(found)
    }

    /// Runs a detached child to the end of its session (its own run delivers the result); a
    /// failure is logged, and the parent's next run tries the child again. Boxed: the child's
    /// run may drive children of its own.
    fn drive_detached<'a>(&'a self, child: String, abort: &'a AbortSignal) -> ChildRun<'a> {
        Box::pin(async move {
            if let Err(e) = self.run_child(&child, abort).await {
                tracing::warn!(thread = %child, error = %e, "a detached sub-agent's run failed");
            }
        })
    }

    /// After a run of `thread`: when it is a detached child whose session ended, its result is
    /// queued for its parent (once), and the parent's next turn starts unless a run owns the
    /// parent (that run takes the result up).
    pub(in crate::engine) async fn deliver_if_detached(
        &self,
        thread: &Thread,
        outcome: &RunOutcome,
    ) -> Result<(), RuntimeError> {
        let (Some(parent), true) = (
            &thread.parent,
            thread.tags.iter().any(|t| t == DETACHED_TAG),
        ) else {
            return Ok(());
        };
        let ended = match outcome {
            RunOutcome::Done(StopReason::Stopped) | RunOutcome::Paused(_) => false,
            RunOutcome::Done(_) => true,
        };
        if !ended
            || self
                .services
                .db
                .value(&thread.id, DELIVERED_KEY)
                .await?
                .is_some()
        {
            return Ok(());
        }
        // A resumable instance whose parent hears from it explicitly: only what its tools
        // sent (`notify_parent`) goes up, and that wakes the parent.
        if self.reports_explicitly(thread).await? {
            self.mark_delivered(&thread.id).await?;
            if !self.services.db.queued(parent).await?.is_empty() {
                self.wake(parent).await;
            }
            return Ok(());
        }
        let result = self.child_result(&thread.id, parent, outcome).await?;
        let attached: String = result
            .attachments
            .iter()
            .filter_map(|a| match a {
                Attachment::Ref(r) => Some(format!(
                    "\nAttached: {} ({}, {} bytes)",
                    r.path, r.mime_type, r.size
                )),
                Attachment::New(_) => None,
            })
            .collect();
        let outcome_word = if result.is_success() {
            "finished"
        } else {
            "failed"
        };
        let named = match super::display_name(thread) {
            Some(name) if name != thread.agent => format!(" (instance \"{name}\")"),
            _ => String::new(),
        };
        let text = self
            .variables()
            .thread_redactor(parent)
            .await?
            .text(&format!(
                "The sub-agent \"{}\"{named} (thread {}) {outcome_word}:\n{}{attached}",
                thread.agent,
                thread.id,
                result.model_text()
            ));
        // One result per session of the child: an instance's later sessions have keys of
        // their own.
        let sessions = self
            .read_history(&thread.id, |history| {
                history.iter().filter(|m| opens_session(m)).count()
            })
            .await?;
        let key = match sessions {
            0 | 1 => format!("subagent-result:{}", thread.id),
            n => format!("subagent-result:{}:{n}", thread.id),
        };
        let applied = self
            .services
            .db
            .apply(
                parent,
                vec![Write::EnqueueOnce {
                    key,
                    item: QueueItem::Message {
                        role: Role::User,
                        content: text,
                    },
                }],
            )
            .await?;
        self.mark_delivered(&thread.id).await?;
        if !applied.queued.is_empty() {
            self.wake(parent).await;
        }
        Ok(())
    }

    /// Records that the child's session result was delivered (or, explicitly reporting, that
    /// nothing is owed): the parent's later runs no longer drive it.
    async fn mark_delivered(&self, child: &str) -> Result<(), RuntimeError> {
        let write = Write::SetValue {
            key: DELIVERED_KEY.to_owned(),
            value: Some(Value::Bool(true)),
        };
        self.services.db.apply(child, vec![write]).await?;
        Ok(())
    }

    /// Whether `thread` is a resumable instance started with `parentCommunication: explicit`.
    async fn reports_explicitly(&self, thread: &Thread) -> Result<bool, RuntimeError> {
        if !thread.tags.iter().any(|t| t == RESUMABLE_TAG) {
            return Ok(false);
        }
        let started = self.services.db.value(&thread.id, INSTANCE_KEY).await?;
        Ok(started
            .as_ref()
            .and_then(|v| v.get("parentCommunication"))
            .and_then(Value::as_str)
            == Some("explicit"))
    }

    /// Starts the parent's next turn for a result just queued, unless a run owns it (that run
    /// takes the result up) or it waits for a person. Boxed: it runs a thread from the end of
    /// another's run.
    fn wake<'a>(&'a self, parent: &'a str) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            let waits = matches!(
                self.services.db.thread(parent).await.map(|t| t.status),
                Ok(ThreadStatus::Paused)
            );
            if waits {
                return;
            }
            match self.run(parent).await {
                Ok(_) | Err(RuntimeError::ThreadBusy { .. }) => {}
                Err(e) => tracing::warn!(
                    thread = parent,
                    error = %e,
                    "a sub-agent's result was queued, but its parent did not run"
                ),
            }
        })
    }
}
