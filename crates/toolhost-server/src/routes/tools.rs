//! The project's tools: listed with what a person testing them needs (schemas, approval,
//! idempotency, how each runs, which agents offer it), and arguments checked for one of them
//! exactly as a model's call is checked, repairs included. A token limited to some agents sees
//! only the tools their prompts offer.

use crate::auth::{Caller, Scope};
use crate::body::JsonBody;
use crate::openapi::answers::{ToolList, Validation};
use crate::problem::Problem;
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use toolhost_core::blueprint::Binding;
use toolhost_core::{AnyTool, ToolSetError};
use toolhost_runtime::engine::{fit_arguments, Fitted, Runtime};
use toolhost_runtime::project::AgentKind;
use utoipa::ToSchema;

/// The agents whose prompts offer `tool`, by name; with `first_side_only`, only those whose
/// first side's prompt does (a direct call runs there).
pub(super) fn offering_agents(runtime: &Runtime, tool: &str, first_side_only: bool) -> Vec<String> {
    let defs = runtime.definitions();
    let offers = |prompt: &str| {
        defs.prompts
            .get(prompt)
            .is_some_and(|p| p.tools.iter().any(|t| t == tool))
    };
    defs.agents
        .iter()
        .filter(|(_, agent)| {
            let side_b = agent
                .side_b
                .as_ref()
                .filter(|_| agent.kind == AgentKind::DualAi && !first_side_only);
            std::iter::once(&agent.side_a)
                .chain(side_b)
                .any(|side| offers(&side.prompt))
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// The agents offering `tool` that the caller may reach; `None` when the caller may not see
/// the tool at all (its token is limited to agents none of which offers it).
fn visible_agents(runtime: &Runtime, caller: &Caller, tool: &str) -> Option<Vec<String>> {
    let all = offering_agents(runtime, tool, false);
    let reachable: Vec<String> = all
        .iter()
        .filter(|a| caller.may_reach(a))
        .cloned()
        .collect();
    (caller.may_reach_all() || !reachable.is_empty()).then_some(reachable)
}

/// The tool `name` when the caller may see it; otherwise a 404 listing the tools it may see.
pub(super) fn visible_tool(
    runtime: &Runtime,
    caller: &Caller,
    name: &str,
) -> Result<AnyTool, Problem> {
    if let Some(tool) = runtime.tools().get(name) {
        if visible_agents(runtime, caller, name).is_some() {
            return Ok(tool.clone());
        }
    }
    let mut names: Vec<&str> = runtime
        .tools()
        .values()
        .map(AnyTool::name)
        .filter(|n| visible_agents(runtime, caller, n).is_some())
        .collect();
    names.sort_unstable();
    Err(Problem::not_found(format!(
        "there is no tool named \"{name}\" (the tools there are: {})",
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    )))
}

/// How a tool runs and what its output looks like, as clients read it.
fn kind(runtime: &Runtime, tool: &AnyTool) -> Value {
    let Some(file) = runtime.tool_file(tool.name()) else {
        return json!({"kind": "rust", "output_schema": tool.definition().output_schema});
    };
    // A blueprint declares its output with `_output`.
    let output = tool
        .definition()
        .output_schema
        .clone()
        .or_else(|| file.blueprint.meta.output.clone());
    match &file.binding {
        Binding::Latent => json!({"kind": "latent", "output_schema": output}),
        Binding::Explicit { activity } => {
            // Activities from the project's files are programs run once per call.
            let process = runtime.definitions().activities.contains_key(activity);
            json!({
                "kind": if process { "process" } else { "activity" },
                "activity": activity,
                "output_schema": output,
            })
        }
    }
}

/// `GET /v1/tools`.
#[utoipa::path(
    get, path = "/v1/tools", operation_id = "listTools", tag = "tools",
    summary = "The tools the token may see, with their schemas, kinds and agents",
    responses((status = 200, description = "The tools, by name.", body = ToolList)),
    security(("bearer" = ["read"])),
)]
pub(super) async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Value>, Problem> {
    caller.require(Scope::Read)?;
    let runtime = &state.runtime();
    let mut tools: Vec<&AnyTool> = runtime.tools().values().collect();
    tools.sort_by(|a, b| a.name().cmp(b.name()));
    let listed: Vec<Value> = tools
        .into_iter()
        .filter_map(|tool| {
            let agents = visible_agents(runtime, &caller, tool.name())?;
            let def = tool.definition();
            let mut entry = json!({
                "name": def.name,
                "description": def.description,
                "input_schema": def.parameters,
                "needs_approval": tool.approval().is_some(),
                "idempotent": def.idempotent,
                "execution_mode": def.execution_mode,
                "agents": agents,
            });
            if let (Some(entry), Value::Object(kind)) = (entry.as_object_mut(), kind(runtime, tool))
            {
                entry.extend(kind);
            }
            Some(entry)
        })
        .collect();
    Ok(Json(json!({ "tools": listed })))
}

/// The arguments of a check or a direct call: a JSON value, or text as a model sends it.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ValidateBody {
    arguments: Option<Value>,
    argument_text: Option<String>,
}

