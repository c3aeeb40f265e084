//! The variables endpoints of spec 001 §6: what a request waits for (names, and which are
//! secret; never a value), and the values that answer it, after which the thread goes on.

use super::reachable_thread;
use super::threads::variable_values;
use crate::auth::{Caller, Scope};
use crate::body::JsonBody;
use crate::openapi::answers::{VariableRequest as RequestView, VariablesGiven};
use crate::problem::Problem;
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use toolhost_store::VariableRequest;
use utoipa::ToSchema;

async fn request_of(
    state: &AppState,
    thread: &str,
    request_id: &str,
) -> Result<VariableRequest, Problem> {
    state
        .db
        .variable_requests(thread)
        .await?
        .into_iter()
        .find(|r| r.id == request_id)
        .ok_or_else(|| {
            Problem::not_found(format!(
                "thread {thread} has no variable request {request_id}"
            ))
        })
}

#[utoipa::path(
    get, path = "/v1/threads/{id}/variables/{request_id}", operation_id = "getVariableRequest", tag = "variables",
    summary = "What a variable request asks for: names, and which are secret; never a value",
    params(("id" = String, Path, description = "The thread's id."), ("request_id" = String, Path, description = "The variable request.")),
    responses(
        (status = 200, description = "The request.", body = RequestView),
        (status = 404, description = "There is no such thread or request, or the token may not reach the thread."),
    ),
    security(("bearer" = ["read"])),
)]
pub(super) async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, request_id)): Path<(String, String)>,
) -> Result<Json<Value>, Problem> {
    caller.require(Scope::Read)?;
    reachable_thread(&state, &caller, &id).await?;
    let request = request_of(&state, &id, &request_id).await?;
    let secret = state.runtime().secret_names();
    let names: Vec<Value> = request
        .names
        .iter()
        .map(|n| json!({"name": n, "secret": secret.contains(n)}))
        .collect();
    Ok(Json(json!({
        "request_id": request.id,
        "thread_id": id,
        "variables": names,
        "requested_at": request.requested_at,
        "answered_at": request.answered_at,
    })))
}

/// `POST /v1/threads/{id}/variables/{request_id}`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct GiveBody {
    #[serde(default)]
    variables: BTreeMap<String, String>,
    #[serde(default)]
    secrets: BTreeMap<String, String>,
}

#[utoipa::path(
    post, path = "/v1/threads/{id}/variables/{request_id}", operation_id = "giveVariables", tag = "variables",
    summary = "Give the values a variable request asks for; the thread goes on",
    description = "For the request of a deferred sub-agent instance (a `subagent_env_required` result), the values are stored in the instance, never in this thread, and the instance starts at once; its session result reaches this thread as a message.",
    params(("id" = String, Path, description = "The thread's id."), ("request_id" = String, Path, description = "The variable request.")),
    request_body(content = inline(GiveBody), description = "A JSON object of these fields only."),
    responses(
        (status = 200, description = "The values are stored (secrets sealed).", body = VariablesGiven),
        (status = 404, description = "There is no such thread or request, or the token may not reach the thread."),
        (status = 409, description = "The request was answered already, or the thread is busy; nothing was changed."),
        (status = 422, description = "A name the request does not ask for, a secret given as a text variable, or a name given twice."),
    ),
    security(("bearer" = ["run"])),
)]
pub(super) async fn give(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, request_id)): Path<(String, String)>,
    // Taken as a result so that the caller's scope is checked before the body's faults.
    body: Result<JsonBody<GiveBody>, Problem>,
) -> Result<Json<Value>, Problem> {
    caller.require(Scope::Run)?;
    let JsonBody(body) = body?;
    reachable_thread(&state, &caller, &id).await?;
    let request = request_of(&state, &id, &request_id).await?;
    if request.answered_at.is_some() {
        return Err(Problem::new(
            axum::http::StatusCode::CONFLICT,
            "answered",
            format!("variable request {request_id} was answered already; nothing was changed"),
        ));
    }
    if let Some(name) = body
        .variables
        .keys()
        .chain(body.secrets.keys())
        .find(|n| !request.names.contains(n))
    {
        return Err(Problem::invalid(format!(
            "request {request_id} does not ask for \"{name}\" (it asks for: {})",
            request.names.join(", ")
        )));
    }
    let values = variable_values(&state.runtime(), body.variables, body.secrets)?;
    // A request of a deferred sub-agent instance: the values go to the instance, and it is the
    // thread that starts (its result reaches this one as a message).
    let deferred = state.runtime().deferred_child(&id, &request_id).await?;
    let (runtime, db) = (state.runtime(), state.db.clone());
    let answered = state
        .runs
        .store_then_run(state.runtime(), async move {
            runtime.set_variables(&id, values).await?;
            let answered = db
                .variable_requests(&id)
                .await?
                .into_iter()
                .any(|r| r.id == request_id && r.answered_at.is_some());
            Ok((answered, answered.then(|| deferred.unwrap_or(id))))
        })
        .await?;
    Ok(Json(json!({ "answered": answered })))
}
