//! The routes: one module per resource.

mod agents;
mod approvals;
mod events;
mod files;
mod health;
mod messages;
mod metrics;
mod threads;
mod tool_calls;
mod tools;
mod variables;

use crate::auth::Caller;
use crate::metrics::layer::track;
use crate::problem::Problem;
use crate::state::AppState;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::{get, post};
use axum::Router;
use toolhost_store::Thread;

/// Every route of the API, with the body cap and the answer for unknown paths.
pub(crate) fn router(state: AppState) -> Router {
    let limit = state.config.max_body_bytes;
    let router = Router::new()
        .route("/health", get(health::health))
        .route("/ready", get(health::ready))
        .route("/v1/agents", get(agents::list))
        .route("/v1/threads", get(threads::list).post(threads::create))
        .route(
            "/v1/threads/{id}",
            get(threads::get).delete(threads::delete),
        )
        .route("/v1/threads/{id}/stop", post(threads::stop))
        .route("/v1/threads/{id}/run", post(threads::run))
        .route("/v1/threads/{id}/files", get(files::list))
        .route("/v1/threads/{id}/files/{*path}", get(files::download))
        .route(
            "/v1/threads/{id}/messages",
            get(messages::list).post(messages::send),
        )
        .route("/v1/threads/{id}/approvals", get(approvals::list))
        .route(
            "/v1/threads/{id}/approvals/{call_id}",
            post(approvals::decide),
        )
        .route(
            "/v1/threads/{id}/variables/{request_id}",
            get(variables::get).post(variables::give),
        )
        .route("/v1/threads/{id}/events", get(events::thread))
        .route("/v1/events", get(events::all))
        .route("/v1/tools", get(tools::list))
        .route("/v1/tools/{name}/validate", post(tools::validate))
        .route("/v1/tools/{name}/call", post(tool_calls::call))
        .route("/metrics", get(metrics::metrics))
        .merge(crate::web::routes())
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn(crate::plain_errors::as_problem))
        .layer(middleware::from_fn_with_state(
            state.config.request_timeout,
            crate::limits::time_limit,
        ))
        .layer(middleware::from_fn_with_state(state.metrics.clone(), track));
    let router = match crate::cors::layer(&state.config.allowed_origins) {
        Some(cors) => router.layer(cors),
        None => router,
    };
    router.with_state(state)
}

async fn not_found(uri: axum::http::Uri) -> Problem {
    Problem::not_found(format!("there is no endpoint at {}", uri.path()))
}

/// The thread `id`, when the caller may reach it; a thread of an agent the token is not for is
/// answered like a missing one.
pub(crate) async fn reachable_thread(
    state: &AppState,
    caller: &Caller,
    id: &str,
) -> Result<Thread, Problem> {
    let thread = state.db.thread(id).await?;
    if caller.may_reach(&thread.agent) {
        Ok(thread)
    } else {
        Err(Problem::not_found(format!("there is no thread {id}")))
    }
}
