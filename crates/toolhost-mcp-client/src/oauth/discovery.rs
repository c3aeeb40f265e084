//! Finding a server's authorization server: the `WWW-Authenticate` challenge, the protected
//! resource metadata (RFC 9728) and the authorization server's metadata (RFC 8414 and OpenID
//! discovery), in the order MCP's authorization specification gives.

use serde_json::Value;
use toolhost_providers::fetch::{FetchRequest, Fetcher};

/// What a `WWW-Authenticate: Bearer …` challenge says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata`: where the protected resource metadata is.
    pub resource_metadata: Option<String>,
    /// `scope`: what the request needs.
    pub scope: Option<String>,
    /// `error`: `invalid_token`, `insufficient_scope`, ...
    pub error: Option<String>,
}

/// Reads the parameters of a Bearer challenge (`Bearer k="v", k2=v2`); other schemes' and
/// unknown parameters are passed over.
pub fn parse_challenge(header: &str) -> Challenge {
    // The scheme's name starts the header or follows another challenge's comma.
    let lower = header.to_ascii_lowercase();
    let at = lower.match_indices("bearer").map(|(i, _)| i).find(|&i| {
        let before = lower[..i].trim_end();
        (before.is_empty() || before.ends_with(','))
            && lower[i + "bearer".len()..]
                .chars()
                .next()
                .is_none_or(|c| c == ' ' || c == ',')
    });
    let Some(at) = at else {
        return Challenge::default();
    };
    let mut rest = header[at + "bearer".len()..].trim_start();
    let mut challenge = Challenge::default();
    while let Some(eq) = rest.find('=') {
        let name = rest[..eq]
            .trim()
            .trim_start_matches(',')
            .trim()
            .to_ascii_lowercase();
        let after = rest[eq + 1..].trim_start();
        let (value, next) = if let Some(quoted) = after.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => value.push(c),
                }
            }
            (value, &quoted[end.min(quoted.len())..])
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim().to_owned(), &after[end..])
        };
        match name.as_str() {
            "resource_metadata" => challenge.resource_metadata = Some(value),
            "scope" => challenge.scope = Some(value),
            "error" => challenge.error = Some(value),
            _ => {}
        }
        rest = next.trim_start().trim_start_matches(',');
    }
    challenge
}

/// What toolhost learned of a server's authorization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    /// The resource identifier tokens are asked for.
    pub resource: String,
    /// The scopes the resource lists (`scopes_supported`), if any.
    pub resource_scopes: Vec<String>,
    /// The authorization server.
    pub issuer: String,
    /// Where a person authorizes, for the authorization code grant.
    pub authorization_endpoint: Option<String>,
    /// Where tokens are had.
    pub token_endpoint: String,
    /// Where clients register themselves, if the server lets them.
    pub registration_endpoint: Option<String>,
    /// How clients may prove themselves at the token endpoint.
    pub auth_methods: Vec<String>,
    /// Whether the server takes a client ID metadata document's URL as a client id.
    pub client_id_documents: bool,
    /// The PKCE methods the server lists; `None` when it lists none.
    pub pkce_methods: Option<Vec<String>>,
    /// The issuer as the authorization server's metadata writes it (what an answer's `iss` is
    /// compared with, exactly), when it published metadata.
    pub metadata_issuer: Option<String>,
    /// Whether the server puts its issuer in each authorization answer (RFC 9207's
    /// `authorization_response_iss_parameter_supported`): then an answer without it is refused.
    pub iss_in_answers: bool,
}

/// `scheme://authority` and the path (no trailing `/`; empty for the root) of `url`.
pub fn split_url(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let end = url.find(['?', '#']).unwrap_or(url.len());
    match url[after_scheme..end].find('/') {
        Some(i) => (
            &url[..after_scheme + i],
            url[after_scheme + i..end].trim_end_matches('/'),
        ),
        None => (&url[..end], ""),
    }
}

/// Whether `resource` is the server's URL or a parent of it (same origin, its path a prefix
/// ending at a segment).
pub(crate) fn covers(resource: &str, server: &str) -> bool {
    let (r_origin, r_path) = split_url(resource);
    let (s_origin, s_path) = split_url(server);
    r_origin.eq_ignore_ascii_case(s_origin)
        && (r_path.is_empty()
            || s_path == r_path
            || s_path
                .strip_prefix(r_path)
                .is_some_and(|rest| rest.starts_with('/')))
}

