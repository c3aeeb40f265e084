//! Requests to an authorization server: the token endpoint (client credentials, authorization
//! code, refresh), dynamic client registration (RFC 7591), and the authorization URL with PKCE.

use super::discovery::Discovered;
use super::{now_ms, Client, Grant, GrantType};
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use toolhost_providers::fetch::{FetchRequest, Fetcher};

/// `text` percent-encoded for a query or a form body (everything but RFC 3986's unreserved
/// characters).
pub(crate) fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// Decodes a percent-encoded query value (`+` as a space).
pub(crate) fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn form(pairs: &[(&str, String)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Random bytes as base64url text.
fn random_text(bytes: usize) -> Result<String, String> {
    let mut buffer = vec![0u8; bytes];
    getrandom::fill(&mut buffer).map_err(|e| format!("no random bytes: {e}"))?;
    Ok(URL_SAFE_NO_PAD.encode(buffer))
}

/// How a client proves itself: what the registration said, else (with a secret) Basic where
/// the server takes it (its default, RFC 8414) or the form, else nothing.
pub(crate) fn auth_method(supported: &[String], has_secret: bool) -> String {
    let takes = |m: &str| supported.iter().any(|s| s == m);
    let method = if !has_secret {
        "none"
    } else if supported.is_empty() || takes("client_secret_basic") {
        "client_secret_basic"
    } else if takes("client_secret_post") {
        "client_secret_post"
    } else {
        "client_secret_basic"
    };
    method.to_owned()
}

/// A PKCE pair (S256): the verifier kept, the challenge sent.
pub(crate) struct Pkce {
    pub verifier: String,
    pub challenge: String,
}

impl Pkce {
    pub(crate) fn new() -> Result<Self, String> {
        let verifier = random_text(32)?;
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        Ok(Pkce {
            verifier,
            challenge,
        })
    }
}

/// A random `state` for an authorization request.
pub(crate) fn state() -> Result<String, String> {
    random_text(16)
}

/// The URL a person opens to authorize `client` for `found`'s resource.
pub(crate) fn authorization_url(
    found: &Discovered,
    client: &Client,
    redirect_uri: &str,
    pkce: &Pkce,
    state: &str,
    scope: Option<&str>,
) -> Result<String, String> {
    let endpoint = found.authorization_endpoint.as_deref().ok_or_else(|| {
        format!(
            "the authorization server {} has no authorization endpoint",
            found.issuer
        )
    })?;
    let mut pairs = vec![
        ("response_type", "code".to_owned()),
        ("client_id", client.id.clone()),
        ("redirect_uri", redirect_uri.to_owned()),
        ("code_challenge", pkce.challenge.clone()),
        ("code_challenge_method", "S256".to_owned()),
        ("state", state.to_owned()),
        ("resource", found.resource.clone()),
    ];
    if let Some(scope) = scope {
        pairs.push(("scope", scope.to_owned()));
    }
    let joiner = if endpoint.contains('?') { '&' } else { '?' };
    Ok(format!("{endpoint}{joiner}{}", form(&pairs)))
}

/// Registers toolhost as a client of `found` (RFC 7591) with `redirect_uri`; a public client
/// (PKCE, no secret) where the server takes one.
pub(crate) async fn register(
    http: &dyn Fetcher,
    found: &Discovered,
    redirect_uri: &str,
    scope: Option<&str>,
) -> Result<Client, String> {
    let endpoint = found.registration_endpoint.as_deref().ok_or_else(|| {
        format!(
            "the authorization server {} lets no client register itself, and the server's file names no `clientId` or `clientMetadataUrl` it takes",
            found.issuer
        )
    })?;
    let takes = |m: &str| found.auth_methods.iter().any(|s| s == m);
    let method = if found.auth_methods.is_empty() || takes("none") {
        "none"
    } else {
        &auth_method(&found.auth_methods, true)
    };
    // SEP-837: a client answered on this machine's loopback is a native application; one
    // answered at a server's own page, a web one.
    let loopback = ["http://127.0.0.1", "http://localhost", "http://[::1]"]
        .iter()
        .any(|origin| redirect_uri.starts_with(origin));
    let mut body = json!({
        "client_name": "toolhost",
        "application_type": if loopback { "native" } else { "web" },
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
    });
    if let Some(scope) = scope {
        body["scope"] = json!(scope);
    }
    let answer = http
        .fetch(FetchRequest {
            method: "POST".to_owned(),
            url: endpoint.to_owned(),
            headers: vec![
                ("content-type".to_owned(), "application/json".to_owned()),
                ("accept".to_owned(), "application/json".to_owned()),
            ],
            body: Some(body.to_string().into_bytes()),
        })
        .await
        .map_err(|why| format!("registering at {endpoint} failed: {why}"))?;
    let registered: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    if !(200..300).contains(&answer.status) {
        return Err(format!(
            "registering at {endpoint} was refused (HTTP {}): {}",
            answer.status,
            refusal(&registered)
        ));
    }
    let id = registered["client_id"]
        .as_str()
        .ok_or_else(|| format!("registering at {endpoint} gave no client_id"))?;
    let secret = registered["client_secret"].as_str().map(str::to_owned);
    let method = registered["token_endpoint_auth_method"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| auth_method(&found.auth_methods, secret.is_some()));
    Ok(Client {
        id: id.to_owned(),
        secret,
        auth_method: method,
        private_key: None,
    })
}

/// The authorization server's `error` and `error_description`, never more of its answer.
fn refusal(answer: &Value) -> String {
    match (
        answer["error"].as_str(),
        answer["error_description"].as_str(),
    ) {
        (Some(error), Some(description)) => format!("{error} ({description})"),
        (Some(error), None) => error.to_owned(),
        _ => "no OAuth error given".to_owned(),
    }
}

/// What a token request asks for.
pub(crate) enum Asked<'a> {
    /// A new token with the client's own credentials.
    ClientCredentials { scope: Option<&'a str> },
    /// The code a person's authorization gave, with the PKCE verifier.
    Code {
        code: &'a str,
        verifier: &'a str,
        redirect_uri: &'a str,
    },
    /// A new access token for a refresh token.
    Refresh { refresh_token: &'a str },
}

/// What a token endpoint gave.
pub(crate) struct Tokens {
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub expires_at: Option<i64>,
    pub scope: Option<String>,
}

/// Asks `endpoint` (of the authorization server `issuer`) for tokens for `resource`, with
/// `client`'s credentials.
pub(crate) async fn request(
    http: &dyn Fetcher,
    (endpoint, issuer): (&str, &str),
    client: &Client,
    resource: &str,
    asked: Asked<'_>,
) -> Result<Tokens, String> {
    let mut pairs: Vec<(&str, String)> = match &asked {
        Asked::ClientCredentials { scope } => {
            let mut p = vec![("grant_type", "client_credentials".to_owned())];
            if let Some(scope) = scope {
                p.push(("scope", (*scope).to_owned()));
            }
            p
        }
        Asked::Code {
            code,
            verifier,
            redirect_uri,
        } => vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", (*code).to_owned()),
            ("code_verifier", (*verifier).to_owned()),
            ("redirect_uri", (*redirect_uri).to_owned()),
        ],
        Asked::Refresh { refresh_token } => vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", (*refresh_token).to_owned()),
        ],
    };
    pairs.push(("resource", resource.to_owned()));
    let mut headers = vec![
        (
            "content-type".to_owned(),
            "application/x-www-form-urlencoded".to_owned(),
        ),
        ("accept".to_owned(), "application/json".to_owned()),
    ];
    match (client.auth_method.as_str(), &client.secret) {
        ("client_secret_basic", Some(secret)) => {
            let pair = format!("{}:{}", encode(&client.id), encode(secret));
            headers.push((
                "authorization".to_owned(),
                format!("Basic {}", STANDARD.encode(pair)),
            ));
        }
        ("client_secret_post", Some(secret)) => {
            pairs.push(("client_id", client.id.clone()));
            pairs.push(("client_secret", secret.clone()));
        }
        ("private_key_jwt", _) => {
            let key = client.private_key.as_deref().ok_or(
                "the client proves itself with a private key, which is not at hand (it is read from toolhost's environment)",
            )?;
            let signed = super::assertion::client_assertion(key, &client.id, issuer)?;
            pairs.push(("client_id", client.id.clone()));
            pairs.push((
                "client_assertion_type",
                super::assertion::ASSERTION_TYPE.to_owned(),
            ));
            pairs.push(("client_assertion", signed));
        }
        _ => pairs.push(("client_id", client.id.clone())),
    }
    let answer = http
        .fetch(FetchRequest {
            method: "POST".to_owned(),
            url: endpoint.to_owned(),
            headers,
            body: Some(form(&pairs).into_bytes()),
        })
        .await
        .map_err(|why| format!("the token request to {endpoint} failed: {why}"))?;
    let body: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    if answer.status != 200 {
        return Err(format!(
            "the authorization server refused the token request (HTTP {}): {}",
            answer.status,
            refusal(&body)
        ));
    }
    let access_token = body["access_token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .ok_or("the authorization server's answer holds no access_token")?;
    let kind = body["token_type"].as_str().unwrap_or("");
    if !kind.eq_ignore_ascii_case("bearer") {
        return Err(format!(
            "the authorization server gave a {kind:?} token; toolhost sends bearer tokens only"
        ));
    }
    let refresh_token = body["refresh_token"].as_str().map(str::to_owned);
    Ok(Tokens {
        access_token: access_token.to_owned(),
        refresh_token: refresh_token.or(match asked {
            // A server that does not rotate refresh tokens leaves the old one valid.
            Asked::Refresh { refresh_token } => Some(refresh_token.to_owned()),
            _ => None,
        }),
        expires_at: expires_at(&body["expires_in"]),
        scope: body["scope"].as_str().map(str::to_owned),
    })
}

/// When a token given now with `expires_in` (seconds: a number, or a number as text as some
/// servers write it) expires; a lifetime beyond ten years is taken as ten years.
pub(crate) fn expires_at(expires_in: &Value) -> Option<i64> {
    const TEN_YEARS_S: i64 = 10 * 365 * 24 * 3600;
    let seconds = expires_in
        .as_i64()
        .or_else(|| expires_in.as_f64().map(|f| f as i64))
        .or_else(|| expires_in.as_str().and_then(|t| t.trim().parse().ok()))?;
    Some(now_ms() + seconds.clamp(0, TEN_YEARS_S) * 1000)
}

/// A grant made of `tokens` from `found`, for `client`.
pub(crate) fn grant_of(
    kind: GrantType,
    found: &Discovered,
    client: Client,
    tokens: Tokens,
    asked_scope: Option<String>,
) -> Grant {
    Grant {
        grant: kind,
        issuer: found.issuer.clone(),
        token_endpoint: found.token_endpoint.clone(),
        resource: found.resource.clone(),
        client,
        access_token: tokens.access_token,
        refresh_token: tokens.refresh_token,
        expires_at: tokens.expires_at,
        scope: tokens.scope.or(asked_scope),
        wanted_scope: None,
    }
}
