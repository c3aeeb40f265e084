//! Approvals: what waits, and a person's decision (approve, deny with a message, approve with
//! edited arguments, always for this thread), bound to the call, its arguments and the tool's
//! definition exactly as on the command line.

use super::reachable_thread;
use crate::auth::{Caller, Scope};
use crate::body::JsonBody;
use crate::openapi::answers::{ApprovalDecided, ApprovalList};
use crate::problem::Problem;
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use toolhost_runtime::engine::Verdict;
use utoipa::ToSchema;

#[utoipa::path(
    get, path = "/v1/threads/{id}/approvals", operation_id = "listApprovals", tag = "approvals",
    summary = "A thread's approval requests, decided or not",
    params(("id" = String, Path, description = "The thread's id.")),
    responses(
        (status = 200, description = "The requests.", body = ApprovalList),
        (status = 404, description = "There is no such thread, or the token may not reach it."),
    ),
    security(("bearer" = ["read"])),
)]
pub(super) async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, Problem> {
    caller.require(Scope::Read)?;
    reachable_thread(&state, &caller, &id).await?;
    let approvals = state.db.approvals(&id).await?;
    Ok(Json(json!({ "approvals": approvals })))
}

/// What a person decided.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
enum Decision {
    Approve,
    Deny,
}

/// `POST /v1/threads/{id}/approvals/{call_id}`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct DecideBody {
    #[schema(inline)]
    decision: Decision,
    /// For a denial: what the model is told.
    message: Option<String>,
    /// Why it was decided so; on a denial without a `message` the model is told this.
    reason: Option<String>,
    /// For an approval: the arguments to run with instead (validated again).
    #[serde(default, deserialize_with = "given")]
    #[schema(value_type = Object)]
    arguments: Option<Value>,
    /// The decision holds for the later calls of the same tool in this thread.
    #[serde(default)]
    always: bool,
}

#[utoipa::path(
    post, path = "/v1/threads/{id}/approvals/{call_id}", operation_id = "decideApproval", tag = "approvals",
    summary = "Approve or deny a call that waits",
    description = "Bound to the call, its arguments and the tool's definition. Edited arguments are validated again before the call runs.",
    params(("id" = String, Path, description = "The thread's id."), ("call_id" = String, Path, description = "The call that waits.")),
    request_body(content = inline(DecideBody), description = "A JSON object of these fields only."),
    responses(
        (status = 200, description = "The decision is stored and the thread runs.", body = ApprovalDecided),
        (status = 404, description = "There is no such thread, or the token may not reach it."),
        (status = 409, description = "The call does not wait for a decision (decided already, or unknown), or the thread is busy."),
        (status = 422, description = "A message with an approval, arguments with a denial, or arguments that are not an object."),
    ),
    security(("bearer" = ["approve"])),
)]
pub(super) async fn decide(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, call_id)): Path<(String, String)>,
    // Taken as a result so that the caller's scope is checked before the body's faults.
    body: Result<JsonBody<DecideBody>, Problem>,
) -> Result<Json<Value>, Problem> {
    caller.require(Scope::Approve)?;
    let JsonBody(body) = body?;
    reachable_thread(&state, &caller, &id).await?;
    let who = format!("token {}", caller.token_id);
    let verdict = match body.decision {
        Decision::Approve => {
            if body.message.is_some() {
                return Err(
                    Problem::invalid("a message goes with a denial, not an approval")
                        .at("/message"),
                );
            }
            if body.arguments.as_ref().is_some_and(|a| !a.is_object()) {
                return Err(Problem::invalid(
                    "edited arguments must be a JSON object, as a tool's arguments are",
                )
                .at("/arguments"));
            }
            Verdict {
                always: body.always,
                edited_arguments: body.arguments,
                reason: body.reason,
                ..Verdict::approve(who)
            }
        }
        Decision::Deny => {
            if body.arguments.is_some() {
                return Err(
                    Problem::invalid("edited arguments go with an approval, not a denial")
                        .at("/arguments"),
                );
            }
            Verdict {
                always: body.always,
                reason: body.reason,
                ..Verdict::deny(who, body.message)
            }
        }
    };
    let runtime = state.runtime();
    let record = state
        .runs
        .store_then_run(state.runtime(), async move {
            let record = runtime.decide(&id, &call_id, verdict).await?;
            Ok((record, Some(id)))
        })
        .await?;
    Ok(Json(json!({ "approval": record })))
}

/// A field that is there, even as `null`: `null` arguments are refused, not read as "no edit".
fn given<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}
