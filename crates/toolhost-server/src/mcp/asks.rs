//! What a tool asks while a served call runs (`state.elicit`, `state.sample`, `state.roots`;
//! see [`toolhost_runtime::engine::Answerer`]), put to the MCP client that made the call, each
//! only when the client declared it can answer it.
//!
//! - Under 2025-11-25 the server sends the client the request (`elicitation/create`,
//!   `sampling/createMessage`, `roots/list`) and the tool gets the answer ([`Way::Requests`]).
//! - Under 2026-07-28 a server may not send requests: the tool gets the answers the request
//!   carries (its `inputResponses`, and those of earlier rounds in its sealed `requestState`),
//!   matched by the question's key ([`Way::Retry`]). A question without one is noted, the tool
//!   is told (it cannot go on), and the call is answered `input_required` with every question
//!   noted; the client's retry runs the call again from its start with the answers. So a tool
//!   asks the same questions in the same order each round, and what it does before a question
//!   must be safe to repeat.

use super::McpTools;
#[allow(deprecated)] // Sampling is deprecated by SEP-2577, still in 2026-07-28.
use rmcp::model::{
    CallToolResponse, ClientCapabilities, CreateMessageRequestParams, ElicitRequestParams,
    InputRequiredResult,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::ErrorData as McpError;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use toolhost_runtime::engine::{Answerer, Answering, AskKind};

/// How the client of a call answers.
pub(super) enum Way {
    /// By answering the requests the server sends it (2025-11-25).
    Requests,
    /// In the retry of an `input_required` answer (2026-07-28).
    Retry(Box<Retry>),
    /// Not at all, for this reason.
    Unanswerable(&'static str),
}

impl Way {
    /// How the client of the request `context` answers: in a retry from 2026-07-28 on (with
    /// `given`, the answers the request carries), else by requests.
    pub(super) fn of(context: &RequestContext<RoleServer>, given: BTreeMap<String, Value>) -> Way {
        let modern = context
            .meta
            .protocol_version()
            .is_some_and(|v| v.as_str() >= "2026-07-28");
        if modern {
            Way::Retry(Box::new(Retry::new(
                context.meta.client_capabilities(),
                given,
            )))
        } else {
            Way::Requests
        }
    }
}

impl McpTools {
    /// The `input_required` answer of a call whose tool asked what the request did not answer
    /// (2026-07-28): every such question, and a sealed state carrying the answers it took.
    pub(super) fn asked_again(
        &self,
        way: &Way,
        tool: &str,
        arguments: &Value,
    ) -> Result<Option<CallToolResponse>, McpError> {
        let Way::Retry(retry) = way else {
            return Ok(None);
        };
        let (asked, taken) = retry.outcome();
        if asked.is_empty() {
            return Ok(None);
        }
        let state = self.state_key.seal(tool, arguments, &taken);
        let result: InputRequiredResult = serde_json::from_value(json!({
            "resultType": "input_required",
            "inputRequests": asked,
            "requestState": state,
        }))
        .map_err(|e| McpError::internal_error(format!("input_required: {e}"), None))?;
        Ok(Some(CallToolResponse::InputRequired(result)))
    }

    /// The answers a 2026-07-28 `tools/call` carries: those of its sealed request state (refused
    /// when this server did not seal it for this call), then its `inputResponses`, each of which
    /// must be an object (the answer to the request of its key).
    pub(super) fn answers_given(
        &self,
        tool: &str,
        arguments: &Value,
        state: Option<&str>,
        responses: Option<rmcp::model::InputResponses>,
    ) -> Result<BTreeMap<String, Value>, McpError> {
        let mut given = match state {
            Some(state) => self
                .state_key
                .open(state, tool, arguments)
                .map_err(|why| McpError::invalid_params(why, None))?,
            None => BTreeMap::new(),
        };
        for (key, answer) in responses.unwrap_or_default() {
            if !answer.is_object() {
                return Err(McpError::invalid_params(
                    format!("inputResponses[\"{key}\"] must be an object: the answer to the request of that key"),
                    None,
                ));
            }
            given.insert(key, answer);
        }
        Ok(given)
    }
}

/// The answers a 2026-07-28 call carries, and the questions it had no answer for.
#[derive(Default)]
pub(super) struct Retry {
    /// What the client's request declared it can answer.
    capabilities: Option<ClientCapabilities>,
    /// Answers by key: the sealed state's, then the request's `inputResponses`.
    given: BTreeMap<String, Value>,
    /// The answers the tool took, by key: what the next round's state carries.
    taken: Mutex<BTreeMap<String, Value>>,
    /// The questions without an answer, by key: `{method, params}`.
    asked: Mutex<BTreeMap<String, Value>>,
}

impl Retry {
    /// A round of a call whose request declared `capabilities` and carries `given`.
    pub(super) fn new(
        capabilities: Option<ClientCapabilities>,
        given: BTreeMap<String, Value>,
    ) -> Self {
        Self {
            capabilities,
            given,
            ..Self::default()
        }
    }

    /// The questions the tool had no answer for, and the answers it took.
    pub(super) fn outcome(&self) -> (BTreeMap<String, Value>, BTreeMap<String, Value>) {
        let asked = std::mem::take(&mut *self.asked.lock().unwrap_or_else(|e| e.into_inner()));
        let taken = std::mem::take(&mut *self.taken.lock().unwrap_or_else(|e| e.into_inner()));
        (asked, taken)
    }
}

/// The MCP client of one call.
pub(super) struct ClientAnswerer {
    peer: Peer<RoleServer>,
    way: std::sync::Arc<Way>,
    /// How many questions of each kind the tool asked without naming them: the default keys.
    counts: Mutex<HashMap<&'static str, u32>>,
}

impl ClientAnswerer {
    pub(super) fn new(peer: Peer<RoleServer>, way: std::sync::Arc<Way>) -> Self {
        Self {
            peer,
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

fn cannot(kind: AskKind) -> String {
    format!(
        "the MCP client that made this call cannot answer {} (it did not declare the capability)",
        kind.method()
    )
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
    fn ask(&self, kind: AskKind, key: Option<String>, params: Value) -> Answering {
        let key = self.key(kind, key);
        let way = self.way.clone();
        let peer = self.peer.clone();
        Box::pin(async move {
            match &*way {
                Way::Unanswerable(why) => Err((*why).to_owned()),
                Way::Retry(retry) => {
                    if !can_answer(retry.capabilities.as_ref(), kind) {
                        return Err(cannot(kind));
                    }
                    if let Some(answer) = retry.given.get(&key).filter(|a| fits(kind, a)) {
                        retry
                            .taken
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(key, answer.clone());
                        return Ok(answer.clone());
                    }
                    retry
                        .asked
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(
                            key.clone(),
                            json!({"method": kind.method(), "params": params}),
                        );
                    Err(format!("input required: \"{key}\" is asked of the MCP client, whose retry runs this call again with the answer"))
                }
                Way::Requests => {
                    let capabilities = peer.peer_info().map(|info| info.capabilities.clone());
                    if !can_answer(capabilities.as_ref(), kind) {
                        return Err(cannot(kind));
                    }
                    let failed = |e: rmcp::service::ServiceError| {
                        format!("the MCP client did not answer {}: {e}", kind.method())
                    };
                    let answer = match kind {
                        AskKind::Elicit => {
                            let params: ElicitRequestParams = serde_json::from_value(params)
                                .map_err(|e| {
                                    format!("the form is not one MCP elicitation takes: {e}")
                                })?;
                            serde_json::to_value(
                                peer.create_elicitation(params).await.map_err(failed)?,
                            )
                        }
                        AskKind::Sample => {
                            #[allow(deprecated)]
                            let params: CreateMessageRequestParams = serde_json::from_value(params)
                                .map_err(|e| {
                                    format!("the request is not one MCP sampling takes: {e}")
                                })?;
                            #[allow(deprecated)]
                            let answer = peer.create_message(params).await.map_err(failed)?;
                            serde_json::to_value(answer)
                        }
                        AskKind::Roots => {
                            #[allow(deprecated)]
                            let answer = peer.list_roots().await.map_err(failed)?;
                            serde_json::to_value(answer)
                        }
                    };
                    answer.map_err(|e| e.to_string())
                }
            }
        })
    }
}
