//! What decides an approval request: a person's or a handler's [`Verdict`], and the
//! [`ApprovalHandler`] an embedding program installs to decide at once (see `approvals`).

use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use toolhost_store::ApprovalRequest;

/// A decision, as a person or a handler gives it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Verdict {
    /// Whether the call may run.
    pub approved: bool,
    /// Whether the decision holds for the later calls of the same tool in the thread.
    pub always: bool,
    /// The text the model sees on a rejection.
    pub message: Option<String>,
    /// Why it was decided so; on a rejection without a message, the model sees it.
    pub reason: Option<String>,
    /// Replacement arguments; validated again before the call runs.
    pub edited_arguments: Option<Value>,
    /// Who or what decided.
    pub decided_by: String,
}

impl Verdict {
    /// Approves, decided by `who`.
    pub fn approve(who: impl Into<String>) -> Self {
        Self {
            approved: true,
            decided_by: who.into(),
            ..Self::default()
        }
    }

    /// Denies with `message` for the model, decided by `who`.
    pub fn deny(who: impl Into<String>, message: Option<String>) -> Self {
        Self {
            approved: false,
            message,
            decided_by: who.into(),
            ..Self::default()
        }
    }
}

/// A boxed future of a handler's decision.
pub type VerdictFuture<'a> = Pin<Box<dyn Future<Output = Option<Verdict>> + Send + 'a>>;

/// Decides approval requests at once, for a program that embeds the runtime. Answering `None`
/// leaves the request to a person: the thread pauses.
pub trait ApprovalHandler: Send + Sync {
    /// The decision on `request` of the call in `thread_id`.
    fn decide<'a>(&'a self, thread_id: &'a str, request: &'a ApprovalRequest) -> VerdictFuture<'a>;
}
