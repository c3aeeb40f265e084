//! A person authorizes toolhost for one MCP server, once: the authorization code grant with
//! PKCE, answered on a loopback redirect (RFC 8252). The client credentials grant needs no
//! person and is done here too when asked, so `toolhost mcp login` works for both.

use super::authorizer::{check_pinned, configured_client};
use super::discovery::{chosen_scope, discover, parse_challenge};
pub use super::login_error::LoginError;
use super::token::{self, decode, Asked, Pkce};
use super::vault::{Vault, VaultError};
use super::{union, Grant, GrantType};
use crate::server_def::{fill, Endpoint, McpServerDef};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolhost_providers::fetch::{FetchRequest, Fetcher};

/// The path of the loopback redirect.
const CALLBACK: &str = "/callback";
/// The most bytes of a request to the loopback redirect read.
const MAX_REQUEST_HEAD: usize = 16 * 1024;

/// An authorization a person was sent to make, waiting for its answer.
pub struct Pending {
    server: String,
    found: super::discovery::Discovered,
    client: super::Client,
    verifier: String,
    redirect_uri: String,
    scope: Option<String>,
    /// The address the person opens.
    pub authorize_url: String,
    /// The `state` the answer must carry.
    pub state: String,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("server", &self.server)
            .field("issuer", &self.found.issuer)
            .finish_non_exhaustive()
    }
}

impl Pending {
    /// The MCP server this authorization is for.
    pub fn server(&self) -> &str {
        &self.server
    }
}

/// What starting a login gave.
#[derive(Debug)]
pub enum Started {
    /// A grant at once, kept already (client credentials need no person).
    Granted(Box<Grant>),
    /// An authorization a person must make at [`Pending::authorize_url`]; its answer comes to
    /// `redirect_uri` and goes to [`finish`].
    Pending(Box<Pending>),
}

/// Starts getting `def`'s server a grant: asks the server, finds its authorization server, and
/// gets a client credentials grant at once (kept in `vault`), or prepares the authorization a
/// person makes, answered at `redirect_uri`.
pub async fn start(
    def: &McpServerDef,
    http: &dyn Fetcher,
    vault: &Arc<Vault>,
    redirect_uri: &str,
) -> Result<Started, LoginError> {
    let Endpoint::Url { url, headers } = &def.endpoint else {
        return Err(LoginError::NotAtUrl {
            server: def.name.clone(),
        });
    };
    let oauth = def.oauth.clone().ok_or_else(|| LoginError::NoOAuth {
        server: def.name.clone(),
    })?;
    let challenge = probe(http, url, headers, &def.name).await?;
    let found = discover(http, url, &challenge).await?;
    check_pinned(&oauth, &found).map_err(LoginError::NotAllowed)?;
    // What the server asked for since the last login, too.
    let server = def.name.clone();
    let wanted = vault
        .off_executor(move |v| v.load(&server))
        .await
        .ok()
        .flatten()
        .and_then(|kept| kept.grant.wanted_scope);
    let scope = union(
        chosen_scope(oauth.scope.as_deref(), &challenge, &found).as_deref(),
        wanted.as_deref(),
    );
    if oauth.grant == GrantType::ClientCredentials {
        let client = configured_client(&oauth, &found)
            .map_err(LoginError::NotAllowed)?
            .ok_or_else(|| LoginError::NotAllowed("the client credentials grant needs `oauth.clientId` (and `clientSecret` or `privateKey`)".to_owned()))?;
        let asked = Asked::ClientCredentials {
            scope: scope.as_deref(),
        };
        let tokens = token::request(
            http,
            (&found.token_endpoint, &found.issuer),
            &client,
            &found.resource,
            asked,
        )
        .await
        .map_err(LoginError::Token)?;
        let grant = token::grant_of(GrantType::ClientCredentials, &found, client, tokens, scope);
        let grant = keep(vault, &def.name, grant).await?;
        return Ok(Started::Granted(Box::new(grant)));
    }
    if !found
        .pkce_methods
        .as_ref()
        .is_some_and(|m| m.iter().any(|m| m == "S256"))
    {
        return Err(LoginError::NotAllowed(format!(
            "the authorization server {} does not say it supports PKCE with S256, which the authorization code grant needs",
            found.issuer
        )));
    }
    let client = match configured_client(&oauth, &found).map_err(LoginError::NotAllowed)? {
        Some(client) => client,
        None => token::register(http, &found, redirect_uri, scope.as_deref())
            .await
            .map_err(LoginError::Token)?,
    };
    let pkce = Pkce::new().map_err(LoginError::Local)?;
    let state = token::state().map_err(LoginError::Local)?;
    let authorize_url = token::authorization_url(
        &found,
        &client,
        redirect_uri,
        &pkce,
        &state,
        scope.as_deref(),
    )
    .map_err(LoginError::Token)?;
    Ok(Started::Pending(Box::new(Pending {
        server: def.name.clone(),
        found,
        client,
        verifier: pkce.verifier,
        redirect_uri: redirect_uri.to_owned(),
        scope,
        authorize_url,
        state,
    })))
}