/// Refuses a URL toolhost would send OAuth requests to unless it is https, or http to this
/// machine: a token, code or secret never travels in clear, and a server cannot point toolhost
/// at plain-text hosts of a network.
pub(crate) fn secure(what: &str, url: &str) -> Result<(), String> {
    if (url.starts_with("https://") && url.len() > "https://".len()) || is_loopback_http(url) {
        return Ok(());
    }
    Err(format!(
        "{what} {url:?} is not an https URL (http only to this machine), so toolhost does not use it"
    ))
}

/// Whether `url` is plain http to this machine (`localhost`, `127.0.0.1`, `[::1]`, any port).
pub fn is_loopback_http(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let name = match host.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
        _ => host,
    };
    ["localhost", "127.0.0.1", "[::1]"].contains(&name)
}

/// Fetches `url` as JSON: `Ok(None)` when it is not there (any status but 200, or no JSON
/// object), `Err` when it could not be fetched at all.
pub(crate) async fn fetch_json(http: &dyn Fetcher, url: &str) -> Result<Option<Value>, String> {
    let answer = http
        .fetch(FetchRequest {
            method: "GET".to_owned(),
            url: url.to_owned(),
            headers: vec![
                ("accept".to_owned(), "application/json".to_owned()),
                ("mcp-protocol-version".to_owned(), "2025-11-25".to_owned()),
            ],
            body: None,
        })
        .await
        .map_err(|why| format!("{url}: {why}"))?;
    if answer.status != 200 {
        return Ok(None);
    }
    Ok(serde_json::from_slice::<Value>(&answer.body)
        .ok()
        .filter(Value::is_object))
}

fn strings(value: &Value, field: &str) -> Vec<String> {
    value
        .get(field)
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn text(value: &Value, field: &str) -> Option<String> {
    value.get(field).and_then(Value::as_str).map(str::to_owned)
}

/// Where the authorization server `issuer` may publish its metadata, in the order MCP asks
/// clients to try.
pub fn metadata_places(issuer: &str) -> Vec<String> {
    let (origin, path) = split_url(issuer);
    if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    }
}

/// Why the authorization of an MCP server could not be discovered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiscoveryError {
    /// No place that may hold the resource's metadata could be reached (each place and why).
    #[error("{0}")]
    Unreachable(String),
    /// The resource's metadata says what toolhost refuses (another resource, no server).
    #[error("{0}")]
    Resource(String),
    /// The authorization server publishes no usable metadata (missing, of another issuer, no
    /// token endpoint).
    #[error("{0}")]
    AuthorizationServer(String),
    /// An address that is neither `https` nor `http` to this machine.
    #[error("{0}")]
    Insecure(String),
}

