//! A running tool asking whoever made its call: the person (MCP elicitation, a form) or the
//! model on their side (MCP sampling).
//!
//! Whoever serves a call registers an [`Answerer`] for that call while it runs
//! ([`Runtime::answer_asks`]: the MCP handler does); a tool asks through [`ThreadState::elicit`],
//! [`ThreadState::sample`] and [`ThreadState::roots`] (`state.elicit`, `state.sample` and
//! `state.roots` in a tool file). Without an answerer (a call a model made, a sub-prompt's call
//! on the served thread) the tool is told so in one sentence and may go on without. What an MCP
//! server asks within a call of its imported tool goes the same way ([`ThreadState::relay`]),
//! and the server is told beforehand what can be answered ([`Answerer::answers`]).
//!
//! What is asked is redacted of the thread's secrets before it leaves. Neither the question nor
//! the answer is stored: the tool's result, which is, says what came of them; a call cut short
//! by a crash while it waits is like any call cut short.

use super::state_error::StateError;
use super::{Runtime, ThreadState};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
pub use toolhost_mcp_client::ask::{Answering, AskKind};

/// Who answers what the tools of a thread ask while they run.
pub trait Answerer: Send + Sync {
    /// Puts `params` (of the protocol request `kind` names) to whoever made the call; `key`
    /// names the question when the tool named it (a protocol that carries answers in a retry
    /// matches them by key).
    fn ask(&self, kind: AskKind, key: Option<String>, params: Value) -> Answering;

    /// Whether questions of `kind` can be answered at all (what the caller declared), so that
    /// what toolhost calls in turn may be told what it may ask.
    fn answers(&self, kind: AskKind) -> bool {
        let _ = kind;
        true
    }
}

/// A served call: its thread and its id.
type CallKey = (String, String);

/// The answerers of the calls served now.
#[derive(Clone, Default)]
pub(crate) struct Answerers(Arc<Mutex<HashMap<CallKey, Arc<dyn Answerer>>>>);

impl Answerers {
    fn of(&self, thread_id: &str, call_id: &str) -> Option<Arc<dyn Answerer>> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(thread_id.to_owned(), call_id.to_owned()))
            .cloned()
    }
}

/// Keeps an answerer registered; dropping it takes it away.
pub struct AnswererGuard {
    answerers: Answerers,
    key: CallKey,
    answerer: Arc<dyn Answerer>,
}

impl Drop for AnswererGuard {
    fn drop(&mut self) {
        let mut answerers = self.answerers.0.lock().unwrap_or_else(|e| e.into_inner());
        // Only its own: the same call served again meanwhile keeps its new answerer.
        if answerers
            .get(&self.key)
            .is_some_and(|a| Arc::ptr_eq(a, &self.answerer))
        {
            answerers.remove(&self.key);
        }
    }
}

impl Runtime {
    /// Has `answerer` answer what the call `call_id` of `thread_id` asks until the guard is
    /// dropped. Only that call's own tool may ask: calls a sub-prompt's model makes on the same
    /// thread find no answerer (their questions are not the served call's).
    pub fn answer_asks(
        &self,
        thread_id: &str,
        call_id: &str,
        answerer: Arc<dyn Answerer>,
    ) -> AnswererGuard {
        let key = (thread_id.to_owned(), call_id.to_owned());
        self.process
            .answerers
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.clone(), answerer.clone());
        AnswererGuard {
            answerers: self.process.answerers.clone(),
            key,
            answerer,
        }
    }
}

impl ThreadState {
    /// Asks the person who made the call to fill in a form: `message` and `requested_schema`
    /// (MCP's flat object of strings, numbers, booleans and enums). The answer is
    /// `{action: "accept" | "decline" | "cancel", content?}`.
    pub async fn elicit(
        &self,
        message: &str,
        requested_schema: Value,
        key: Option<String>,
    ) -> Result<Value, StateError> {
        let params = serde_json::json!({
            "mode": "form",
            "message": self.redactor().text(message),
            "requestedSchema": self.redactor().json(requested_schema),
        });
        self.ask(AskKind::Elicit, key, params).await
    }

    /// Asks the model on the caller's side for a completion (`params` as MCP's
    /// `sampling/createMessage` takes them); the answer is `{role, content, model, stopReason}`.
    pub async fn sample(&self, params: Value, key: Option<String>) -> Result<Value, StateError> {
        let params = self.redactor().json(params);
        self.ask(AskKind::Sample, key, params).await
    }

    /// Asks the caller for its roots; the answer is `{roots: [{uri, name?}]}`.
    pub async fn roots(&self, key: Option<String>) -> Result<Value, StateError> {
        self.ask(AskKind::Roots, key, serde_json::json!({})).await
    }

    /// Whether whoever made this call can answer questions of `kind`.
    pub(crate) fn can_ask(&self, kind: AskKind) -> bool {
        self.answerers
            .as_ref()
            .and_then(|a| a.of(self.thread_id(), self.call_id()))
            .is_some_and(|answerer| answerer.answers(kind))
    }

    /// Passes on a request an MCP server made within a call of its tool (`params` as the
    /// protocol request `kind` carries them, under the server's `key`), redacted of the thread's
    /// secrets, to whoever made this call.
    pub(crate) async fn relay(
        &self,
        kind: AskKind,
        key: String,
        params: Value,
    ) -> Result<Value, StateError> {
        let params = self.redactor().json(params);
        self.ask(kind, Some(key), params).await
    }

    async fn ask(
        &self,
        kind: AskKind,
        key: Option<String>,
        params: Value,
    ) -> Result<Value, StateError> {
        let answerer = self
            .answerers
            .as_ref()
            .and_then(|a| a.of(self.thread_id(), self.call_id()));
        let Some(answerer) = answerer else {
            return Err(StateError::NobodyAnswers(kind));
        };
        let answer = answerer.ask(kind, key, params);
        tokio::select! {
            answer = answer => answer.map_err(StateError::NotAnswered),
            () = self.abort_signal().aborted() => Err(StateError::StoppedWhileAsking),
        }
    }
}
