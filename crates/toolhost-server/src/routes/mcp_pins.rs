//! A person accepts the definition an MCP server now gives a tool that a thread pinned before
//! (see `toolhost_runtime::mcp`): the thread's calls of it go through again.

use super::reachable_thread;
use crate::auth::{Caller, Scope};
use crate::problem::Problem;
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::StatusCode;

#[utoipa::path(
    post, path = "/v1/threads/{id}/mcp-definitions/{tool}", operation_id = "acceptMcpDefinition", tag = "approvals",
    summary = "Accept the definition an MCP server now gives a tool the thread pinned",
    description = "The thread's calls of an imported tool (`SERVER.TOOL`) are refused once the server describes it differently from when the thread first used it; this stores the definition the server gave when the project loaded as the thread's, so that they go through again.",
    params(("id" = String, Path, description = "The thread's id."), ("tool" = String, Path, description = "The imported tool, as SERVER.TOOL.")),
    responses(
        (status = 204, description = "The definition is the thread's now."),
        (status = 404, description = "There is no such thread, the token may not reach it, or the project's MCP servers have no such tool."),
    ),
    security(("bearer" = ["approve"])),
)]
pub(super) async fn accept(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, tool)): Path<(String, String)>,
) -> Result<StatusCode, Problem> {
    caller.require(Scope::Approve)?;
    reachable_thread(&state, &caller, &id).await?;
    if state.runtime().mcp_pin(&tool).is_none() {
        return Err(Problem::not_found(format!(
            "\"{tool}\" is not a tool of this project's MCP servers"
        )));
    }
    state.runtime().accept_mcp_definition(&id, &tool).await?;
    Ok(StatusCode::NO_CONTENT)
}