/// Finds the authorization server of the MCP server at `server` from its challenge.
pub async fn discover(
    http: &dyn Fetcher,
    server: &str,
    challenge: &Challenge,
) -> Result<Discovered, DiscoveryError> {
    let origin = split_url(server).0;
    let (resource, resource_scopes, issuer, legacy) =
        match resource_metadata(http, server, challenge)
            .await
            .map_err(DiscoveryError::Unreachable)?
        {
            Some((place, metadata)) => {
                let (resource, scopes, issuer) = protected_resource(&place, &metadata, server)
                    .map_err(DiscoveryError::Resource)?;
                (resource, scopes, issuer, false)
            }
            // The 2025-03-26 revision: the server is its own authorization server.
            None => (server.to_owned(), Vec::new(), origin.to_owned(), true),
        };
    let metadata = server_metadata(http, &issuer, legacy)
        .await
        .map_err(DiscoveryError::AuthorizationServer)?;
    let token_endpoint = text(&metadata, "token_endpoint").ok_or_else(|| {
        DiscoveryError::AuthorizationServer(format!(
            "the authorization server {issuer} names no token endpoint"
        ))
    })?;
    secure("the token endpoint", &token_endpoint).map_err(DiscoveryError::Insecure)?;
    for (what, field) in [
        ("the authorization endpoint", "authorization_endpoint"),
        ("the registration endpoint", "registration_endpoint"),
    ] {
        if let Some(url) = text(&metadata, field) {
            secure(what, &url).map_err(DiscoveryError::Insecure)?;
        }
    }
    Ok(Discovered {
        resource,
        resource_scopes,
        issuer,
        authorization_endpoint: text(&metadata, "authorization_endpoint"),
        token_endpoint,
        registration_endpoint: text(&metadata, "registration_endpoint"),
        auth_methods: strings(&metadata, "token_endpoint_auth_methods_supported"),
        client_id_documents: metadata
            .get("client_id_metadata_document_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        pkce_methods: metadata
            .get("code_challenge_methods_supported")
            .map(|_| strings(&metadata, "code_challenge_methods_supported")),
        metadata_issuer: text(&metadata, "issuer"),
        iss_in_answers: metadata
            .get("authorization_response_iss_parameter_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

/// The protected resource metadata of `server` (RFC 9728) and where it was found: where the
/// challenge names, else at the well-known places of the server's path and origin. `None` when
/// no place has it (a server of the 2025-03-26 revision); an error when none could be reached.
async fn resource_metadata(
    http: &dyn Fetcher,
    server: &str,
    challenge: &Challenge,
) -> Result<Option<(String, Value)>, String> {
    let (origin, path) = split_url(server);
    let mut places = Vec::new();
    if let Some(named) = &challenge.resource_metadata {
        places.push(named.clone());
    }
    if !path.is_empty() {
        places.push(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ));
    }
    places.push(format!("{origin}/.well-known/oauth-protected-resource"));
    let mut unreachable = Vec::new();
    for place in &places {
        if secure("the resource metadata", place).is_err() {
            continue;
        }
        // A place that cannot be reached is passed over for the next, as a missing one is.
        match fetch_json(http, place).await {
            Ok(Some(found)) => return Ok(Some((place.clone(), found))),
            Ok(None) => {}
            Err(why) => unreachable.push(why),
        }
    }
    if unreachable.is_empty() {
        Ok(None)
    } else {
        Err(unreachable.join("; "))
    }
}

/// What the resource metadata found at `place` says: the resource (which must cover
/// `server`), its scopes, and its first authorization server (which must be secure).
fn protected_resource(
    place: &str,
    metadata: &Value,
    server: &str,
) -> Result<(String, Vec<String>, String), String> {
    let resource = text(metadata, "resource")
        .ok_or_else(|| format!("the resource metadata at {place} names no \"resource\""))?;
    if !covers(&resource, server) {
        return Err(format!(
            "the resource metadata at {place} is for {resource:?}, not for {server:?}: toolhost refuses to get tokens for another resource"
        ));
    }
    let issuer = strings(metadata, "authorization_servers")
        .into_iter()
        .next()
        .ok_or_else(|| format!("the resource metadata at {place} names no authorization server"))?;
    secure("the authorization server", &issuer)?;
    Ok((resource, strings(metadata, "scopes_supported"), issuer))
}

/// The authorization server's metadata (RFC 8414 or OpenID), of the issuer it names; for a
/// server of the 2025-03-26 revision (`legacy`) without any, the default endpoints.
async fn server_metadata(http: &dyn Fetcher, issuer: &str, legacy: bool) -> Result<Value, String> {
    for place in metadata_places(issuer) {
        if let Some(found) = fetch_json(http, &place).await? {
            let named = text(&found, "issuer").unwrap_or_default();
            // Under the 2025-03-26 revision the server's origin is where the metadata is, not
            // an issuer anyone named, so there is nothing to compare.
            if !legacy && named.trim_end_matches('/') != issuer.trim_end_matches('/') {
                return Err(format!(
                    "the authorization server metadata at {place} is of issuer {named:?}, not {issuer:?}"
                ));
            }
            return Ok(found);
        }
    }
    if legacy {
        return Ok(serde_json::json!({
            "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": format!("{issuer}/token"),
            "registration_endpoint": format!("{issuer}/register"),
            "code_challenge_methods_supported": ["S256"],
        }));
    }
    Err(format!(
        "the authorization server {issuer} publishes no metadata (tried {})",
        metadata_places(issuer).join(", ")
    ))
}

/// The scope to ask for: the file's, else the challenge's, else the resource's list, else none.
pub fn chosen_scope(
    configured: Option<&str>,
    challenge: &Challenge,
    found: &Discovered,
) -> Option<String> {
    configured
        .map(str::to_owned)
        .or_else(|| challenge.scope.clone())
        .or_else(|| (!found.resource_scopes.is_empty()).then(|| found.resource_scopes.join(" ")))
}
