//! What a tool asks while a served call runs (`state.elicit`, `state.sample`, `state.roots`;
//! see [`toolhost_runtime::engine::Answerer`]), put to the MCP client that made the call, each
//! only when the client declared it can answer it.
//!
//! - Under 2025-11-25 the server sends the client the request (`elicitation/create`,
//!   `sampling/createMessage`, `roots/list`) and the tool gets the answer ([`Way::Requests`]).
//! - Under 2026-07-28 a server may not send requests: the tool gets the answers the request
//!   carries, matched by the question's key ([`Way::Retry`], see `question_rounds`). A question
//!   without one is noted, the tool is told (with an error it should not catch: it cannot go
//!   on), and the call is answered `input_required` with every question noted; the client's
//!   retry runs the call again from its start with the answers. So a tool asks the same
//!   questions in the same order each round, and what it does before a question (or after one
//!   it catches) must be safe to repeat: the round's result is thrown away. A tool that fails
//!   for want of what the client did not declare it answers (the refusal left uncaught) makes
//!   the call's answer the protocol's -32021 error naming the capability it needed.

use super::question_rounds::Round;
#[allow(deprecated)] // Sampling is deprecated by SEP-2577, still in 2026-07-28.
use rmcp::model::{
    ClientCapabilities, CreateMessageRequest, CreateMessageRequestParams, ElicitRequest,
    ElicitRequestParams, GetExtensions, ListRootsRequest, RequestId, ServerRequest,
};
use rmcp::service::{OriginatingRequestId, Peer, PeerRequestOptions, RequestContext, RoleServer};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;
use toolhost_runtime::engine::{Answerer, Answering, AskKind};

/// How the client of a call answers.
pub(super) enum Way {
    /// By answering the requests the server sends it (2025-11-25).
    Requests,
    /// In the retry of an `input_required` answer (2026-07-28).
    Retry(Box<Round>),
    /// Not at all, for this reason.
    Unanswerable(&'static str),
}

impl Way {
    /// How the client of the request `context` answers: in a retry from 2026-07-28 on (the
    /// `round` the request is), else by requests.
    pub(super) fn of(context: &RequestContext<RoleServer>, round: Option<Round>) -> Way {
        match round {
            Some(round) if super::is_stateless(context) => Way::Retry(Box::new(round)),
            _ => Way::Requests,
        }
    }
}

/// The MCP client of one call.
pub(super) struct ClientAnswerer {
    peer: Peer<RoleServer>,
    /// The call's request, whose stream carries what the tool asks.
    origin: RequestId,
    way: std::sync::Arc<Way>,
    /// How many questions of each kind the tool asked without naming them: the default keys.
    counts: Mutex<HashMap<&'static str, u32>>,
}

impl ClientAnswerer {
    pub(super) fn new(context: &RequestContext<RoleServer>, way: std::sync::Arc<Way>) -> Self {
        Self {
            peer: context.peer.clone(),
            origin: context.id.clone(),
            way,
            counts: Mutex::default(),
        }
    }

