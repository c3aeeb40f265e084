//! Threads: create (with the first message, text variables and secrets), list, get, stop,
//! delete.

use super::reachable_thread;
use crate::auth::{Caller, Scope};
use crate::body::JsonBody;
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

/// `POST /v1/threads`.
#[derive(Deserialize)]
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

pub(super) async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<NewThreadBody>,
) -> Result<(StatusCode, Json<Value>), Problem> {
    caller.require(Scope::Run)?;
    caller.require_agent(&body.agent)?;
    if body.message.trim().is_empty() {
        return Err(Problem::invalid("the first message is empty").at("/message"));
    }
    let values = variable_values(&state.runtime, body.variables, body.secrets)?;
    let runtime = state.runtime.clone();
    let thread = state
        .runs
        .store_then_run(state.runtime.clone(), async move {
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
#[derive(Deserialize)]
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

pub(super) async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, Problem> {
    caller.require(Scope::Read)?;
    let thread = reachable_thread(&state, &caller, &id).await?;
    let owner = state.db.lease(&id).await?;
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
pub(super) async fn run(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Value>), Problem> {
    caller.require(Scope::Run)?;
    reachable_thread(&state, &caller, &id).await?;
    state.runs.start(state.runtime.clone(), id);
    Ok((StatusCode::ACCEPTED, Json(json!({ "started": true }))))
}

pub(super) async fn stop(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, Problem> {
    caller.require(Scope::Run)?;
    reachable_thread(&state, &caller, &id).await?;
    let asked = state.runtime.stop(&id).await;
    Ok(Json(json!({ "stop_requested": asked })))
}

/// `DELETE /v1/threads/{id}`: the thread and its subtree (its sub-agents' threads, theirs, and
/// so on), each with everything of it (messages, tool results, the call journal, approvals,
/// variables, queued work, events, values, files), in one store transaction. Refused with 409,
/// changing nothing, while a live run owns any thread of the subtree (stop it first: stopping a
/// thread stops its running children).
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
