//! `POST /v1/tools/{name}/call`: a direct call of a tool, for a person testing it. The call goes
//! on a scratch thread of its own (tagged `scratch`, of an agent whose first prompt offers the
//! tool) and the engine carries it out as it carries out a model's call: journaled, with its
//! idempotency key, secrets redacted, and, when the tool needs approval, not run until a person
//! decides through the approvals endpoint. The answer holds the result, or what the call waits
//! for and where to answer it.

use super::threads::variable_values;
use super::tools::{argument_text, offering_agents, violations, visible_tool};
use crate::auth::{Caller, Scope};
use crate::body::JsonBody;
use crate::openapi::answers::CallAnswer;
use crate::problem::Problem;
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use toolhost_core::ToolSetError;
use toolhost_runtime::engine::{fit_arguments, RunOutcome, ScratchCall, Waiting};
use utoipa::ToSchema;

/// `POST /v1/tools/{name}/call`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct CallBody {
    arguments: Option<Value>,
    argument_text: Option<String>,
    /// The agent the scratch thread is of (default: the first, by name, that offers the tool).
    agent: Option<String>,
    /// Text variables the tool may need, by name.
    #[serde(default)]
    variables: BTreeMap<String, String>,
    /// Secrets the tool may need, by name: sealed when stored, never returned.
    #[serde(default)]
    secrets: BTreeMap<String, String>,
}

#[utoipa::path(
    post, path = "/v1/tools/{name}/call", operation_id = "callTool", tag = "tools",
    summary = "Call a tool directly, on a scratch thread of its own",
    description = "Carried out as a model's call is: journaled, secrets redacted, and not run before a person approves it when the tool needs approval.",
    params(("name" = String, Path, description = "The tool.")),
    request_body(content = inline(CallBody), description = "A JSON object of these fields only."),
    responses(
        (status = 200, description = "The call ran; the answer holds its result.", body = CallAnswer),
        (status = 202, description = "The call waits for an approval or variables; the answer says where to give them.", body = CallAnswer),
        (status = 404, description = "There is no such tool the token may see."),
        (status = 422, description = "Arguments that do not fit (the pointer says where), an agent that does not offer the tool, no agent the token reaches that does, or variables that cannot be used."),
        (status = 503, description = "The server is shutting down; the call is stored and runs when its thread runs next."),
    ),
    security(("bearer" = ["run"])),
)]
pub(super) async fn call(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    // Taken as a result so that the caller's scope is checked before the body's faults.
    body: Result<JsonBody<CallBody>, Problem>,
) -> Result<(StatusCode, Json<Value>), Problem> {
    caller.require(Scope::Run)?;
    let JsonBody(body) = body?;
    let runtime = &state.runtime();
    let tool = visible_tool(runtime, &caller, &name)?;
    let offering = offering_agents(runtime, &name, true);
    if let Some(agent) = &body.agent {
        caller.require_agent(agent)?;
    }
    let agent = calling_agent(&caller, &name, body.agent, offering)?;
    let (text, field) = argument_text(body.arguments, body.argument_text)?;
    // Arguments that no repair makes fit are refused here, with nothing stored: a model would
    // be asked to call again.
    if let Err(e) = fit_arguments(&tool, &text) {
        return Err(unfit(&name, field, &e));
    }
    let values = variable_values(&state.runtime(), body.variables, body.secrets)?;
    let ScratchCall {
        thread,
        call_id,
        repairs,
    } = runtime
        .start_scratch_call(&agent, &name, &text, values)
        .await?;
    let thread_id = thread.id.clone();
    // The result comes from the run that stores it, as a value.
    let mut expected = runtime.expect_result(&thread_id, &call_id);
    let outcome = state
        .runs
        .run(runtime.clone(), thread_id.clone())
        .await
        .ok_or_else(|| {
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "shutting-down",
                format!("the server is shutting down: the call is stored on thread {thread_id} and runs when that thread runs next"),
            )
        })??;
    let mut answer = json!({"thread_id": thread_id, "call_id": call_id, "agent": agent});
    let status = match outcome {
        RunOutcome::Paused(waiting) => {
            waiting_answer(&mut answer, &thread_id, waiting);
            StatusCode::ACCEPTED
        }
        RunOutcome::Done(_) => {
            // Stored by another run (one that took the thread first): read from the thread.
            let result = match expected.take() {
                Some(result) => Some(result),
                None => runtime.call_result(&thread_id, &call_id).await?,
            };
            let result = result.ok_or_else(|| {
                Problem::internal(format!(
                    "the run of thread {thread_id} ended without a result for call {call_id}"
                ))
            })?;
            answer["status"] = json!("done");
            answer["result"] = match result.metadata.result {
                Some(full) => json!(full),
                None => json!({"status": result.status, "result": result.content}),
            };
            answer["repairs"] = json!(repairs);
            StatusCode::OK
        }
    };
    Ok((status, Json(answer)))
}

/// The agent a direct call runs as: the one asked for, which must offer the tool in its first
/// prompt, or the first offering agent the token reaches.
fn calling_agent(
    caller: &Caller,
    name: &str,
    asked: Option<String>,
    offering: Vec<String>,
) -> Result<String, Problem> {
    match asked {
        Some(agent) if !offering.contains(&agent) => Err(Problem::invalid(format!(
            "agent \"{agent}\" does not offer tool \"{name}\" in its first prompt (the agents that do: {})",
            list(&offering)
        ))
        .at("/agent")),
        Some(agent) => Ok(agent),
        None => offering
            .into_iter()
            .find(|a| caller.may_reach(a))
            .ok_or_else(|| {
                Problem::invalid(format!(
                    "tool \"{name}\" cannot be called directly: a direct call runs as an agent whose first prompt offers the tool, and no agent this token reaches does"
                ))
            }),
    }
}

/// The refusal of arguments that no repair makes fit: every violation, pointed at the first.
fn unfit(name: &str, field: &str, e: &ToolSetError) -> Problem {
    let listed = violations(e);
    let first = listed.first().cloned().unwrap_or_default();
    let pointer = match (field, first["pointer"].as_str()) {
        ("/arguments", Some(at)) => format!("/arguments{at}"),
        _ => field.to_owned(),
    };
    let all: Vec<String> = listed
        .iter()
        .map(|v| {
            let at = v["pointer"]
                .as_str()
                .filter(|p| !p.is_empty())
                .unwrap_or("/");
            format!("at {at}: {}", v["message"].as_str().unwrap_or_default())
        })
        .collect();
    Problem::invalid(format!(
        "the arguments do not fit tool \"{name}\": {}",
        all.join("; ")
    ))
    .at(pointer)
}

/// What a paused direct call answers: what it waits for, and where that is given.
fn waiting_answer(answer: &mut Value, thread_id: &str, waiting: Waiting) {
    answer["status"] = json!("waiting");
    match waiting {
        Waiting::Approval(request) => {
            answer["waiting_for"] = json!("approval");
            answer["approval"] = json!({
                "tool": request.tool,
                "decide": format!("/v1/threads/{thread_id}/approvals/{}", request.call_id),
            });
        }
        Waiting::Variables { request_id, names } => {
            answer["waiting_for"] = json!("variables");
            answer["variables"] = json!({
                "names": names,
                "give": format!("/v1/threads/{thread_id}/variables/{request_id}"),
            });
        }
    }
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}