/// Ends an authorization with the `code` its answer carried (and the `iss` it named, if any):
/// gets the tokens and keeps them. An answer that names another issuer than the one asked, or
/// none when the issuer says it always names itself (RFC 9207), is refused before any token is
/// asked for: it may come from another authorization server (a mix-up attack).
pub async fn finish(
    pending: Pending,
    code: &str,
    iss: Option<&str>,
    http: &dyn Fetcher,
    vault: &Arc<Vault>,
) -> Result<Grant, LoginError> {
    // RFC 9207 compares with the issuer of the authorization server's metadata.
    let found = &pending.found;
    let issuer = found.metadata_issuer.as_ref().unwrap_or(&found.issuer);
    match iss {
        // Compared as given, never normalized (RFC 9207 section 2.4).
        Some(iss) if iss != issuer => {
            return Err(LoginError::Answer(format!(
                "the authorization answer names issuer {iss}, not {issuer}, which toolhost asked; it is refused"
            )))
        }
        None if pending.found.iss_in_answers => {
            return Err(LoginError::Answer(format!(
                "the authorization answer does not name its issuer, though {issuer} says it always does; it is refused"
            )))
        }
        _ => {}
    }
    let asked = Asked::Code {
        code,
        verifier: &pending.verifier,
        redirect_uri: &pending.redirect_uri,
    };
    let found = &pending.found;
    let tokens = token::request(
        http,
        (&found.token_endpoint, &found.issuer),
        &pending.client,
        &found.resource,
        asked,
    )
    .await
    .map_err(LoginError::Token)?;
    let grant = token::grant_of(
        GrantType::AuthorizationCode,
        found,
        pending.client,
        tokens,
        pending.scope,
    );
    Ok(keep(vault, &pending.server, grant).await?)
}

/// Keeps `grant` as `server`'s in the vault, and gives it back.
async fn keep(vault: &Arc<Vault>, server: &str, grant: Grant) -> Result<Grant, VaultError> {
    let server = server.to_owned();
    vault
        .off_executor(move |v| v.replace(&server, &grant).map(|()| grant))
        .await
}

