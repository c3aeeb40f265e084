//! The 2026-07-28 protocol's way to ask within a call: a `tools/call` answered `input_required`
//! with the elicitation to show, and retried by the client with the answer and the request
//! state it was given.
//!
//! The request state is a random key into what this server remembers of the waiting call (its
//! thread, its call and what was asked), so a client can neither forge one nor reach another
//! call's thread through it. What is remembered lives in this process, for [`ROUND_TTL`]; a
//! retry after a restart, or after that, is told to call again (the call itself is durable: it
//! waits on its thread, where a person can still answer it).

use rmcp::model::{CallToolResponse, InputRequiredResult};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::ErrorData as McpError;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a waiting call is remembered for its retry.
pub const ROUND_TTL: Duration = Duration::from_secs(30 * 60);
/// The key of toolhost's one input request in `inputRequests` and `inputResponses`.
pub(super) const INPUT_KEY: &str = "toolhost";

/// What a call asked its client for.
#[derive(Debug, Clone)]
pub(super) enum Asked {
    /// A decision on the approval of call `call_id`.
    Approval { call_id: String },
    /// The text variables `names`.
    Variables { names: Vec<String> },
    /// Secrets, given on the thread's page for variable request `request_id`.
    Secrets { request_id: String },
}

/// A call waiting for its client's retry.
#[derive(Debug, Clone)]
pub(super) struct Round {
    pub thread_id: String,
    pub call_id: String,
    pub tool: String,
    pub asked: Asked,
    made: Instant,
}

/// The calls waiting for a retry, shared by every session of one server.
#[derive(Debug, Default)]
pub(super) struct Rounds(Mutex<HashMap<String, Round>>);

impl Rounds {
    /// Remembers a waiting call; returns the request state the client echoes.
    fn remember(&self, thread_id: &str, call_id: &str, tool: &str, asked: Asked) -> String {
        let state = toolhost_store::random_id();
        let mut rounds = self.0.lock().unwrap_or_else(|e| e.into_inner());
        rounds.retain(|_, r| r.made.elapsed() < ROUND_TTL);
        rounds.insert(
            state.clone(),
            Round {
                thread_id: thread_id.to_owned(),
                call_id: call_id.to_owned(),
                tool: tool.to_owned(),
                asked,
                made: Instant::now(),
            },
        );
        state
    }

    /// The waiting call a retry's request state names, taken (a state answers once).
    pub(super) fn take(&self, state: &str) -> Option<Round> {
        let mut rounds = self.0.lock().unwrap_or_else(|e| e.into_inner());
        rounds
            .remove(state)
            .filter(|r| r.made.elapsed() < ROUND_TTL)
    }

    /// The `input_required` answer carrying `request` (an elicitation's params) for a call
    /// that waits for `asked`.
    pub(super) fn input_required(
        &self,
        round: (&str, &str, &str),
        asked: Asked,
        request: Value,
    ) -> Result<CallToolResponse, McpError> {
        let (thread_id, call_id, tool) = round;
        let state = self.remember(thread_id, call_id, tool, asked);
        let result: InputRequiredResult = serde_json::from_value(json!({
            "resultType": "input_required",
            "inputRequests": {INPUT_KEY: {"method": "elicitation/create", "params": request}},
            "requestState": state,
        }))
        .map_err(|e| McpError::internal_error(format!("input_required: {e}"), None))?;
        Ok(CallToolResponse::InputRequired(result))
    }
}

/// Whether this request's client asks within a call (2026-07-28 and later, with elicitation
/// among the capabilities its request declares).
pub(super) fn asks_within_call(context: &RequestContext<RoleServer>) -> bool {
    super::is_stateless(context)
        && context
            .meta
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some())
}
