//! OAuth for `/mcp`: the server as an OAuth 2.1 resource server, as MCP's authorization
//! specification asks, next to toolhost's own tokens.
//!
//! - **Metadata** (RFC 9728): `GET /.well-known/oauth-protected-resource` plus the resource's
//!   path (`…/mcp`; the bare path too, for clients that try it) answers, without a token, the
//!   resource's identifier, the configured authorization server and the scope `/mcp` needs.
//! - **Challenges**: a request to `/mcp` without a usable token is answered 401 with
//!   `WWW-Authenticate: Bearer resource_metadata="…"` (and `error="invalid_token"` when a token
//!   was given), one without the `run` scope 403 with `error="insufficient_scope"`, so a client
//!   can find the authorization server and ask for the right scope.
//! - **Tokens** are JWT access tokens (RFC 9068) signed by the authorization server's keys,
//!   found through its metadata (RFC 8414, else OpenID discovery) or a configured `jwks_uri`,
//!   with RS*/PS*, ES256/ES384 or EdDSA (never `none` or a shared secret). The issuer must be
//!   the configured one, the audience must include the resource's identifier (a token meant for
//!   another server is refused), the expiry must be ahead (with a leeway for clocks). Scopes are
//!   toolhost's (`run`, `read`, ...), optionally behind a prefix (`toolhost:run`).
//! - **Keys** are fetched at the first token, again after an hour, and again when a token names
//!   a key the set lacks (the server rotated its keys), at most once per `refresh_floor`. When
//!   the server cannot be reached the keys already fetched go on being used; with none, the
//!   request is answered 503 with why.
//!
//! Only `/mcp` takes these tokens: the rest of the API, and the web page, take toolhost's own.

mod jwk;
mod jwt;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use jwk::Jwk;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost_mcp_client::oauth::discovery::{is_loopback_http, metadata_places, split_url};
use toolhost_providers::fetch::{FetchRequest, Fetcher};

pub(crate) use jwt::Grant;

/// How OAuth access tokens are taken at `/mcp`.
#[derive(Clone)]
pub struct OAuthSettings {
    /// The authorization server's issuer identifier (`https://auth.example.com`), exactly as its
    /// tokens' `iss` and its metadata's `issuer` say.
    pub issuer: String,
    /// This server's `/mcp` as clients reach it (`https://tools.example.com/mcp`): the
    /// resource identifier tokens must name in their audience.
    pub resource: String,
    /// Where the authorization server's keys are; found through its metadata when absent.
    pub jwks_uri: Option<String>,
    /// Put before toolhost's scope names in tokens (`toolhost:` makes `toolhost:run`).
    pub scope_prefix: String,
    /// How far the authorization server's clock may be from this one's.
    pub leeway: Duration,
    /// The least time between two fetches of the keys when tokens name keys the set lacks, and
    /// after a fetch failed.
    pub refresh_floor: Duration,
    /// Whether a JWT whose `typ` is `JWT` or missing is taken as an access token, for
    /// authorization servers that do not mark theirs `at+jwt` (off: RFC 9068 asks for it).
    pub accept_plain_jwt: bool,
    /// The HTTP client that fetches the metadata and the keys.
    pub fetcher: Arc<dyn Fetcher>,
}

impl std::fmt::Debug for OAuthSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthSettings")
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .field("jwks_uri", &self.jwks_uri)
            .field("scope_prefix", &self.scope_prefix)
            .field("accept_plain_jwt", &self.accept_plain_jwt)
            .finish_non_exhaustive()
    }
}

/// The scope `/mcp` needs, as toolhost names it.
const NEEDED: crate::auth::Scope = crate::auth::Scope::Run;

/// The most two clocks may be apart.
const MAX_LEEWAY: Duration = Duration::from_secs(300);

/// How long a fetched key set is used before it is fetched again.
const KEYS_MAX_AGE: Duration = Duration::from_secs(3600);

impl OAuthSettings {
    /// Settings with the default leeway (60 s), refresh floor (30 s) and no scope prefix.
    pub fn new(issuer: &str, resource: &str, fetcher: Arc<dyn Fetcher>) -> Self {
        OAuthSettings {
            issuer: issuer.to_owned(),
            resource: resource.to_owned(),
            jwks_uri: None,
            scope_prefix: String::new(),
            leeway: Duration::from_secs(60),
            refresh_floor: Duration::from_secs(30),
            accept_plain_jwt: false,
            fetcher,
        }
    }

    /// Checks the URLs, naming the setting at fault: HTTPS, or HTTP to this machine only; no
    /// fragment; no query in the issuer (RFC 8414).
    pub fn check(&self) -> Result<(), OAuthSettingsError> {
        checked_url("oauth.issuer", &self.issuer).map_err(OAuthSettingsError::Url)?;
        if self.issuer.contains('?') {
            return Err(OAuthSettingsError::IssuerQuery);
        }
        checked_url("oauth.resource", &self.resource).map_err(OAuthSettingsError::Url)?;
        if let Some(uri) = &self.jwks_uri {
            checked_url("oauth.jwks_uri", uri).map_err(OAuthSettingsError::Url)?;
        }
        if self.leeway > MAX_LEEWAY {
            return Err(OAuthSettingsError::Leeway {
                max_s: MAX_LEEWAY.as_secs(),
            });
        }
        Ok(())
    }

