//! What a call carries through `input_required` rounds: the client capabilities declared per
//! request, and the answers to what the server asks.

use super::{AskFn, CallError};
use crate::ask::AskKind;
use rmcp::model::{InputRequiredResult, InputResponses};
use rmcp::service::RoleClient;

/// The request `_meta` declaring `answerable` as the client's capabilities, for a server that
/// takes them per request (2026-07-28 on): those of whoever made the call replace the
/// connection's (which say what toolhost can pass on at all).
pub(super) fn capabilities_meta(
    peer: &rmcp::Peer<RoleClient>,
    answerable: &[AskKind],
) -> Option<rmcp::model::RequestMetaObject> {
    let stateless = peer
        .peer_info()
        .is_some_and(|info| info.protocol_version.as_str() >= "2026-07-28");
    // Even none: the connection's own (declared for 2025-11-25 relays) must not stand.
    if !stateless {
        return None;
    }
    serde_json::from_value(serde_json::json!({
        "io.modelcontextprotocol/clientCapabilities": AskKind::capabilities(answerable),
    }))
    .ok()
}

/// The answers to what an `input_required` result asks, each put to `ask` under its key; the
/// first that finds no answer fails the call, saying what the server asked.
pub(super) async fn answers(
    asked: &InputRequiredResult,
    ask: Option<&AskFn>,
) -> Result<InputResponses, CallError> {
    let mut answers = InputResponses::new();
    for (key, request) in asked.input_requests.iter().flatten() {
        let request = serde_json::to_value(request).unwrap_or_default();
        let method = request["method"].as_str().unwrap_or_default();
        let kind = match method {
            "elicitation/create" => AskKind::Elicit,
            "sampling/createMessage" => AskKind::Sample,
            "roots/list" => AskKind::Roots,
            _ => {
                return Err(CallError::Failed(format!(
                    "the server asked \"{key}\" with {method:?}, which is no request an MCP client answers"
                )))
            }
        };
        let answered = match ask {
            Some(ask) => ask(kind, key.clone(), request["params"].clone()).await,
            None => Err("nobody can answer it here".to_owned()),
        };
        let answer = answered.map_err(|why| {
            CallError::Failed(format!(
                "the server asked for input before it answers ({method}, \"{key}\"), which was not given: {why}"
            ))
        })?;
        answers.insert(key.clone(), answer);
    }
    Ok(answers)
}
