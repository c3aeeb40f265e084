//! `/health` (the process answers) and `/ready` (it can read its store); no token needed.

use crate::problem::Problem;
use crate::state::AppState;
use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

pub(super) async fn health() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

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