/// Gets `def`'s server a grant and keeps it in `vault`: for the authorization code grant calls
/// `open` with the URL a person must open, then waits (at most `patience`) for the answer on a
/// loopback port.
pub async fn login(
    def: &McpServerDef,
    http: Arc<dyn Fetcher>,
    vault: &Arc<Vault>,
    open: &mut (dyn FnMut(&str) + Send),
    patience: Duration,
) -> Result<Grant, LoginError> {
    let loopback = |e: std::io::Error| {
        LoginError::Local(format!("no loopback port to take the answer on: {e}"))
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(loopback)?;
    let port = listener.local_addr().map_err(loopback)?.port();
    let redirect_uri = format!("http://127.0.0.1:{port}{CALLBACK}");
    let pending = match start(def, &*http, vault, &redirect_uri).await? {
        Started::Granted(grant) => return Ok(*grant),
        Started::Pending(pending) => pending,
    };
    open(&pending.authorize_url);
    let (code, iss) = tokio::time::timeout(patience, answer(&listener, &pending.state, &def.name))
        .await
        .map_err(|_| LoginError::TimedOut {
            seconds: patience.as_secs(),
        })??;
    finish(*pending, &code, iss.as_deref(), &*http, vault).await
}

/// Asks the server to start a session and list its tools without a token; its refusal's
/// challenge says where to authorize (a server may let anyone start a session).
async fn probe(
    http: &dyn Fetcher,
    url: &str,
    headers: &[(String, String)],
    name: &str,
) -> Result<super::discovery::Challenge, LoginError> {
    let mut sent = probe_headers(headers);
    let [initialize, list, stateless_list] = probe_messages();
    let mut session = None;
    let mut outcome = Err(LoginError::NeedsNoLogin {
        server: name.to_owned(),
    });
    let mut messages = vec![initialize, list].into_iter();
    while let Some(message) = messages.next() {
        let stateless = message["id"] == 2;
        let mut headers = sent.clone();
        if stateless {
            headers.push(("mcp-protocol-version".to_owned(), "2026-07-28".to_owned()));
            headers.push(("mcp-method".to_owned(), "tools/list".to_owned()));
        }
        let answer = http
            .fetch(FetchRequest {
                method: "POST".to_owned(),
                url: url.to_owned(),
                headers,
                body: Some(message.to_string().into_bytes()),
            })
            .await
            .map_err(|why| {
                LoginError::Server(format!("MCP server \"{name}\" cannot be reached: {why}"))
            })?;
        let header = |wanted: &str| {
            answer
                .headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(wanted))
                .map(|(_, v)| v.clone())
        };
        match answer.status {
            // A stateless server may refuse `initialize` with a JSON-RPC error in a 200 answer.
            200..=299
                if session.is_none()
                    && message["method"] == "initialize"
                    && serde_json::from_slice::<serde_json::Value>(&answer.body)
                        .is_ok_and(|b| b.get("error").is_some()) =>
            {
                messages = vec![stateless_list.clone()].into_iter();
                continue;
            }
            200..=299 => {
                if let Some(id) = header("mcp-session-id") {
                    sent.push(("mcp-session-id".to_owned(), id.clone()));
                    sent.push(("mcp-protocol-version".to_owned(), "2025-11-25".to_owned()));
                    session = Some(id);
                }
                continue;
            }
            401 | 403 => {
                outcome = Ok(header("www-authenticate")
                    .map(|v| parse_challenge(&v))
                    .unwrap_or_default());
            }
            // `initialize` refused as such: perhaps a stateless server; ask it its way.
            400 | 404 if session.is_none() && message["method"] == "initialize" => {
                messages = vec![stateless_list.clone()].into_iter();
                continue;
            }
            status => {
                outcome = Err(LoginError::Server(format!(
                    "MCP server \"{name}\" answered HTTP {status} instead of asking for authorization"
                )));
            }
        }
        break;
    }
    // A session the probe opened is closed again (a server that keeps none says so; either way).
    if session.is_some() {
        let _ = http
            .fetch(FetchRequest {
                method: "DELETE".to_owned(),
                url: url.to_owned(),
                headers: sent,
                body: None,
            })
            .await;
    }
    outcome
}

/// The headers of a probe: JSON in, JSON or events out, and the server's headers whose
/// variables are set (one whose variable is missing is likely the token to be had).
fn probe_headers(headers: &[(String, String)]) -> Vec<(String, String)> {
    let mut sent = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        (
            "accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ),
    ];
    for (header, value) in headers {
        // A header whose variable is missing is left out: it is likely the token to be had.
        if let Ok(value) = fill(value, &|n| std::env::var(n).ok()) {
            sent.push((header.clone(), value));
        }
    }
    sent
}

/// What a probe sends: `initialize` and `tools/list` of a session, and `tools/list` the way a
/// server of the stateless 2026-07-28 protocol takes it (no `initialize`; versions and
/// capabilities in `_meta`).
fn probe_messages() -> [serde_json::Value; 3] {
    let initialize = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "toolhost", "version": env!("CARGO_PKG_VERSION")}}});
    let list = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let stateless_list = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {},
                             "io.modelcontextprotocol/clientInfo":
                                 {"name": "toolhost", "version": env!("CARGO_PKG_VERSION")}}}});
    [initialize, list, stateless_list]
}

/// How long one connection to the loopback port may take to send its request.
const READ_PATIENCE: Duration = Duration::from_secs(10);

/// Waits on the loopback port for the authorization server's redirect with `state`: the code,
/// or why there is none. Each connection is read on its own, within [`READ_PATIENCE`], so one
/// that sends nothing blocks nobody; a request for another path, or with another `state`
/// (not this authorization's: a stray page or another program), is answered and passed over.
async fn answer(
    listener: &tokio::net::TcpListener,
    state: &str,
    name: &str,
) -> Result<(String, Option<String>), LoginError> {
    let (outcome, mut outcomes) = tokio::sync::mpsc::channel::<Answered>(1);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, _) = accepted.map_err(|e| LoginError::Local(format!("the loopback port failed: {e}")))?;
                let (outcome, state, name) = (outcome.clone(), state.to_owned(), name.to_owned());
                tokio::spawn(async move {
                    let read = tokio::time::timeout(READ_PATIENCE, one_request(stream, &state, &name));
                    if let Ok(Some(result)) = read.await {
                        let _ = outcome.send(result).await;
                    }
                });
            }
            Some(result) = outcomes.recv() => return result.map_err(LoginError::Answer),
        }
    }
}

