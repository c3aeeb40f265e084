//! A thread's messages: listed page by page, and sent (stored at once; taken at the thread's
//! next step, which starts here when no run owns the thread).

use super::reachable_thread;
use super::threads::page_limit;
use crate::auth::{Caller, Scope};
use crate::body::JsonBody;
use crate::openapi::answers::{MessagePage, Queued, WorkState};
use crate::problem::Problem;
use crate::state::AppState;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::{IntoParams, ToSchema};

/// `GET /v1/threads/{id}/messages` query.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    /// Only messages after this position (`seq`).
    after: Option<i64>,
    limit: Option<usize>,
}

#[utoipa::path(
    get, path = "/v1/threads/{id}/messages", operation_id = "listMessages", tag = "messages",
    summary = "A thread's messages, oldest first, page by page",
    params(("id" = String, Path, description = "The thread's id."), ListQuery),
    responses(
        (status = 200, description = "One page.", body = MessagePage),
        (status = 400, description = "An unknown query parameter or a limit out of range."),
        (status = 404, description = "There is no such thread, or the token may not reach it."),
    ),
    security(("bearer" = ["read"])),
)]
pub(super) async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, Problem> {
    caller.require(Scope::Read)?;
    let Query(query) = query.map_err(|e| Problem::bad_request(e.body_text()))?;
    let limit = page_limit(query.limit, state.config.max_page)?;
    reachable_thread(&state, &caller, &id).await?;
    let after = query.after.unwrap_or(0);
    let thread = id.clone();
    // One more than the page: whether there is a next page.
    let mut messages = state
        .db
        .run_blocking(move |s| s.message_page(&thread, after, limit + 1))
        .await?;
    let more = messages.len() > limit;
    messages.truncate(limit);
    let next = more.then(|| messages.last().map(|m| m.seq)).flatten();
    Ok(Json(json!({ "messages": messages, "next_after": next })))
}

#[utoipa::path(
    get, path = "/v1/threads/{id}/state", operation_id = "getThreadState", tag = "messages",
    summary = "A thread's state document (spec 004): its results at their `_outputPath`s",
    params(("id" = String, Path, description = "The thread's id.")),
    responses(
        (status = 200, description = "The document, read from the stored messages.", body = WorkState),
        (status = 404, description = "There is no such thread, or the token may not reach it."),
    ),
    security(("bearer" = ["read"])),
)]
pub(super) async fn work_state(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, Problem> {
    caller.require(Scope::Read)?;
    reachable_thread(&state, &caller, &id).await?;
    let messages = state.db.messages(&id).await?;
    Ok(Json(
        json!({ "state": toolhost_runtime::engine::work_state(&messages) }),
    ))
}

/// `POST /v1/threads/{id}/messages`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SendBody {
    message: String,
}

#[utoipa::path(
    post, path = "/v1/threads/{id}/messages", operation_id = "sendMessage", tag = "messages",
    summary = "Send a message: stored at once, taken at the thread's next step",
    params(("id" = String, Path, description = "The thread's id.")),
    request_body(content = inline(SendBody), description = "A JSON object of these fields only."),
    responses(
        (status = 202, description = "The message is stored and the thread runs.", body = Queued),
        (status = 404, description = "There is no such thread, or the token may not reach it."),
        (status = 409, description = "The thread holds a direct tool call (scratch), or is busy."),
        (status = 422, description = "The message is empty."),
    ),
    security(("bearer" = ["run"])),
)]
pub(super) async fn send(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    // Taken as a result so that the caller's scope is checked before the body's faults.
    body: Result<JsonBody<SendBody>, Problem>,
) -> Result<(StatusCode, Json<Value>), Problem> {
    caller.require(Scope::Run)?;
    let JsonBody(body) = body?;
    let thread = reachable_thread(&state, &caller, &id).await?;
    if thread.tags.iter().any(|t| t == "scratch") {
        return Err(Problem::new(
            StatusCode::CONFLICT,
            "scratch-thread",
            format!("thread {id} holds a direct tool call and no conversation; no model would answer a message there"),
        ));
    }
    if body.message.trim().is_empty() {
        return Err(Problem::invalid("the message is empty").at("/message"));
    }
    let runtime = state.runtime();
    state
        .runs
        .store_then_run(state.runtime(), async move {
            runtime.queue_message(&id, &body.message).await?;
            Ok(((), Some(id)))
        })
        .await?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "queued": true }))))
}
