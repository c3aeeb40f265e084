//! A person accepts the definition an MCP server now gives a tool the project pinned before (see
//! `toolhost_runtime::mcp::pins`): its calls go through again, in every thread.

use super::reachable_thread;
use crate::auth::{Caller, Scope};
use crate::problem::Problem;
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::StatusCode;

#[utoipa::path(
    post, path = "/v1/mcp-definitions/{tool}", operation_id = "acceptMcpDefinition", tag = "approvals",
    summary = "Accept the definition an MCP server now gives a tool the project pinned",
    description = "Calls of an imported tool (`SERVER.TOOL`) are refused in every thread once the server describes it differently from when the project first called it; this makes the definition the server gave when the project loaded the project's, so that they go through again.",
    params(("tool" = String, Path, description = "The imported tool, as SERVER.TOOL.")),
    responses(
        (status = 204, description = "The definition is the project's now."),
        (status = 403, description = "The token lacks the approve scope or is limited to some agents."),
        (status = 404, description = "The project's MCP servers have no such tool."),
    ),
    security(("bearer" = ["approve"])),
)]
pub(super) async fn accept(
    State(state): State<AppState>,
    caller: Caller,
    Path(tool): Path<String>,
) -> Result<StatusCode, Problem> {
    caller.require(Scope::Approve)?;
    accept_for_project(&state, &caller, &tool).await
}

#[utoipa::path(
    post, path = "/v1/threads/{id}/mcp-definitions/{tool}", operation_id = "acceptMcpDefinitionFromThread", tag = "approvals",
    summary = "Accept, from a thread whose call was refused, the definition an MCP server now gives a tool",
    description = "The same as `POST /v1/mcp-definitions/{tool}` (the definition is accepted for the whole project), from the page of a thread whose call was refused.",
    params(("id" = String, Path, description = "The thread's id."), ("tool" = String, Path, description = "The imported tool, as SERVER.TOOL.")),
    responses(
        (status = 204, description = "The definition is the project's now."),
        (status = 403, description = "The token lacks the approve scope or is limited to some agents."),
        (status = 404, description = "There is no such thread, the token may not reach it, or the project's MCP servers have no such tool."),
    ),
    security(("bearer" = ["approve"])),
)]
pub(super) async fn accept_from_thread(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, tool)): Path<(String, String)>,
) -> Result<StatusCode, Problem> {
    caller.require(Scope::Approve)?;
    reachable_thread(&state, &caller, &id).await?;
    accept_for_project(&state, &caller, &tool).await
}

/// Accepts the definition for every thread: only for a token that reaches every agent, since a
/// token limited to some would change what the others' threads call.
async fn accept_for_project(
    state: &AppState,
    caller: &Caller,
    tool: &str,
) -> Result<StatusCode, Problem> {
    if !caller.may_reach_all() {
        return Err(Problem::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "accepting a definition changes it for every agent of the project; this token is limited to some agents".to_owned(),
        ));
    }
    if state.runtime().mcp_pin(tool).is_none() {
        return Err(Problem::not_found(format!(
            "\"{tool}\" is not a tool of this project's MCP servers"
        )));
    }
    state.runtime().accept_mcp_definition(tool).await?;
    Ok(StatusCode::NO_CONTENT)
}
