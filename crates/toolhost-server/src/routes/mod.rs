//! The routes: one module per resource.

mod agents;
mod approvals;
mod events;
mod files;
mod health;
pub(crate) mod mcp_login;
mod mcp_pins;
mod mcp_servers;
mod messages;
mod metrics;
mod table;
mod threads;
mod tool_calls;
mod tools;
mod variables;

use crate::auth::Caller;
use crate::metrics::layer::track;
use crate::problem::Problem;
use crate::state::AppState;
use axum::extract::DefaultBodyLimit;
use axum::{middleware, Extension, Router};
use table::Table;
use toolhost_store::Thread;

/// Every route of the API, with the body cap and the answer for unknown paths. Each route is
/// added from its handler's `#[utoipa::path]` attribute (see [`Table`]), so the OpenAPI document
/// served at `/v1/openapi.json` lists exactly the routes there are.
pub(crate) fn router(state: AppState) -> Router {
    let limit = state.config.max_body_bytes;
    let table = Table::new()
        .add::<health::__path_health, _, _>(health::health)
        .add::<health::__path_ready, _, _>(health::ready)
        .add::<crate::openapi::__path_document, _, _>(crate::openapi::document)
        .add::<agents::__path_list, _, _>(agents::list)
        .add::<threads::__path_list, _, _>(threads::list)
        .add::<threads::__path_create, _, _>(threads::create)
        .add::<threads::__path_get, _, _>(threads::get)
        .add::<threads::__path_delete, _, _>(threads::delete)
        .add::<threads::__path_stop, _, _>(threads::stop)
        .add::<threads::__path_run, _, _>(threads::run)
        .add::<files::__path_list, _, _>(files::list)
        .add_rest::<files::__path_download, _, _>(files::download)
        .add::<messages::__path_list, _, _>(messages::list)
        .add::<messages::__path_send, _, _>(messages::send)
        .add::<messages::__path_work_state, _, _>(messages::work_state)
        .add::<approvals::__path_list, _, _>(approvals::list)
        .add::<approvals::__path_decide, _, _>(approvals::decide)
        .add::<mcp_pins::__path_accept, _, _>(mcp_pins::accept)
        .add::<mcp_pins::__path_accept_from_thread, _, _>(mcp_pins::accept_from_thread)
        .add::<mcp_servers::__path_list, _, _>(mcp_servers::list)
        .add::<mcp_login::__path_login, _, _>(mcp_login::login)
        .add::<variables::__path_get, _, _>(variables::get)
        .add::<variables::__path_give, _, _>(variables::give)
        .add::<events::__path_thread, _, _>(events::thread)
        .add::<events::__path_all, _, _>(events::all)
        .add::<tools::__path_list, _, _>(tools::list)
        .add::<tools::__path_validate, _, _>(tools::validate)
        .add::<tool_calls::__path_call, _, _>(tool_calls::call)
        .add::<metrics::__path_metrics, _, _>(metrics::metrics);
    let document = crate::openapi::Document::of(table.paths);
    let api = table
        .router
        // The web page's files: outside the API and its document.
        .merge(crate::web::routes())
        .fallback(not_found)
        .layer(Extension(document))
        .layer(middleware::from_fn(crate::plain_errors::as_problem));
    // MCP: a protocol of its own, outside the API's document and its problem documents (its
    // errors are JSON-RPC's, with their codes).
    let router = match &state.config.mcp_agent {
        Some(agent) => api.merge(crate::mcp::routes(&state, agent)),
        None => api,
    };
    // Where an authorization server sends a person back after an MCP login: a page for a
    // browser, outside the API and its problem documents.
    let router = router.route(mcp_login::CALLBACK, axum::routing::get(mcp_login::callback));
    let router = router
        .layer(DefaultBodyLimit::max(limit))
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
