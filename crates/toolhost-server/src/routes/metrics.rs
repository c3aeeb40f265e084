//! `GET /metrics`: the server's counts in the Prometheus text format (see [`crate::metrics`]).
//! It needs a token with the `read` scope, like every endpoint but health, readiness and the
//! OpenAPI document: the counts say how busy the service is and which routes are used. A scraper
//! sends it as a bearer token. The counts are totals over every agent.

use crate::auth::{Caller, Scope};
use crate::metrics::text::{render, Snapshot, CONTENT_TYPE};
use crate::problem::Problem;
use crate::state::AppState;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

#[utoipa::path(
    get, path = "/metrics", operation_id = "getMetrics", tag = "metrics",
    summary = "The server's counts in the Prometheus text format",
    responses((status = 200, description = "Requests by route template, durations, runs, open streams, store commits.", content_type = "text/plain; version=0.0.4; charset=utf-8", body = String)),
    security(("bearer" = ["read"])),
)]
pub(super) async fn metrics(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<impl IntoResponse, Problem> {
    caller.require(Scope::Read)?;
    let text = render(&Snapshot {
        requests: state.metrics.requests(),
        runs: state.runs.counts(),
        streams_open: state.metrics.streams_open(),
        // Counters kept in memory: reading them does not touch the database.
        store: state.runtime().store().write_stats(),
    });
    Ok(([(header::CONTENT_TYPE, CONTENT_TYPE)], text))
}
