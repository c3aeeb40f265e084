//! `GET /v1/agents`: the agents the caller may reach, with their prompts and the variables a
//! new thread of each may be given (what a form that starts one asks for).

use crate::auth::{Caller, Scope};
use crate::openapi::answers::AgentList;
use crate::problem::Problem;
use crate::state::AppState;
use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};
use toolhost_runtime::project::AgentKind;

#[utoipa::path(
    get, path = "/v1/agents", operation_id = "listAgents", tag = "agents",
    summary = "The agents the token may reach, with their prompts",
    responses((status = 200, description = "The agents.", body = AgentList)),
    security(("bearer" = ["read"])),
)]
pub(super) async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Value>, Problem> {
    caller.require(Scope::Read)?;
    let runtime = state.runtime();
    let defs = runtime.definitions();
    let agents: Vec<Value> = defs
        .agents
        .iter()
        .filter(|(name, _)| caller.may_reach(name))
        .map(|(name, agent)| {
            let sides = std::iter::once(&agent.side_a).chain(
                agent
                    .side_b
                    .as_ref()
                    .filter(|_| agent.kind == AgentKind::DualAi),
            );
            json!({
                "name": name,
                "type": match agent.kind {
                    AgentKind::AiHuman => "ai_human",
                    AgentKind::DualAi => "dual_ai",
                },
                "prompts": sides.map(|s| s.prompt.clone()).collect::<Vec<_>>(),
                "title": agent.title,
                "description": agent.description,
                "variables": state.runtime().variables_to_give(name).unwrap_or_default(),
            })
        })
        .collect();
    Ok(Json(json!({ "agents": agents })))
}
