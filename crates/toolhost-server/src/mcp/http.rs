//! `/mcp` on the server: the MCP handler over streamable HTTP, behind the API's tokens or an
//! OAuth authorization server's (see [`crate::oauth`]), each session kept to the token that
//! opened it. A session's streams can be resumed with `Last-Event-ID` (see `replay`), and with
//! [`crate::ServerConfig::mcp_stream_hold`] a call's stream is let go of after that long.

use super::replay::{Resumable, StreamEvents};
use super::{Answering, McpTools};
use crate::auth::{Caller, Scope};
use crate::oauth::{challenge, OAuthSettings, Refusal, Verifier};
use crate::state::AppState;
use crate::Problem;
use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The header that carries a 2025-11-25 session's id.
const SESSION: &str = "mcp-session-id";

/// `/mcp`: the handler of the configured agent over streamable HTTP, behind bearer tokens (the
/// `run` scope, and the agent among the token's), with the transport's own checks of `Host`
/// (this machine's names unless origins are configured) and `Origin` (the configured origins)
/// against DNS rebinding; with OAuth configured, the protected resource's metadata too.
pub(crate) fn routes(state: &AppState, agent: &str) -> axum::Router<AppState> {
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
        Arc::new(Resumable::new(StreamEvents::default())),
        config,
    );
    let gate = Gate {
        state: state.clone(),
        agent: agent.to_owned(),
        oauth: state
            .config
            .oauth
            .clone()
            .map(|s| Arc::new(Verifier::new(s))),
        owners: Arc::new(Mutex::new(Owners::default())),
        hold: state.config.mcp_stream_hold,
    };
    let mut router = axum::Router::new()
        .route_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(gate, require_caller));
    if let Some(oauth) = &state.config.oauth {
        let metadata = oauth.metadata();
        for path in oauth.metadata_paths() {
            let metadata = metadata.clone();
            router = router.route(
                &path,
                axum::routing::get(move || async move { axum::Json(metadata) }),
            );
        }
    }
    router
}

#[derive(Clone)]
struct Gate {
    state: AppState,
    agent: String,
    oauth: Option<Arc<Verifier>>,
    owners: Arc<Mutex<Owners>>,
    /// How long a session's call may hold its POST stream (see [`held`]).
    hold: Option<Duration>,
}

/// Which token opened which session, for the newest [`Owners::MAX`] sessions.
#[derive(Default)]
struct Owners {
    by_session: HashMap<String, String>,
    order: VecDeque<String>,
}

impl Owners {
    /// Sessions remembered; the oldest is forgotten past this (its client starts a new one).
    const MAX: usize = 100_000;

    fn record(&mut self, session: &str, owner: &str) {
        if self
            .by_session
            .insert(session.to_owned(), owner.to_owned())
            .is_none()
        {
            self.order.push_back(session.to_owned());
        }
        while self.order.len() > Self::MAX {
            if let Some(old) = self.order.pop_front() {
                self.by_session.remove(&old);
            }
        }
    }

    fn forget(&mut self, session: &str) {
        if self.by_session.remove(session).is_some() {
            self.order.retain(|s| s != session);
        }
    }
}

/// Lets a request to `/mcp` through when its token may run the agent's tools and, naming a
/// session, when that session is its own.
async fn require_caller(State(gate): State<Gate>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let caller = match identify(&gate, &parts).await {
        Ok(caller) => caller,
        Err(refused) => return refused,
    };
    if let Err(problem) = caller
        .require(Scope::Run)
        .and_then(|()| caller.require_agent(&gate.agent))
    {
        return match &gate.oauth {
            Some(oauth) => challenge(oauth.settings(), problem, Some("insufficient_scope")),
            None => problem.into_response(),
        };
    }
    let session = parts
        .headers
        .get(SESSION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(id) = &session {
        let owners = gate.owners.lock().unwrap_or_else(|e| e.into_inner());
        if owners.by_session.get(id) != Some(&caller.token_id) {
            return Problem::not_found(format!("there is no MCP session {id} of this token"))
                .into_response();
        }
    }
    let closing = parts.method == Method::DELETE;
    let posted = parts.method == Method::POST;
    let mut response = next.run(Request::from_parts(parts, body)).await;
    // A session ended by DELETE is done, not accepted for later: the SDKs take 202 for a
    // failure to end it.
    if closing && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    if let (Some(hold), true, Some(_)) = (gate.hold, posted, &session) {
        response = held(response, hold);
    }
    let mut owners = gate.owners.lock().unwrap_or_else(|e| e.into_inner());
    match session {
        None => {
            if let Some(opened) = response
                .headers()
                .get(SESSION)
                .and_then(|v| v.to_str().ok())
            {
                owners.record(opened, &caller.token_id);
            }
        }
        Some(id) if closing && response.status().is_success() => owners.forget(&id),
        Some(_) => {}
    }
    response
}

/// `response`, an event stream of a session's call, closed after `hold` (SEP-1699): the
/// client resumes it with a GET carrying `Last-Event-ID`, which replays what it missed and stays
/// open until the answer (see `replay`). The stream ends between events, never inside one.
fn held(response: Response, hold: Duration) -> Response {
    use futures_util::StreamExt;
    let streams = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !streams {
        return response;
    }
    let (parts, body) = response.into_parts();
    let events = body.into_data_stream().take_until(tokio::time::sleep(hold));
    Response::from_parts(parts, axum::body::Body::from_stream(events))
}

/// The caller of a request: a toolhost token's holder, or with OAuth configured an access
/// token's; a refusal carries the challenge that tells the client where to get a token.
async fn identify(gate: &Gate, parts: &axum::http::request::Parts) -> Result<Caller, Response> {
    let given = match parts.headers.get(header::AUTHORIZATION).map(|v| v.to_str()) {
        None => None,
        Some(Ok(value)) => Some(value),
        Some(Err(_)) => {
            let problem = Problem::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "the Authorization header is not plain text",
            );
            return Err(refuse(
                gate.oauth.as_deref().map(Verifier::settings),
                problem,
                true,
            ));
        }
    };
    let Some(oauth) = &gate.oauth else {
        return crate::auth::authenticate(&gate.state, given)
            .await
            .map_err(IntoResponse::into_response);
    };
    let bearer = given.and_then(|v| {
        v.split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
    });
    match bearer {
        Some(token) if !token.starts_with("thk_") => match oauth.check(token).await {
            Ok(grant) => Ok(Caller::from_oauth(
                &grant.subject,
                grant.client.as_deref(),
                oauth.settings().scopes_of(&grant),
            )),
            Err(Refusal::Invalid(why)) => {
                let problem = Problem::new(
                    StatusCode::UNAUTHORIZED,
                    "unauthorized",
                    format!("the access token is not valid: {why}"),
                );
                Err(refuse(Some(oauth.settings()), problem, true))
            }
            Err(Refusal::Unavailable(why)) => {
                Err(
                    Problem::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", why)
                        .into_response(),
                )
            }
        },
        _ => crate::auth::authenticate(&gate.state, given)
            .await
            .map_err(|problem| refuse(Some(oauth.settings()), problem, given.is_some())),
    }
}

/// A refusal: with OAuth, a challenge (`invalid_token` when a token was given).
fn refuse(oauth: Option<&OAuthSettings>, problem: Problem, token_given: bool) -> Response {
    match oauth {
        Some(settings) => challenge(settings, problem, token_given.then_some("invalid_token")),
        None => problem.into_response(),
    }
}
