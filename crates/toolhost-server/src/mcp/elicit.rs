//! Asking the client's user, through MCP elicitation, for what a call waits for: the requests
//! (a form for an approval or text variables, a URL for secrets) and what their answers mean.
//! Under 2025-11-25 the server sends them ([`ask`]); under 2026-07-28 they travel in an
//! `input_required` result and come back with the call's retry (see `super::rounds`).

use rmcp::model::ElicitRequestParams;
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{json, Value};
use toolhost_runtime::engine::{VariableToGive, Verdict};
use toolhost_runtime::variables::VariableValue;
use toolhost_store::ApprovalRequest;

/// Who a decision taken through a client is recorded as.
const DECIDED_BY: &str = "an MCP client's user";

/// The form asking to approve a call: `approve`, and a `message` for the model when denying.
pub(super) fn approval_form(request: &ApprovalRequest) -> Value {
    let why = request
        .reason
        .as_deref()
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    json!({
        "mode": "form",
        "message": format!(
            "Approve the call of \"{}\" with {}?{why}",
            request.tool, request.arguments
        ),
        "requestedSchema": {
            "type": "object",
            "properties": {
                "approve": {"type": "boolean", "title": "Approve", "description": "Run the call"},
                "message": {"type": "string", "title": "Message", "description": "Why not, for the model (when denying)"}
            },
            "required": ["approve"]
        }
    })
}

/// The form asking for text variables, a field each. Never for a secret: what a form holds is
/// seen by the client in clear.
pub(super) fn variables_form(tool: &str, wanted: &[VariableToGive]) -> Value {
    let properties: serde_json::Map<String, Value> = wanted
        .iter()
        .map(|v| {
            (
                v.name.clone(),
                json!({"type": "string", "title": v.name, "description": v.description}),
            )
        })
        .collect();
    let names: Vec<&str> = wanted.iter().map(|v| v.name.as_str()).collect();
    json!({
        "mode": "form",
        "message": format!("The call of \"{tool}\" needs values of {}.", names.join(", ")),
        "requestedSchema": {"type": "object", "properties": properties, "required": names},
    })
}

/// The URL-mode request sending the user to `page` to give the secrets `names` there.
pub(super) fn secrets_url(tool: &str, page: &str, request_id: &str, names: &[String]) -> Value {
    json!({
        "mode": "url",
        "message": format!(
            "The call of \"{tool}\" needs {}. Give the values on toolhost's page of the thread (sign in with your token): they never pass through this client.",
            names.join(", ")
        ),
        "url": page,
        "elicitationId": request_id,
    })
}

/// An answer's action: `accept`, `decline` or `cancel`.
fn action(answer: &Value) -> &str {
    answer
        .get("action")
        .and_then(Value::as_str)
        .unwrap_or("cancel")
}

/// The decision an answer to [`approval_form`] is: approve or deny (a decline denies); `None`
/// when the user cancelled, and the call goes on waiting for a decision made elsewhere.
pub(super) fn verdict_of(answer: &Value) -> Option<Verdict> {
    let content = answer.get("content").cloned().unwrap_or(Value::Null);
    match action(answer) {
        "accept" if content.get("approve").and_then(Value::as_bool) == Some(true) => {
            Some(Verdict::approve(DECIDED_BY))
        }
        "accept" => {
            let message = content
                .get("message")
                .and_then(Value::as_str)
                .filter(|m| !m.trim().is_empty())
                .map(str::to_owned);
            Some(Verdict::deny(DECIDED_BY, message))
        }
        "decline" => Some(Verdict::deny(DECIDED_BY, None)),
        _ => None,
    }
}

/// The values an answer to [`variables_form`] gives; `None` unless it was accepted with every
/// one of them.
pub(super) fn values_of(answer: &Value, names: &[String]) -> Option<Vec<VariableValue>> {
    if action(answer) != "accept" {
        return None;
    }
    let content = answer.get("content")?;
    names
        .iter()
        .map(|name| {
            Some(VariableValue::text(
                name.clone(),
                content.get(name)?.as_str()?,
            ))
        })
        .collect()
}

/// Whether the user agreed to go to the page (an answer to [`secrets_url`]).
pub(super) fn went_to_page(answer: &Value) -> bool {
    action(answer) == "accept"
}

/// Under 2025-11-25: sends `request` to the client's user and returns the answer as JSON;
/// `None` when the client did not declare it can answer this kind (form or URL) or the request
/// failed.
pub(super) async fn ask(context: &RequestContext<RoleServer>, request: Value) -> Option<Value> {
    let url = request.get("mode").and_then(Value::as_str) == Some("url");
    let can = context.peer.peer_info().is_some_and(|info| {
        info.capabilities
            .elicitation
            .as_ref()
            .is_some_and(|e| !url || e.url.is_some())
    });
    if !can {
        return None;
    }
    let params: ElicitRequestParams = serde_json::from_value(request).ok()?;
    let answer = context.peer.create_elicitation(params).await.ok()?;
    serde_json::to_value(answer).ok()
}

/// The web page of `thread_id` on the server this request came to, when it came over HTTP: where
/// a person gives the thread's secrets.
pub(super) fn thread_page(context: &RequestContext<RoleServer>, thread_id: &str) -> Option<String> {
    origin(context).map(|origin| format!("{origin}/#/t/{thread_id}"))
}

/// The origin (`scheme://host`) an HTTP request was sent to, as its client named it.
fn origin(context: &RequestContext<RoleServer>) -> Option<String> {
    let parts = context.extensions.get::<axum::http::request::Parts>()?;
    crate::cors::request_origin(&parts.headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_read_as_the_decisions_and_values_they_are() {
        let approve = json!({"action": "accept", "content": {"approve": true}});
        assert!(verdict_of(&approve).unwrap().approved);
        let deny = json!({"action": "accept", "content": {"approve": false, "message": "no"}});
        let denied = verdict_of(&deny).unwrap();
        assert!(!denied.approved);
        assert_eq!(denied.message.as_deref(), Some("no"));
        assert!(!verdict_of(&json!({"action": "decline"})).unwrap().approved);
        assert!(verdict_of(&json!({"action": "cancel"})).is_none());

        let names = ["REGION".to_owned()];
        let given = json!({"action": "accept", "content": {"REGION": "north"}});
        assert_eq!(values_of(&given, &names).unwrap()[0].value, "north");
        assert!(values_of(&json!({"action": "accept", "content": {}}), &names).is_none());
        assert!(values_of(&json!({"action": "decline"}), &names).is_none());
    }
}
