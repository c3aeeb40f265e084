//! `/health` (the process answers) and `/ready` (it can read its store); no token needed.

use crate::openapi::answers::Status;
use crate::problem::Problem;
use crate::state::AppState;
use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

#[utoipa::path(
    get, path = "/health", operation_id = "getHealth", tag = "health",
    summary = "Whether the process answers",
    description = "Needs no token.",
    responses((status = 200, description = "The process answers.", body = Status)),
)]
pub(super) async fn health() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

#[utoipa::path(
    get, path = "/ready", operation_id = "getReady", tag = "health",
    summary = "Whether the store can be read",
    description = "Needs no token.",
    responses(
        (status = 200, description = "The store can be read.", body = Status),
        (status = 503, description = "The store cannot be read."),
    ),
)]
pub(super) async fn ready(State(state): State<AppState>) -> Result<Json<Value>, Problem> {
    state
        .db
        .run_blocking(|s| s.tokens().map(|_| ()))
        .await
        .map_err(|e| {
            Problem::new(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                "not-ready",
                format!("the store cannot be read: {e}"),
            )
        })?;
    Ok(Json(json!({"status": "ready"})))
}