    /// The scope a token needs for `/mcp`, as the authorization server names it.
    fn needed_scope(&self) -> String {
        format!("{}{}", self.scope_prefix, NEEDED.as_str())
    }

    /// Where this resource's metadata is (RFC 9728 §3.1: the well-known path put before the
    /// resource's own path).
    pub fn metadata_url(&self) -> String {
        let (origin, path) = split_url(&self.resource);
        format!("{origin}/.well-known/oauth-protected-resource{path}")
    }

    /// The paths the metadata is served at on this server.
    pub(crate) fn metadata_paths(&self) -> Vec<String> {
        let (_, path) = split_url(&self.resource);
        let bare = "/.well-known/oauth-protected-resource".to_owned();
        match path.is_empty() {
            true => vec![bare],
            false => vec![format!("{bare}{path}"), bare],
        }
    }

    /// The metadata document.
    pub(crate) fn metadata(&self) -> Value {
        json!({
            "resource": self.resource,
            "authorization_servers": [self.issuer],
            "scopes_supported": [self.needed_scope()],
            "bearer_methods_supported": ["header"],
            "resource_name": "toolhost",
        })
    }

    /// The toolhost scopes among a token's.
    pub(crate) fn scopes_of(&self, grant: &Grant) -> Vec<crate::auth::Scope> {
        grant
            .scopes
            .iter()
            .filter_map(|s| s.strip_prefix(self.scope_prefix.as_str()))
            .filter_map(crate::auth::Scope::parse)
            .collect()
    }
}

fn checked_url(name: &str, url: &str) -> Result<(), String> {
    let host = if let Some(rest) = url.strip_prefix("https://") {
        rest
    } else if let Some(rest) = url.strip_prefix("http://") {
        if !is_loopback_http(url) {
            return Err(format!(
                "{name} ({url}) must be an https URL (http only to this machine)"
            ));
        }
        rest
    } else {
        return Err(format!("{name} ({url}) must be an https URL"));
    };
    if host.split(['/', '?']).next().unwrap_or("").is_empty() {
        return Err(format!("{name} ({url}) names no host"));
    }
    if url.contains('#') {
        return Err(format!("{name} ({url}) must have no fragment"));
    }
    Ok(())
}

/// Why a token was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The token is not valid for this server (401, `invalid_token`).
    Invalid(String),
    /// The authorization server's keys could not be had (503).
    Unavailable(String),
}

/// The fetched keys.
struct Keys {
    set: Arc<Vec<Jwk>>,
    /// When the keys were last fetched, or a fetch last failed.
    fetched: Option<Instant>,
    jwks_uri: Option<String>,
    /// Why the last fetch failed, while no keys were had at all.
    failed: Option<String>,
}

/// Checks OAuth access tokens for `/mcp` against the authorization server's keys.
pub(crate) struct Verifier {
    settings: OAuthSettings,
    keys: tokio::sync::Mutex<Keys>,
}

impl Verifier {
    pub(crate) fn new(settings: OAuthSettings) -> Self {
        let jwks_uri = settings.jwks_uri.clone();
        Verifier {
            settings,
            keys: tokio::sync::Mutex::new(Keys {
                set: Arc::new(Vec::new()),
                fetched: None,
                jwks_uri,
                failed: None,
            }),
        }
    }

    pub(crate) fn settings(&self) -> &OAuthSettings {
        &self.settings
    }

