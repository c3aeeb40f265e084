//! `GET /v1/mcp/servers`: the project's MCP servers as they loaded (usable or why not, the
//! tools they gave) and, for a server whose file has `oauth`, whether a grant is kept for it.

use crate::auth::{Caller, Scope};
use crate::openapi::answers::McpServerList;
use crate::problem::Problem;
use crate::state::AppState;
use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};
use toolhost_mcp_client::server_def::Endpoint;
use toolhost_runtime::mcp::imported_name;

#[utoipa::path(
    get, path = "/v1/mcp/servers", operation_id = "listMcpServers", tag = "mcp",
    summary = "The project's MCP servers, their tools and their OAuth state",
    description = "Each server of `agents/mcp/` as the project loaded: whether it is usable (else why not) and the tools it gave, by the names the project offers them under; for a server whose file has `oauth`, whether a grant is kept for its URL (from which authorization server, with which scope, until when). Start a login with `POST /v1/mcp/servers/{name}/login`.",
    responses((status = 200, description = "The servers, by name.", body = McpServerList)),
    security(("bearer" = ["read"])),
)]
pub(super) async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Value>, Problem> {
    caller.require(Scope::Read)?;
    let runtime = state.runtime();
    let servers = tokio::task::spawn_blocking(move || {
        runtime
            .mcp_servers()
            .iter()
            .map(|s| {
                let (usable, problem, tools) = match &s.listed {
                    Ok(tools) => (
                        true,
                        None,
                        tools
                            .iter()
                            .map(|t| imported_name(&s.def.name, &t.name))
                            .collect(),
                    ),
                    Err(why) => (false, Some(why.to_string()), Vec::new()),
                };
                json!({
                    "name": s.def.name,
                    "usable": usable,
                    "problem": problem,
                    "tools": tools,
                    "oauth": oauth_state(&runtime, &s.def),
                })
            })
            .collect::<Vec<Value>>()
    })
    .await
    .map_err(|e| Problem::internal(format!("the servers could not be listed: {e}")))?;
    Ok(Json(json!({ "servers": servers })))
}

/// The OAuth state of a server whose file has `oauth`; null for the others.
fn oauth_state(
    runtime: &toolhost_runtime::engine::Runtime,
    def: &toolhost_runtime::mcp::McpServerDef,
) -> Value {
    let (Some(oauth), Endpoint::Url { url, .. }) = (&def.oauth, &def.endpoint) else {
        return Value::Null;
    };
    let grant = runtime
        .mcp_login_parts(&def.name)
        .and_then(|(_, _, vault)| vault.load(&def.name).ok().flatten())
        .map(|kept| kept.grant)
        .filter(|g| g.is_for(url));
    let kind = serde_json::to_value(oauth.grant).unwrap_or(Value::Null);
    match grant {
        Some(g) => json!({"grant": kind, "authorized": true, "issuer": g.issuer,
                          "scope": g.scope, "expires_at": g.expires_at,
                          "renewable": g.refresh_token.is_some()}),
        None => json!({"grant": kind, "authorized": false}),
    }
}
