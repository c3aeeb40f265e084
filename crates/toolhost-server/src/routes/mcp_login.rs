//! A person authorizes toolhost for an MCP server that asks for OAuth, through the server
//! instead of a terminal: `POST /v1/mcp/servers/{name}/login` answers the address to open, and
//! the authorization server sends the person back to `/mcp/oauth/callback` on this server,
//! which ends the login (see `toolhost_mcp_client::oauth::login`). The grant is kept in the
//! store, for every process of the project.

use crate::auth::{Caller, Scope};
use crate::logins::PATIENCE;
use crate::problem::Problem;
use crate::state::AppState;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use toolhost_mcp_client::oauth::login::{finish, page_html, start, LoginError, Started};

/// The path the authorization server sends the person back to.
pub(crate) const CALLBACK: &str = "/mcp/oauth/callback";
#[utoipa::path(
    post, path = "/v1/mcp/servers/{name}/login", operation_id = "loginMcpServer", tag = "mcp",
    summary = "Authorize toolhost for an MCP server that asks for OAuth",
    description = "Finds the server's authorization server from its refusal and, for the authorization code grant, answers the address a person opens; the authorization server sends the person back to this server (`/mcp/oauth/callback` on the host this request was sent to), which keeps the grant. A client credentials grant is got at once.",
    params(("name" = String, Path, description = "The MCP server (a file of agents/mcp/).")),
    responses(
        (status = 200, description = "The address to open, or the grant got at once.", body = crate::openapi::answers::McpLoginStarted),
        (status = 404, description = "The project has no MCP server of that name at a URL with `oauth`, or keeps no grants."),
        (status = 409, description = "The MCP server needs no login (it lets toolhost in without a token), or its authorization server or its file does not allow one (another issuer than the pinned one, no PKCE, no client); the detail says which."),
        (status = 502, description = "The MCP server or its authorization server refused or could not be reached; the detail says which and why."),
        (status = 500, description = "This server could not do its part (keep the grant, make the authorization's random values)."),
    ),
    security(("bearer" = ["admin"])),
)]
pub(super) async fn login(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Result<Json<Value>, Problem> {
    caller.require(Scope::Admin)?;
    let Some((def, http, vault)) = state.runtime().mcp_login_parts(&name) else {
        return Err(Problem::not_found(format!(
            "the project has no MCP server \"{name}\" at a URL with `oauth` whose grants this server keeps"
        )));
    };
    let origin = crate::cors::request_origin(&headers).ok_or_else(|| {
        Problem::bad_request("the request names no Host to send the person back to")
    })?;
    let redirect_uri = format!("{origin}{CALLBACK}");
    let started = start(&def, &*http, &vault, &redirect_uri)
        .await
        .map_err(|why| login_problem(&why))?;
    Ok(Json(match started {
        Started::Granted(_) => json!({"server": name, "authorized": true}),
        Started::Pending(pending) => {
            let url = pending.authorize_url.clone();
            state.logins.keep(*pending);
            json!({"server": name, "authorized": false, "authorize_url": url,
                   "expires_in_s": PATIENCE.as_secs()})
        }
    }))
}

/// What the authorization server sends the person back with.
#[derive(Debug, Deserialize)]
pub(crate) struct Answer {
    state: Option<String>,
    code: Option<String>,
    /// The issuer the answer names (RFC 9207).
    iss: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// A small page for the person's browser.
fn page(status: StatusCode, text: &str) -> Response {
    let mut response = (status, page_html(text)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `GET /mcp/oauth/callback`: ends the login whose `state` the answer carries. Needs no token
/// (it is the person's browser): only an answer to a login this server started, within its
/// time, does anything.
pub(crate) async fn callback(
    State(state): State<AppState>,
    Query(answer): Query<Answer>,
) -> Response {
    let Some(pending) = answer.state.as_deref().and_then(|s| state.logins.take(s)) else {
        return page(
            StatusCode::BAD_REQUEST,
            "This answer is for no login toolhost is waiting for (it ended, or it was never started here).",
        );
    };
    let server = pending.server().to_owned();
    if let Some(error) = answer.error {
        let described = answer
            .error_description
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        return page(
            StatusCode::OK,
            &format!(
                "toolhost was not authorized for MCP server \"{server}\": {error}{described}."
            ),
        );
    }
    let Some(code) = answer.code else {
        return page(StatusCode::BAD_REQUEST, "The answer holds no code.");
    };
    let Some((_, http, vault)) = state.runtime().mcp_login_parts(&server) else {
        return page(
            StatusCode::NOT_FOUND,
            &format!("The project no longer has MCP server \"{server}\"."),
        );
    };
    match finish(pending, &code, answer.iss.as_deref(), &*http, &vault).await {
        Ok(_) => page(
            StatusCode::OK,
            &format!(
                "toolhost is authorized for MCP server \"{server}\". You can close this page."
            ),
        ),
        Err(why) => page(
            login_problem(&why).status,
            &format!("toolhost could not be authorized for MCP server \"{server}\": {why}"),
        ),
    }
}

/// The answer to a login that did not start: the project's or the servers' side of it.
fn login_problem(why: &LoginError) -> Problem {
    match why {
        LoginError::NotAtUrl { .. }
        | LoginError::NoOAuth { .. }
        | LoginError::NeedsNoLogin { .. }
        | LoginError::NotAllowed(_) => {
            Problem::new(StatusCode::CONFLICT, "no-login", why.to_string())
        }
        LoginError::Vault(_) | LoginError::Local(_) => Problem::internal(why.to_string()),
        LoginError::Server(_)
        | LoginError::Discovery(_)
        | LoginError::Token(_)
        | LoginError::Answer(_)
        | LoginError::TimedOut { .. } => {
            Problem::new(StatusCode::BAD_GATEWAY, "bad-gateway", why.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_that_cannot_be_had_is_a_conflict_and_a_failing_server_a_bad_gateway() {
        let server = || "docs".to_owned();
        for why in [
            LoginError::NeedsNoLogin { server: server() },
            LoginError::NoOAuth { server: server() },
            LoginError::NotAtUrl { server: server() },
            LoginError::NotAllowed("no PKCE".to_owned()),
        ] {
            assert_eq!(login_problem(&why).status, StatusCode::CONFLICT, "{why}");
        }
        for why in [
            LoginError::Server("cannot be reached".to_owned()),
            LoginError::Token("refused".to_owned()),
            LoginError::TimedOut { seconds: 1 },
        ] {
            assert_eq!(login_problem(&why).status, StatusCode::BAD_GATEWAY, "{why}");
        }
        assert_eq!(
            login_problem(&LoginError::Local("no port".to_owned())).status,
            StatusCode::INTERNAL_SERVER_ERROR
        );
    }
}
