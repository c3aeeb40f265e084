//! Threads: create (with the first message, text variables and secrets), list, get, stop,
//! delete.

use super::reachable_thread;
use crate::auth::{Caller, Scope};
use crate::body::JsonBody;
use crate::openapi::answers::{RunStarted, StopAsked, ThreadCreated, ThreadPage, ThreadView};
use crate::problem::Problem;
use crate::state::AppState;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use toolhost_runtime::engine::{describe_owner, Runtime};
use toolhost_runtime::variables::VariableValue;
use toolhost_store::{StoreError, ThreadQuery, ThreadStatus};
use utoipa::{IntoParams, ToSchema};

/// `POST /v1/threads`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NewThreadBody {
    agent: String,
    message: String,
    /// Text variables, by name.
    #[serde(default)]
    variables: BTreeMap<String, String>,
    /// Secret variables, by name: sealed when stored, never returned.
    #[serde(default)]
    secrets: BTreeMap<String, String>,
}

#[utoipa::path(
    post, path = "/v1/threads", operation_id = "createThread", tag = "threads",
    summary = "Create a thread with its first message and run it",
    description = "Stores the thread, its first message, its variables and (sealed) secrets, then runs it in the background; follow it through its event stream.",
    request_body(content = inline(NewThreadBody), description = "A JSON object of these fields only."),
    responses(
        (status = 201, description = "The thread is stored and runs.", body = ThreadCreated),
        (status = 409, description = "The thread is busy with another run."),
        (status = 422, description = "An unknown agent, an empty message, a secret given as a text variable, a name given twice, a model or definitions that cannot be used, or variables missing; the pointer says which field."),
    ),
    security(("bearer" = ["run"])),
)]
pub(super) async fn create(
    State(state): State<AppState>,
    caller: Caller,
    // Taken as a result so that the caller's scope is checked before the body's faults.
    body: Result<JsonBody<NewThreadBody>, Problem>,
) -> Result<(StatusCode, Json<Value>), Problem> {
    caller.require(Scope::Run)?;
    let JsonBody(body) = body?;
    caller.require_agent(&body.agent)?;
    if body.message.trim().is_empty() {
        return Err(Problem::invalid("the first message is empty").at("/message"));
    }
    let values = variable_values(&state.runtime(), body.variables, body.secrets)?;
    let runtime = state.runtime();
    let thread = state
        .runs
        .store_then_run(state.runtime(), async move {
            let thread = runtime
                .start_thread_with(&body.agent, &body.message, values)
                .await?;
            let id = thread.id.clone();
            Ok((thread, Some(id)))
        })
        .await?;
    Ok((StatusCode::CREATED, Json(json!({ "thread": thread }))))
}

/// Text variables and secrets as the runtime takes them. A name given as both is refused, and
/// so is a declared secret given as a text variable.
pub(super) fn variable_values(
    runtime: &Runtime,
    variables: BTreeMap<String, String>,
    secrets: BTreeMap<String, String>,
) -> Result<Vec<VariableValue>, Problem> {
    let declared = runtime.secret_names();
    if let Some(name) = variables.keys().find(|n| declared.contains(*n)) {
        return Err(Problem::invalid(format!(
            "\"{name}\" is a secret: give it under \"secrets\", never as a text variable"
        ))
        .at(format!("/variables/{name}")));
    }
    if let Some(name) = variables.keys().find(|n| secrets.contains_key(*n)) {
        return Err(Problem::invalid(format!(
            "\"{name}\" is given both as a variable and as a secret; give it once"
        ))
        .at(format!("/secrets/{name}")));
    }
    let text = variables.into_iter().map(|(name, value)| VariableValue {
        name,
        value,
        secret: false,
    });
    let secret = secrets.into_iter().map(|(name, value)| VariableValue {
        name,
        value,
        secret: true,
    });
    Ok(text.chain(secret).collect())
}