    /// Checks `token`: its signature by one of the authorization server's keys, then its claims.
    pub(crate) async fn check(&self, token: &str) -> Result<Grant, Refusal> {
        let header =
            jwt::header(token, self.settings.accept_plain_jwt).map_err(Refusal::Invalid)?;
        let keys = self.keys_for(&header).await?;
        let fitting = jwt::candidates(&header, &keys).map_err(Refusal::Invalid)?;
        if fitting.is_empty() {
            return Err(Refusal::Invalid(match &header.kid {
                Some(kid) => format!("the authorization server has no key {kid:?}"),
                None => format!("the authorization server has no {} key", header.alg),
            }));
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let expected = jwt::Expected {
            issuer: &self.settings.issuer,
            audience: &self.settings.resource,
            now,
            leeway: self.settings.leeway.as_secs() as i64,
        };
        jwt::verify(token, &header, &fitting, &expected).map_err(Refusal::Invalid)
    }

    /// The key set to check a token with `header` against: fetched when there is none or it is
    /// old, and again when no key fits (at most once per refresh floor).
    async fn keys_for(&self, header: &jwt::Header) -> Result<Arc<Vec<Jwk>>, Refusal> {
        let mut keys = self.keys.lock().await;
        let stale = keys.fetched.is_none_or(|at| at.elapsed() > KEYS_MAX_AGE);
        let lacking = || matches!(jwt::candidates(header, &keys.set), Ok(k) if k.is_empty());
        // A failed fetch is not tried again before the floor either: tokens cannot make this
        // server hammer an authorization server that is down.
        let may_refresh = keys
            .fetched
            .is_none_or(|at| at.elapsed() >= self.settings.refresh_floor);
        if (stale || lacking()) && may_refresh {
            match self.fetch_keys(&mut keys.jwks_uri).await {
                Ok(set) => {
                    keys.set = Arc::new(set);
                    keys.failed = None;
                }
                Err(why) if keys.set.is_empty() => keys.failed = Some(why),
                Err(why) => {
                    tracing::warn!(%why, "the authorization server's keys could not be fetched again; the old ones are used");
                }
            }
            keys.fetched = Some(Instant::now());
        }
        match &keys.failed {
            Some(why) if keys.set.is_empty() => Err(Refusal::Unavailable(format!(
                "the authorization server's keys could not be fetched: {why}"
            ))),
            _ => Ok(keys.set.clone()),
        }
    }

    async fn fetch_keys(&self, jwks_uri: &mut Option<String>) -> Result<Vec<Jwk>, String> {
        let uri = match jwks_uri {
            Some(uri) => uri.clone(),
            None => {
                let found = self.discover().await?;
                *jwks_uri = Some(found.clone());
                found
            }
        };
        let document = self.fetch_json(&uri).await?;
        jwk::parse_set(&document).map_err(|why| format!("{uri}: {why}"))
    }

    /// The `jwks_uri` of the issuer's metadata, at the places MCP's clients look too (RFC 8414's
    /// well-known path, then OpenID discovery's).
    async fn discover(&self) -> Result<String, String> {
        let issuer = &self.settings.issuer;
        let mut failures = Vec::new();
        for place in metadata_places(issuer) {
            match self.fetch_json(&place).await {
                Ok(metadata) => {
                    let named = metadata.get("issuer").and_then(Value::as_str);
                    if named != Some(issuer.as_str()) {
                        return Err(format!(
                            "the metadata at {place} is of issuer {:?}, not {issuer:?}",
                            named.unwrap_or("")
                        ));
                    }
                    let uri = metadata
                        .get("jwks_uri")
                        .and_then(Value::as_str)
                        .ok_or_else(|| format!("the metadata at {place} has no \"jwks_uri\""))?;
                    checked_url("the metadata's jwks_uri", uri)?;
                    return Ok(uri.to_owned());
                }
                Err(why) => failures.push(why),
            }
        }
        Err(failures.join("; "))
    }

    async fn fetch_json(&self, url: &str) -> Result<Value, String> {
        let answer = self
            .settings
            .fetcher
            .fetch(FetchRequest {
                method: "GET".to_owned(),
                url: url.to_owned(),
                headers: vec![("accept".to_owned(), "application/json".to_owned())],
                body: None,
            })
            .await
            .map_err(|why| format!("{url}: {why}"))?;
        if answer.status != 200 {
            return Err(format!("{url} answered {}", answer.status));
        }
        serde_json::from_slice(&answer.body).map_err(|e| format!("{url} is not JSON: {e}"))
    }
}

/// A 401 or 403 with the challenge RFC 6750 and RFC 9728 describe, and a problem document.
pub(crate) fn challenge(
    settings: &OAuthSettings,
    problem: crate::Problem,
    error: Option<&str>,
) -> Response {
    // A quoted string of the header may not hold quotes or backslashes.
    let clean = |s: &str| s.replace(['"', '\\'], "'");
    let mut value = format!("Bearer resource_metadata=\"{}\"", settings.metadata_url());
    if let Some(error) = error {
        value.push_str(&format!(", error=\"{error}\""));
    }
    if problem.status == StatusCode::FORBIDDEN || error.is_none() {
        value.push_str(&format!(", scope=\"{}\"", clean(&settings.needed_scope())));
    }
    if error.is_some() {
        value.push_str(&format!(
            ", error_description=\"{}\"",
            clean(&problem.detail)
        ));
    }
    let fallback = format!("Bearer resource_metadata=\"{}\"", settings.metadata_url());
    let mut response = problem.into_response();
    // A description with bytes a header cannot hold is left out, never the whole challenge.
    if let Ok(value) = HeaderValue::from_str(&value).or_else(|_| HeaderValue::from_str(&fallback)) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// Why OAuth settings cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthSettingsError {
    /// A URL that is not an https one (or an http one to this machine), said with its setting.
    #[error("{0}")]
    Url(String),
    /// An issuer with a query.
    #[error("oauth.issuer must have no query")]
    IssuerQuery,
    /// A leeway longer than toolhost allows.
    #[error(
        "oauth.leeway_s must be at most {max_s} s: clocks further apart let expired tokens in"
    )]
    Leeway {
        /// The most, in seconds.
        max_s: u64,
    },
}

#[cfg(test)]
mod tests;