    /// `key`, or the next default one for `kind` (`elicit-1`, `elicit-2`, ...).
    fn key(&self, kind: AskKind, key: Option<String>) -> String {
        key.unwrap_or_else(|| {
            let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
            let n = counts.entry(kind.short()).or_default();
            *n += 1;
            format!("{}-{n}", kind.short())
        })
    }
}

/// Whether `capabilities` declare that the client answers `kind`.
#[allow(deprecated)] // Sampling and roots are deprecated by SEP-2577, still in 2026-07-28.
fn can_answer(capabilities: Option<&ClientCapabilities>, kind: AskKind) -> bool {
    capabilities.is_some_and(|c| match kind {
        AskKind::Elicit => c.elicitation.is_some(),
        AskKind::Sample => c.sampling.is_some(),
        AskKind::Roots => c.roots.is_some(),
    })
}

/// How the refusal of a question the client did not declare it answers ends: a tool's error
/// that carries it failed for want of that capability.
pub(super) const UNDECLARED: &str = "(it did not declare the capability)";

fn cannot(kind: AskKind) -> String {
    format!(
        "the MCP client that made this call cannot answer {} {UNDECLARED}",
        kind.method()
    )
}

/// The protocol request asking `params` of kind `kind`, or why the tool's question is not one.
#[allow(deprecated)] // Sampling and roots are deprecated by SEP-2577, still in 2026-07-28.
fn typed(kind: AskKind, params: Value) -> Result<ServerRequest, String> {
    Ok(match kind {
        AskKind::Elicit => {
            let params: ElicitRequestParams = serde_json::from_value(params)
                .map_err(|e| format!("the form is not one MCP elicitation takes: {e}"))?;
            ServerRequest::ElicitRequest(ElicitRequest::new(params))
        }
        AskKind::Sample => {
            let params: CreateMessageRequestParams = serde_json::from_value(params)
                .map_err(|e| format!("the request is not one MCP sampling takes: {e}"))?;
            ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params))
        }
        AskKind::Roots => ServerRequest::ListRootsRequest(ListRootsRequest {
            method: Default::default(),
            extensions: Default::default(),
        }),
    })
}

/// Whether `answer` is an answer to a request of `kind`.
fn fits(kind: AskKind, answer: &Value) -> bool {
    match kind {
        AskKind::Elicit => matches!(
            answer.get("action").and_then(Value::as_str),
            Some("accept" | "decline" | "cancel")
        ),
        AskKind::Sample => answer.get("role").is_some() && answer.get("content").is_some(),
        AskKind::Roots => answer.get("roots").is_some_and(Value::is_array),
    }
}

impl Answerer for ClientAnswerer {
    fn answers(&self, kind: AskKind) -> bool {
        match &*self.way {
            Way::Unanswerable(_) => false,
            Way::Retry(round) => can_answer(round.capabilities.as_ref(), kind),
            Way::Requests => {
                let capabilities = self.peer.peer_info().map(|info| info.capabilities.clone());
                can_answer(capabilities.as_ref(), kind)
            }
        }
    }

    fn ask(&self, kind: AskKind, key: Option<String>, params: Value) -> Answering {
        let key = self.key(kind, key);
        let way = self.way.clone();
        let peer = self.peer.clone();
        let origin = self.origin.clone();
        Box::pin(async move {
            match &*way {
                Way::Unanswerable(why) => Err((*why).to_owned()),
                Way::Retry(round) => {
                    if !can_answer(round.capabilities.as_ref(), kind) {
                        round.note_missing(kind);
                        return Err(cannot(kind));
                    }
                    // A question the protocol would not carry fails the tool now, as under
                    // 2025-11-25, not the call's answer later.
                    typed(kind, params.clone())?;
                    match round.answer(kind, &key, &params, |a| fits(kind, a))? {
                        Some(answer) => Ok(answer),
                        None => Err(format!("input required: \"{key}\" is asked of the MCP client, whose retry runs this call again with the answer")),
                    }
                }
                Way::Requests => {
                    let capabilities = peer.peer_info().map(|info| info.capabilities.clone());
                    if !can_answer(capabilities.as_ref(), kind) {
                        return Err(cannot(kind));
                    }
                    let mut request = typed(kind, params)?;
                    // Sent on the stream of the call that asks (the tool runs in a task of its
                    // own, where rmcp cannot tell which request it serves).
                    request
                        .extensions_mut()
                        .insert(OriginatingRequestId(origin));
                    // A person may take a while, but not forever: the call holds its session.
                    let options = PeerRequestOptions::with_timeout(super::SECRETS_WAIT);
                    let failed = |e: rmcp::service::ServiceError| {
                        format!("the MCP client did not answer {}: {e}", kind.method())
                    };
                    let handle = peer
                        .send_request_with_option(request, options)
                        .await
                        .map_err(failed)?;
                    let answer = handle.await_response().await.map_err(failed)?;
                    serde_json::to_value(answer).map_err(|e| e.to_string())
                }
            }
        })
    }
}