/// `GET /v1/threads` query.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    agent: Option<String>,
    status: Option<String>,
    /// Only the sub-threads of this thread.
    parent: Option<String>,
    limit: Option<usize>,
    /// The id of the last thread of the previous page.
    cursor: Option<String>,
}

#[utoipa::path(
    get, path = "/v1/threads", operation_id = "listThreads", tag = "threads",
    summary = "The threads the token may reach, newest first, page by page",
    params(ListQuery),
    responses(
        (status = 200, description = "One page.", body = ThreadPage),
        (status = 400, description = "An unknown query parameter, a status that is not one, a limit out of range, or a cursor that names no thread of this list."),
    ),
    security(("bearer" = ["read"])),
)]
pub(super) async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, Problem> {
    caller.require(Scope::Read)?;
    let Query(query) = query.map_err(|e| Problem::bad_request(e.body_text()))?;
    let limit = page_limit(query.limit, state.config.max_page)?;
    let status = match &query.status {
        None => None,
        Some(status) => Some(ThreadStatus::parse(status).ok_or_else(|| {
            Problem::bad_request(format!(
                "status \"{status}\" is not a thread status (idle, running, paused, done, failed)"
            ))
        })?),
    };
    // The agents asked for, within the ones the token may reach.
    let agents = match (&query.agent, caller.agents()) {
        (Some(agent), _) if !caller.may_reach(agent) => Some(Vec::new()),
        (Some(agent), _) => Some(vec![agent.clone()]),
        (None, limited) => limited.map(<[String]>::to_vec),
    };
    // A cursor names the last thread of a page; one that the caller may not see is refused
    // like one that does not exist.
    if let Some(cursor) = &query.cursor {
        let reachable = match state.db.thread(cursor).await {
            Ok(t) => caller.may_reach(&t.agent),
            Err(_) => false,
        };
        if !reachable {
            return Err(Problem::bad_request(format!(
                "the cursor {cursor} names no thread of this list; start again without it"
            )));
        }
    }
    let thread_query = ThreadQuery {
        agents,
        status,
        parent: query.parent.clone(),
        after: query.cursor.clone(),
        // One more than the page: whether there is a next page.
        limit: limit + 1,
    };
    let mut page = state
        .db
        .run_blocking(move |s| s.thread_page(&thread_query))
        .await?;
    let more = page.len() > limit;
    page.truncate(limit);
    let next = more.then(|| page.last().map(|t| t.id.clone())).flatten();
    Ok(Json(json!({ "threads": page, "next_cursor": next })))
}

/// The page size asked for, within `1..=max` (default 50).
pub(super) fn page_limit(asked: Option<usize>, max: usize) -> Result<usize, Problem> {
    match asked {
        None => Ok(50.min(max)),
        Some(n) if (1..=max).contains(&n) => Ok(n),
        Some(n) => Err(Problem::bad_request(format!(
            "limit {n} is out of range: give 1 to {max}"
        ))),
    }
}

#[utoipa::path(
    get, path = "/v1/threads/{id}", operation_id = "getThread", tag = "threads",
    summary = "A thread, its owner, and what it waits for",
    params(("id" = String, Path, description = "The thread's id.")),
    responses(
        (status = 200, description = "The thread.", body = ThreadView),
        (status = 404, description = "There is no such thread, or the token may not reach it."),
    ),
    security(("bearer" = ["read"])),
)]
pub(super) async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, Problem> {
    caller.require(Scope::Read)?;
    let thread = reachable_thread(&state, &caller, &id).await?;
    // An expired lease is a dead owner's: nobody owns the thread.
    let owner = state.runtime().owner_of(&id).await?;
    let approvals: Vec<Value> = state
        .db
        .approvals(&id)
        .await?
        .into_iter()
        .filter(|a| a.decision.is_none())
        .map(|a| serde_json::to_value(a.request).unwrap_or_default())
        .collect();
    let variables: Vec<Value> = state
        .db
        .variable_requests(&id)
        .await?
        .into_iter()
        .filter(|r| r.answered_at.is_none())
        .map(|r| json!({"request_id": r.id, "names": r.names}))
        .collect();
    Ok(Json(json!({
        "thread": thread,
        "owner": owner,
        "waiting": {"approvals": approvals, "variables": variables},
    })))
}