/// The argument text of a body that gives `arguments` or `argument_text` (exactly one), and
/// the pointer of the field it came from.
pub(super) fn argument_text(
    arguments: Option<Value>,
    text: Option<String>,
) -> Result<(String, &'static str), Problem> {
    match (arguments, text) {
        (Some(value), None) => Ok((value.to_string(), "/arguments")),
        (None, Some(text)) => Ok((text, "/argument_text")),
        (Some(_), Some(_)) => Err(Problem::invalid(
            "give either \"arguments\" (a JSON value) or \"argument_text\" (text as a model sends it), not both",
        )
        .at("/argument_text")),
        (None, None) => Err(Problem::invalid(
            "give \"arguments\" (a JSON value) or \"argument_text\" (text as a model sends it)",
        )
        .at("")),
    }
}

/// The violations of arguments that do not fit, each with its pointer into the arguments.
pub(super) fn violations(error: &ToolSetError) -> Vec<Value> {
    match error {
        ToolSetError::Call {
            failure: toolhost_core::tool::CallFailure::InvalidArguments { violations, .. },
            ..
        } => {
            let mut listed: Vec<Value> = violations
                .items
                .iter()
                .map(|v| json!({"pointer": v.pointer, "message": v.message}))
                .collect();
            if violations.more > 0 {
                listed.push(
                    json!({"pointer": "", "message": format!("and {} more", violations.more)}),
                );
            }
            listed
        }
        ToolSetError::Json { source, .. } => {
            vec![json!({"pointer": "", "message": source.to_string()})]
        }
        other => vec![json!({"pointer": "", "message": other.model_text()})],
    }
}

/// `POST /v1/tools/{name}/validate`.
#[utoipa::path(
    post, path = "/v1/tools/{name}/validate", operation_id = "validateArguments", tag = "tools",
    summary = "Check arguments for a tool as a model's call is checked, repairs included",
    params(("name" = String, Path, description = "The tool.")),
    request_body(content = inline(ValidateBody), description = "A JSON object of these fields only."),
    responses(
        (status = 200, description = "Whether they fit, with the repaired arguments or the violations.", body = Validation),
        (status = 404, description = "There is no such tool the token may see."),
        (status = 422, description = "Neither or both of `arguments` and `argument_text`."),
    ),
    security(("bearer" = ["read"])),
)]
pub(super) async fn validate(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    // Taken as a result so that the caller's scope is checked before the body's faults.
    body: Result<JsonBody<ValidateBody>, Problem>,
) -> Result<Json<Value>, Problem> {
    caller.require(Scope::Read)?;
    let JsonBody(body) = body?;
    let tool = visible_tool(&state.runtime(), &caller, &name)?;
    let (text, _) = argument_text(body.arguments, body.argument_text)?;
    Ok(Json(match fit_arguments(&tool, &text) {
        Ok(Fitted {
            arguments, notes, ..
        }) => json!({"valid": true, "arguments": arguments, "repairs": notes}),
        Err(e) => json!({"valid": false, "violations": violations(&e)}),
    }))
}
