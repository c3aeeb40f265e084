//! Approvals: what waits, and a person's decision (approve, deny with a message, approve with
//! edited arguments, always for this thread), bound to the call, its arguments and the tool's
//! definition exactly as on the command line.

use super::reachable_thread;
use crate::auth::{Caller, Scope};
use crate::body::JsonBody;
use crate::problem::Problem;
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use toolhost_runtime::engine::Verdict;

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
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Decision {
    Approve,
    Deny,
}

/// `POST /v1/threads/{id}/approvals/{call_id}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DecideBody {
    decision: Decision,
    /// For a denial: what the model is told.
    message: Option<String>,
    /// For an approval: the arguments to run with instead (validated again).
    #[serde(default, deserialize_with = "given")]
    arguments: Option<Value>,
    /// The decision holds for the later calls of the same tool in this thread.
    #[serde(default)]
    always: bool,
}

pub(super) async fn decide(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, call_id)): Path<(String, String)>,
    JsonBody(body): JsonBody<DecideBody>,
) -> Result<Json<Value>, Problem> {
    caller.require(Scope::Approve)?;
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
                ..Verdict::deny(who, body.message)
            }
        }
    };
    let runtime = state.runtime.clone();
    let record = state
        .runs
        .store_then_run(state.runtime.clone(), async move {
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