/// `POST /v1/threads/{id}/run`: runs the thread from what is stored (a resume), for a thread
/// that was stopped or whose server went away mid-turn. Another run that owns it already does
/// the work: this one then ends at once.
#[utoipa::path(
    post, path = "/v1/threads/{id}/run", operation_id = "runThread", tag = "threads",
    summary = "Run a thread again from what is stored",
    description = "For a thread that was stopped or whose server went away mid-turn. Another run that owns it already does the work: this one then ends at once.",
    params(("id" = String, Path, description = "The thread's id.")),
    responses(
        (status = 202, description = "A run was started.", body = RunStarted),
        (status = 404, description = "There is no such thread, or the token may not reach it."),
    ),
    security(("bearer" = ["run"])),
)]
pub(super) async fn run(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Value>), Problem> {
    caller.require(Scope::Run)?;
    reachable_thread(&state, &caller, &id).await?;
    state.runs.start(state.runtime(), id);
    Ok((StatusCode::ACCEPTED, Json(json!({ "started": true }))))
}

#[utoipa::path(
    post, path = "/v1/threads/{id}/stop", operation_id = "stopThread", tag = "threads",
    summary = "Ask the run that owns a thread to stop after the operation under way",
    params(("id" = String, Path, description = "The thread's id.")),
    responses(
        (status = 200, description = "Whether a run was asked to stop.", body = StopAsked),
        (status = 404, description = "There is no such thread, or the token may not reach it."),
    ),
    security(("bearer" = ["run"])),
)]
pub(super) async fn stop(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, Problem> {
    caller.require(Scope::Run)?;
    reachable_thread(&state, &caller, &id).await?;
    let asked = state.runtime().stop(&id).await;
    Ok(Json(json!({ "stop_requested": asked })))
}

/// `DELETE /v1/threads/{id}`: the thread and its subtree (its sub-agents' threads, theirs, and
/// so on), each with everything of it (messages, tool results, the call journal, approvals,
/// variables, queued work, events, values, files), in one store transaction. Refused with 409,
/// changing nothing, while a live run owns any thread of the subtree (stop it first: stopping a
/// thread stops its running children).
#[utoipa::path(
    delete, path = "/v1/threads/{id}", operation_id = "deleteThread", tag = "threads",
    summary = "Delete a thread with its subtree and everything of them",
    description = "The thread and its sub-threads (and theirs), each with its messages, results, call journal, approvals, variables, queued work, events, values and files, go in one transaction.",
    params(("id" = String, Path, description = "The thread's id.")),
    responses(
        (status = 204, description = "The thread and its subtree are gone."),
        (status = 404, description = "There is no such thread, or the token may not reach it."),
        (status = 409, description = "A live run owns a thread of the subtree (stop it first); nothing was changed."),
    ),
    security(("bearer" = ["run"])),
)]
pub(super) async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, Problem> {
    caller.require(Scope::Run)?;
    reachable_thread(&state, &caller, &id).await?;
    match state.db.delete_thread(&id).await {
        Ok(()) => Ok(StatusCode::NO_CONTENT),
        Err(StoreError::ThreadOwned { thread, lease }) => Err(Problem::new(
            StatusCode::CONFLICT,
            "thread-busy",
            format!(
                "thread {thread} cannot be deleted while it runs: {}; stop it (POST /v1/threads/{thread}/stop) and delete it once the run has ended",
                describe_owner(&lease)
            ),
        )),
        Err(e) => Err(e.into()),
    }
}
