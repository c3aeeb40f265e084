//! Asking the client's user, through MCP elicitation, for what a call waits for.

use rmcp::model::{ElicitRequestParams, ElicitationAction};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{json, Value};
use toolhost_runtime::engine::{VariableToGive, Verdict};
use toolhost_runtime::variables::VariableValue;

/// Whether the client declared it can answer elicitations.
fn can_elicit(context: &RequestContext<RoleServer>) -> bool {
    context
        .peer
        .peer_info()
        .is_some_and(|info| info.capabilities.elicitation.is_some())
}

/// Asks the client's user for the text variables a call waits for (one form, a field each);
/// `None` when the client cannot ask, the user declined or cancelled, or a value is missing.
/// Never used for a secret: what a form holds is seen by the client in clear.
pub(super) async fn ask_variables(
    context: &RequestContext<RoleServer>,
    tool: &str,
    wanted: &[VariableToGive],
) -> Option<Vec<VariableValue>> {
    if !can_elicit(context) || wanted.is_empty() || wanted.iter().any(|v| v.secret) {
        return None;
    }
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
    let params: ElicitRequestParams = serde_json::from_value(json!({
        "mode": "form",
        "message": format!("The call of \"{tool}\" needs values of {}.", names.join(", ")),
        "requestedSchema": {"type": "object", "properties": properties, "required": names},
    }))
    .ok()?;
    let answer = context.peer.create_elicitation(params).await.ok()?;
    if answer.action != ElicitationAction::Accept {
        return None;
    }
    let content = answer.content.unwrap_or_default();
    wanted
        .iter()
        .map(|v| {
            let value = content.get(&v.name)?.as_str()?;
            Some(VariableValue::text(v.name.clone(), value))
        })
        .collect()
}

/// Asks the client's user to approve a call (form elicitation, for a client that declared it
/// can elicit, under a protocol that lets a server ask); `None` when it cannot ask, or the user
/// cancelled (the call then waits for a decision made elsewhere).
pub(super) async fn ask_approval(
    context: &RequestContext<RoleServer>,
    request: &toolhost_store::ApprovalRequest,
) -> Option<Verdict> {
    if !can_elicit(context) {
        return None;
    }
    let why = request
        .reason
        .as_deref()
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    let params: ElicitRequestParams = serde_json::from_value(json!({
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
    }))
    .ok()?;
    let answer = context.peer.create_elicitation(params).await.ok()?;
    let by = "an MCP client's user";
    match answer.action {
        ElicitationAction::Accept => {
            let content = answer.content.unwrap_or_default();
            if content.get("approve").and_then(Value::as_bool) == Some(true) {
                Some(Verdict::approve(by))
            } else {
                let message = content
                    .get("message")
                    .and_then(Value::as_str)
                    .filter(|m| !m.trim().is_empty())
                    .map(str::to_owned);
                Some(Verdict::deny(by, message))
            }
        }
        ElicitationAction::Decline => Some(Verdict::deny(by, None)),
        _ => None,
    }
}

/// The web page of `thread_id` on the server this request came to, when it came over HTTP: where
/// a person gives the thread's secrets.
pub(super) fn thread_page(context: &RequestContext<RoleServer>, thread_id: &str) -> Option<String> {
    let parts = context.extensions.get::<axum::http::request::Parts>()?;
    let host = parts.headers.get("host")?.to_str().ok()?;
    let scheme = parts
        .headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .filter(|s| matches!(*s, "http" | "https"))
        .unwrap_or("http");
    Some(format!("{scheme}://{host}/#/t/{thread_id}"))
}

/// Sends the client's user to `page` to give the secrets `names` (URL-mode elicitation, for a
/// client that declared it can open one); true when the user agreed to go. The values never
/// pass through the client.
pub(super) async fn send_to_page(
    context: &RequestContext<RoleServer>,
    tool: &str,
    page: &str,
    request_id: &str,
    names: &[String],
) -> bool {
    let can_open = context.peer.peer_info().is_some_and(|info| {
        info.capabilities
            .elicitation
            .as_ref()
            .is_some_and(|e| e.url.is_some())
    });
    if !can_open {
        return false;
    }
    let Ok(params) = serde_json::from_value::<ElicitRequestParams>(json!({
        "mode": "url",
        "message": format!(
            "The call of \"{tool}\" needs {}. Give the values on toolhost's page of the thread (sign in with your token): they never pass through this client.",
            names.join(", ")
        ),
        "url": page,
        "elicitationId": request_id,
    })) else {
        return false;
    };
    matches!(
        context.peer.create_elicitation(params).await,
        Ok(answer) if answer.action == ElicitationAction::Accept
    )
}