/// An authorization answer: its code and the issuer it names, or the refusal it carries.
type Answered = Result<(String, Option<String>), String>;

/// Reads and answers one request to the loopback port: the code (and issuer) or the refusal it
/// carries for this authorization, `None` when it is not the answer.
async fn one_request(
    mut stream: tokio::net::TcpStream,
    state: &str,
    name: &str,
) -> Option<Answered> {
    let mut head = Vec::new();
    let mut buffer = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REQUEST_HEAD {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buffer[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let target = head
        .lines()
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .unwrap_or("");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if path != CALLBACK {
        let _ = respond(&mut stream, 404, "Not here.").await;
        return None;
    }
    let param = |wanted: &str| {
        query.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k) == wanted).then(|| decode(v))
        })
    };
    if param("state").as_deref() != Some(state) {
        let _ = respond(
            &mut stream,
            400,
            "This answer is not for the authorization toolhost asked for.",
        )
        .await;
        return None;
    }
    if let Some(error) = param("error") {
        let description = param("error_description")
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        let _ = respond(&mut stream, 200, "toolhost was not authorized.").await;
        return Some(Err(format!(
            "the authorization was refused: {error}{description}"
        )));
    }
    let Some(code) = param("code") else {
        let _ = respond(&mut stream, 400, "The answer holds no code.").await;
        return Some(Err(
            "the authorization server's answer holds no code".to_owned()
        ));
    };
    // The answer is checked and traded for tokens after this page: the terminal says how it went.
    let said = format!(
        "toolhost got the answer for MCP server \"{name}\"; the terminal says whether it is authorized. You can close this page."
    );
    let _ = respond(&mut stream, 200, &said).await;
    Some(Ok((code, param("iss"))))
}

/// The page a person's browser is shown at the end of a login: `text`, escaped.
pub fn page_html(text: &str) -> String {
    let escaped = text
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    format!("<!doctype html><meta charset=\"utf-8\"><title>toolhost</title><p>{escaped}</p>\n")
}

async fn respond(
    stream: &mut tokio::net::TcpStream,
    status: u16,
    text: &str,
) -> std::io::Result<()> {
    let body = page_html(text);
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        _ => "Bad Request",
    };
    let answer = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(answer.as_bytes()).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(port: u16, target: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        let request = format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    #[tokio::test]
    async fn the_loopback_port_waits_for_its_own_answer_whatever_else_comes() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let waiting = tokio::spawn(async move { answer(&listener, "st4te", "docs").await });
        // A connection that never sends anything blocks nobody.
        let _silent = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        assert!(get(port, "/favicon.ico").await.starts_with("HTTP/1.1 404"));
        let stray = get(port, "/callback?code=evil&state=other").await;
        assert!(stray.starts_with("HTTP/1.1 400"), "{stray}");
        assert!(!waiting.is_finished(), "a stray answer ended the login");
        let good = get(
            port,
            "/callback?code=a%2Fb&state=st4te&iss=https%3A%2F%2Fauth.example.com",
        )
        .await;
        assert!(
            good.starts_with("HTTP/1.1 200") && good.contains("authorized"),
            "{good}"
        );
        assert_eq!(
            waiting.await.unwrap().unwrap(),
            (
                "a/b".to_owned(),
                Some("https://auth.example.com".to_owned())
            )
        );
    }

    #[tokio::test]
    async fn a_refusal_for_this_authorization_ends_it_saying_why() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let waiting = tokio::spawn(async move { answer(&listener, "s", "docs").await });
        get(
            port,
            "/callback?error=access_denied&error_description=no+thanks&state=s",
        )
        .await;
        let why = waiting.await.unwrap().unwrap_err();
        assert!(matches!(why, LoginError::Answer(_)), "{why:?}");
        assert_eq!(
            why.to_string(),
            "the authorization was refused: access_denied (no thanks)"
        );
    }
}
