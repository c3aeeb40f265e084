//! `/mcp` on the server: the MCP handler over streamable HTTP, behind the API's tokens.

use super::{Answering, McpTools};

/// `/mcp`: the handler of the configured agent over streamable HTTP, behind the API's bearer
/// tokens (the `run` scope, and the agent among the token's), with the transport's own checks
/// of `Host` (this machine's names unless origins are configured) and `Origin` (the configured
/// origins) against DNS rebinding.
pub(crate) fn routes(
    state: &crate::state::AppState,
    agent: &str,
) -> axum::Router<crate::state::AppState> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let tools = McpTools::on_slot(state.slot.clone(), agent, Answering::Http);
    let mut config = StreamableHttpServerConfig::default();
    if !state.config.allowed_origins.is_empty() {
        config.allowed_origins = state.config.allowed_origins.clone();
        let hosts = state.config.allowed_origins.iter().filter_map(|o| {
            o.split_once("://")
                .map(|(_, rest)| rest.split('/').next().unwrap_or(rest).to_owned())
        });
        config.allowed_hosts.extend(hosts);
    }
    let service = StreamableHttpService::new(
        move || Ok(tools.for_new_session()),
        std::sync::Arc::new(LocalSessionManager::default()),
        config,
    );
    let agent = agent.to_owned();
    axum::Router::new()
        .route_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(
            (state.clone(), agent),
            require_caller,
        ))
}

/// Lets a request to `/mcp` through when its token may run the agent's tools.
async fn require_caller(
    axum::extract::State((state, agent)): axum::extract::State<(crate::state::AppState, String)>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::extract::FromRequestParts;
    use axum::response::IntoResponse;
    let (mut parts, body) = request.into_parts();
    let allowed = match crate::auth::Caller::from_request_parts(&mut parts, &state).await {
        Ok(caller) => caller
            .require(crate::auth::Scope::Run)
            .and_then(|()| caller.require_agent(&agent)),
        Err(problem) => Err(problem),
    };
    match allowed {
        Ok(()) => {
            next.run(axum::extract::Request::from_parts(parts, body))
                .await
        }
        Err(problem) => problem.into_response(),
    }
}
