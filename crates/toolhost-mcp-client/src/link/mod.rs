//! One configured MCP server: its connections, the tools it listed last, what it wrote to
//! standard error, and one call's exchange with it.
//!
//! A program is one connection. A server at a URL has one connection per set of header values:
//! a thread whose variables give other values (another token) talks to it over a connection of
//! its own, so that no thread's calls carry another's credentials.

mod client_side;
mod connect_error;
mod listing;
mod rounds;
mod stderr;

use super::envelope::UNREAD_ANSWER_MARK;
use super::http::FetcherClient;
use super::oauth::{Authorizer, Vault};
use super::server_def::{fill, Endpoint, McpServerDef};
use super::stdio::{ChildTransport, EXIT_GRACE};
use crate::ask::{Answering, AskKind};
use crate::definition::definition_pin;
use client_side::ClientSide;
pub use connect_error::ConnectError;
#[allow(deprecated)] // Sampling is deprecated by SEP-2577, still in 2026-07-28.
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification,
    CancelledNotificationParam, ClientRequest, JsonObject, ProgressToken, ProtocolVersion,
    ServerResult, Tool,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::service::{PeerRequestOptions, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use rounds::{answers, capabilities_meta};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
pub(crate) use stderr::push_line;
use stderr::read_stderr;
use toolhost_core::tool::AbortSignal;
use toolhost_providers::fetch::Fetcher;

/// The most pages of `tools/list` read from one server: a cursor that never ends is cut here.
pub const MAX_LIST_PAGES: usize = 50;
/// The lines of a server's standard error kept (the newest), shown when it fails.
pub const STDERR_LINES_KEPT: usize = 40;
/// The most connections kept to one server at a URL (one per set of header values); the
/// oldest is closed for a new one.
pub const MAX_CONNECTIONS: usize = 8;

type Connection = RunningService<RoleClient, ClientSide>;

/// Header names and the values they were given: which connection a call takes.
type HeaderSet = Vec<(String, String)>;

/// What a call does with the progress its server reports: `(progress, total, message)`.
pub type ProgressFn = Arc<dyn Fn(f64, Option<f64>, Option<String>) + Send + Sync>;

/// Who answers what a server asks within a call (an `input_required` answer's requests): the
/// kind of request, its key and its params; the answer, or why there is none.
pub type AskFn = Arc<dyn Fn(AskKind, String, Value) -> Answering + Send + Sync>;

/// The most `input_required` rounds one call goes before toolhost gives up on it.
pub const MAX_INPUT_ROUNDS: usize = 16;

/// A call under way: its id, who answers what the server asks within it, and how many
/// questions it was asked.
type CallUnderWay = (u64, Option<AskFn>, Arc<std::sync::atomic::AtomicU32>);

/// Keeps a call under way registered; taken away when the call's exchange ends, however it ends.
struct Asking(Arc<ServerLink>, u64);

impl Drop for Asking {
    fn drop(&mut self) {
        lock(&self.0.asking).retain(|(id, _, _)| *id != self.1);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Why a call did not get the server's result.
#[derive(Debug)]
pub enum CallError {
    /// The call never reached the server (it could not be started, or the request not sent).
    NotSent(String),
    /// The server answered with an error instead of a result.
    Failed(String),
    /// No answer within the timeouts; the server was told to cancel the call.
    TimedOut(Duration),
    /// The thread was stopped; the server was told to cancel the call.
    Cancelled,
    /// The connection was lost while the call ran: its outcome is unknown.
    Lost(String),
}

/// One `tools/call` to make: what to send and what the call brings with it.
pub struct OutgoingCall {
    /// The server's name of the tool.
    pub tool: String,
    /// The validated arguments.
    pub arguments: JsonObject,
    /// The request's `_meta` (the idempotency key).
    pub meta: JsonObject,
    /// The values of the variables the server's headers take, as the thread has them.
    pub variables: HashMap<String, String>,
    /// The run's abort signal.
    pub abort: AbortSignal,
    /// Where the server's progress goes.
    pub on_progress: Option<ProgressFn>,
    /// Who answers what the server asks within the call.
    pub ask: Option<AskFn>,
    /// What `ask` can answer: declared to a 2026-07-28 server as the request's client
    /// capabilities, so that it asks only that.
    pub answerable: Vec<AskKind>,
}

/// One configured server and what toolhost keeps of it.
pub struct ServerLink {
    /// The server's definition.
    pub def: McpServerDef,
    /// Carries the requests to a server at a URL.
    http: Option<Arc<dyn Fetcher>>,
    connections: tokio::sync::Mutex<Vec<(HeaderSet, Connection)>>,
    /// The pin of each tool the server listed last, by its name.
    listed: Mutex<HashMap<String, Value>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// Where the progress of each call under way goes, by its progress token.
    progress: Mutex<HashMap<ProgressToken, ProgressFn>>,
    /// The calls under way, each with who answers what the server asks within it and how many
    /// questions it was asked.
    asking: Mutex<Vec<CallUnderWay>>,
    /// The id of the next call under way.
    next_call: std::sync::atomic::AtomicU64,
    /// The server's OAuth tokens, when its file has `oauth`.
    authorizer: Option<Arc<Authorizer>>,
}

impl ServerLink {
    pub(crate) fn new(
        def: McpServerDef,
        http: Option<Arc<dyn Fetcher>>,
        vault: Option<Arc<Vault>>,
    ) -> Self {
        let authorizer = match (&def.endpoint, &def.oauth, &http) {
            (Endpoint::Url { url, .. }, Some(oauth), Some(http)) => Some(Arc::new(
                Authorizer::new(&def.name, url, oauth.clone(), http.clone(), vault),
            )),
            _ => None,
        };
        Self {
            def,
            http,
            authorizer,
            connections: tokio::sync::Mutex::new(Vec::new()),
            listed: Mutex::new(HashMap::new()),
            stderr: Arc::new(Mutex::new(VecDeque::new())),
            progress: Mutex::new(HashMap::new()),
            asking: Mutex::new(Vec::new()),
            next_call: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The HTTP client and the vault a login for this server uses, when it is at a URL with
    /// `oauth` and grants can be kept.
    pub(crate) fn login_parts(&self) -> Option<(Arc<dyn Fetcher>, Arc<Vault>)> {
        let vault = self.authorizer.as_ref()?.vault()?.clone();
        Some((self.http.clone()?, vault))
    }

    /// Why the server's last refusal of toolhost's authorization stands, if it does.
    fn refusal(&self) -> Option<String> {
        self.authorizer.as_ref().and_then(|a| a.take_refusal())
    }

    /// Keeps a line in the server's log (toolhost's own notes about it are marked).
    fn note(&self, line: String) {
        push_line(&self.stderr, format!("[toolhost] {line}"));
    }

    /// The pin of the tool `name` as the server listed it last (see
    /// [`crate::definition::definition_pin`]); `None` once it no longer lists it.
    pub fn listed_pin(&self, name: &str) -> Option<Value> {
        lock(&self.listed).get(name).cloned()
    }

    /// Keeps what the server listed, as pins: computed once per listing, not per call.
    fn keep_listed(&self, tools: &[Tool]) {
        *lock(&self.listed) = tools
            .iter()
            .map(|t| (t.name.to_string(), definition_pin(t)))
            .collect();
    }

    /// The last lines the server wrote to standard error, oldest first.
    pub fn log_tail(&self) -> Vec<String> {
        lock(&self.stderr).iter().cloned().collect()
    }

    /// " (its last words: …)" with the last lines of standard error, or nothing.
    fn said(&self) -> String {
        let tail = self.log_tail();
        let last: Vec<&String> = tail.iter().rev().take(3).collect();
        if last.is_empty() {
            String::new()
        } else {
            let lines: Vec<&str> = last.into_iter().rev().map(String::as_str).collect();
            format!(" (its last words: {})", lines.join(" | "))
        }
    }

    /// The headers of a server at a URL with their variables' values from `lookup`, or the
    /// first variable that has none (and the header that needs it).
    fn headers(
        &self,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<HeaderSet, (String, String)> {
        let Endpoint::Url { headers, .. } = &self.def.endpoint else {
            return Ok(Vec::new());
        };
        headers
            .iter()
            .map(|(name, value)| {
                fill(value, lookup)
                    .map(|filled| (name.clone(), filled))
                    .map_err(|missing| (name.clone(), missing.name))
            })
            .collect()
    }

    /// Starts or reaches the server and completes the handshake, within the connect timeout.
    async fn connect(self: &Arc<Self>, headers: &HeaderSet) -> Result<Connection, ConnectError> {
        let handler = ClientSide {
            link: Arc::downgrade(self),
        };
        let timeout = self.def.connect_timeout;
        let serving = match &self.def.endpoint {
            Endpoint::Command {
                program,
                args,
                env,
                cwd,
            } => {
                let mut command = tokio::process::Command::new(program);
                command.args(args).current_dir(cwd).env_clear();
                for name in std::iter::once("PATH").chain(env.iter().map(String::as_str)) {
                    if let Some(value) = std::env::var_os(name) {
                        command.env(name, value);
                    }
                }
                let (transport, stderr) = ChildTransport::spawn(command, self.stderr.clone())
                    .map_err(|e| {
                        ConnectError::Connect(format!("cannot start {}: {e}", program.display()))
                    })?;
                tokio::spawn(read_stderr(stderr, self.stderr.clone()));
                tokio::time::timeout(timeout, handler.serve(transport)).await
            }
            Endpoint::Url { url, .. } => {
                let Some(http) = self.http.clone() else {
                    return Err(ConnectError::Connect("this runtime was loaded without an HTTP client, so it cannot reach an MCP server at a URL (the command line gives it one)".to_owned()));
                };
                let mut custom = HashMap::new();
                for (name, value) in headers {
                    let name = http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                        ConnectError::Connect(format!("{name:?} is not a header name"))
                    })?;
                    // The value is never quoted: it may hold a secret.
                    let value = http::HeaderValue::from_str(value).map_err(|_| {
                        ConnectError::Connect(format!(
                            "the value of header {name} is not a valid header value"
                        ))
                    })?;
                    custom.insert(name, value);
                }
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom);
                let transport = || {
                    let client =
                        FetcherClient::new(http.clone()).with_oauth(self.authorizer.clone());
                    StreamableHttpClientTransport::with_client(client, config.clone())
                };
                // The stateless 2026-07-28 protocol where the server speaks it (`server/discover`;
                // a server of 2025-11-25 answers that it knows no such method), else the
                // 2025-11-25 session. A server whose answer to the discovery is neither is
                // asked again with `initialize`, unless it refused toolhost (authorization).
                let lifecycle = ClientLifecycleMode::Auto {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    legacy_version: Some(ProtocolVersion::V_2025_11_25),
                };
                let started = tokio::time::Instant::now();
                let discovered = tokio::time::timeout(
                    timeout,
                    handler.clone().serve_with_lifecycle(transport(), lifecycle),
                )
                .await;
                match discovered {
                    Ok(Err(first)) => {
                        if let Some(why) = self.refusal() {
                            return Err(ConnectError::Unauthorized(why));
                        }
                        let left = timeout.saturating_sub(started.elapsed());
                        match tokio::time::timeout(left, handler.serve(transport())).await {
                            // Both ways failed: both reasons, the first often the telling one.
                            Ok(Err(second)) => {
                                return Err(match self.refusal() {
                                    Some(why) => ConnectError::Unauthorized(why),
                                    None => ConnectError::Connect(format!(
                                        "the MCP handshake failed: server/discover: {}; initialize: {}{}",
                                        innermost(&first),
                                        innermost(&second),
                                        self.said()
                                    )),
                                })
                            }
                            other => other,
                        }
                    }
                    other => other,
                }
            }
        };
        match serving {
            Ok(Ok(connection)) => Ok(connection),
            Ok(Err(e)) => Err(match self.refusal() {
                Some(why) => ConnectError::Unauthorized(why),
                None => ConnectError::Connect(format!(
                    "the MCP handshake failed: {}{}",
                    innermost(&e),
                    self.said()
                )),
            }),
            Err(_) => Err(ConnectError::Connect(format!(
                "the server did not complete the MCP handshake within {} ms{}",
                timeout.as_millis(),
                self.said()
            ))),
        }
    }

    /// The peer of the open connection for `headers`, connecting (again) when there is none or
    /// it closed (a program that exited is noted in its log and started again).
    async fn peer(
        self: &Arc<Self>,
        headers: &HeaderSet,
    ) -> Result<rmcp::Peer<RoleClient>, ConnectError> {
        let mut connections = self.connections.lock().await;
        if let Some(at) = connections.iter().position(|(h, _)| h == headers) {
            if !connections[at].1.is_closed() {
                return Ok(connections[at].1.peer().clone());
            }
            let (_, dead) = connections.remove(at);
            if matches!(self.def.endpoint, Endpoint::Command { .. }) {
                self.note("the server had exited; starting it again".to_owned());
            }
            close_apart(dead);
        }
        let connection = self.connect(headers).await?;
        let peer = connection.peer().clone();
        if connections.len() == MAX_CONNECTIONS {
            let (_, oldest) = connections.remove(0);
            close_apart(oldest);
        }
        connections.push((headers.clone(), connection));
        Ok(peer)
    }

    /// Forgets the connection for `headers` (its transport closed under a request).
    async fn drop_connection(&self, headers: &HeaderSet) {
        let mut connections = self.connections.lock().await;
        if let Some(at) = connections.iter().position(|(h, _)| h == headers) {
            let (_, dead) = connections.remove(at);
            close_apart(dead);
        }
    }

    /// Sends one `tools/call` and waits for its answer, the timeouts or the abort signal. The
    /// headers' variables come from `variables` (the thread's), else from toolhost's
    /// environment. A server that answers `input_required` (2026-07-28) has its requests put
    /// to `ask`, and the call is sent again with the answers and the request state it gave, as
    /// it gave it (a new request each time), for at most [`MAX_INPUT_ROUNDS`] rounds.
    pub(crate) async fn call(
        self: &Arc<Self>,
        call: OutgoingCall,
    ) -> Result<CallToolResult, CallError> {
        let OutgoingCall {
            tool,
            arguments,
            meta,
            variables,
            abort,
            on_progress,
            ask,
            answerable,
        } = call;
        let lookup = |name: &str| {
            variables
                .get(name)
                .cloned()
                .or_else(|| std::env::var(name).ok())
        };
        let headers = self.headers(&lookup).map_err(|(header, missing)| {
            CallError::NotSent(format!(
                "header {header} needs the variable {missing}, which neither the thread nor toolhost's environment has; give it to the thread"
            ))
        })?;
        let mut params = CallToolRequestParams::new(tool).with_arguments(arguments);
        params.meta = Some(meta.into());
        for _ in 0..MAX_INPUT_ROUNDS {
            let request = ClientRequest::CallToolRequest(CallToolRequest::new(params.clone()));
            let asking = Asking(
                self.clone(),
                self.next_call
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            );
            lock(&self.asking).push((asking.1, ask.clone(), Arc::default()));
            let answer = self
                .exchange(&headers, request, &answerable, &abort, on_progress.clone())
                .await;
            drop(asking);
            match answer? {
                ServerResult::CallToolResult(result) => return Ok(result),
                ServerResult::InputRequiredResult(asked) => {
                    params.input_responses = Some(answers(&asked, ask.as_ref()).await?);
                    params.request_state = asked.request_state;
                }
                other => {
                    return Err(CallError::Failed(format!(
                        "the server answered tools/call with something else than a result: {}",
                        serde_json::to_string(&other).unwrap_or_default()
                    )))
                }
            }
        }
        Err(CallError::Failed(format!(
            "the server asked for input {MAX_INPUT_ROUNDS} times without answering; the call was given up"
        )))
    }

    /// Sends `request` and waits for its answer, the timeouts or the abort signal. A
    /// 2026-07-28 server is told the request's client `answerable` capabilities.
    async fn exchange(
        self: &Arc<Self>,
        headers: &HeaderSet,
        request: ClientRequest,
        answerable: &[AskKind],
        abort: &AbortSignal,
        on_progress: Option<ProgressFn>,
    ) -> Result<ServerResult, CallError> {
        // A server that exited may not be noticed as closed until a send fails: a request that
        // could not be sent never reached it, so it is sent once more on a new connection.
        let mut restarted = false;
        let (peer, handle) = loop {
            let peer = self
                .peer(headers)
                .await
                .map_err(|e| CallError::NotSent(e.to_string()))?;
            let mut options = PeerRequestOptions::with_timeout(self.def.call_timeout)
                .reset_timeout_on_progress()
                .with_max_total_timeout(self.def.max_call_timeout);
            options.timeout = Some(self.def.call_timeout);
            options.meta = capabilities_meta(&peer, answerable);
            match peer
                .send_request_with_option(request.clone(), options)
                .await
            {
                Ok(handle) => break (peer, handle),
                Err(rmcp::ServiceError::TransportClosed) if !restarted => {
                    restarted = true;
                    self.note("the connection had closed; connecting again".to_owned());
                    self.drop_connection(headers).await;
                }
                Err(e) => {
                    return Err(CallError::NotSent(format!(
                        "the request could not be sent: {e}"
                    )))
                }
            }
        };
        let id = handle.id.clone();
        // The server's progress reaches the call's thread while the call is under way.
        let _progress = on_progress.map(|report| {
            lock(&self.progress).insert(handle.progress_token.clone(), report);
            Unregister(self.clone(), handle.progress_token.clone())
        });
        let answer = handle.await_response();
        tokio::select! {
            result = answer => {
                // Refused for want of authorization: the server ran nothing.
                if let (Err(_), Some(why)) = (&result, self.refusal()) {
                    return Err(CallError::NotSent(why));
                }
                match result {
                    Ok(answer) => Ok(answer),
                    Err(rmcp::ServiceError::McpError(e)) if unread_answer(&e) => {
                        Err(CallError::Failed(e.message.to_string()))
                    }
                    Err(rmcp::ServiceError::McpError(e)) => Err(CallError::Failed(format!(
                        "the server refused the call: {} (code {})",
                        e.message, e.code.0
                    ))),
                    Err(rmcp::ServiceError::Timeout { timeout }) => {
                        Err(CallError::TimedOut(timeout))
                    }
                    Err(rmcp::ServiceError::TransportClosed) => {
                        Err(CallError::Lost(match self.def.endpoint {
                            Endpoint::Command { .. } => {
                                format!("the server exited while the call ran{}", self.said())
                            }
                            Endpoint::Url { .. } => {
                                "the connection to the server closed before it answered".to_owned()
                            }
                        }))
                    }
                    Err(e) => Err(CallError::Lost(innermost(&e))),
                }
            }
            () = abort.aborted() => {
                let cancelled = CancelledNotification::new(CancelledNotificationParam::new(
                    Some(id),
                    Some("the thread was stopped".to_owned()),
                ));
                let _ = peer.send_notification(cancelled.into()).await;
                Err(CallError::Cancelled)
            }
        }
    }

    /// Closes every connection (a program sees its standard input end).
    pub(crate) async fn close(&self) {
        let connections: Vec<Connection> = self
            .connections
            .lock()
            .await
            .drain(..)
            .map(|(_, connection)| connection)
            .collect();
        // Long enough for a program's whole ending (its end of input, then SIGTERM, then
        // SIGKILL, each EXIT_GRACE apart), so that it has ended when whoever closes goes on.
        let patience = 2 * EXIT_GRACE + Duration::from_secs(1);
        let closing = connections
            .into_iter()
            .map(|connection| tokio::time::timeout(patience, connection.cancel()));
        futures::future::join_all(closing).await;
    }
}

/// What went wrong at the bottom of an error's chain, without the SDK's own type names (its
/// transport errors say "… Transport [its::type::Name<…>] error: what happened").
fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    let mut at = error;
    while let Some(next) = at.source() {
        at = next;
    }
    let text = at.to_string();
    match text.rsplit_once("] error: ") {
        Some((_, what)) => what.to_owned(),
        None => text,
    }
}

/// Closes a connection no call uses any more, apart from the caller: closing a program waits
/// for it to end (or for the signals that end it), which must not hold the connections.
fn close_apart(connection: Connection) {
    tokio::spawn(async move {
        let _ = connection.cancel().await;
    });
}

/// Takes a call's progress route away when the call ends, however it ends.
struct Unregister(Arc<ServerLink>, ProgressToken);

impl Drop for Unregister {
    fn drop(&mut self) {
        lock(&self.0.progress).remove(&self.1);
    }
}

/// Whether `error` is toolhost's own, made in place of an answer it could not read.
fn unread_answer(error: &rmcp::model::ErrorData) -> bool {
    error.data.as_ref().and_then(Value::as_str) == Some(UNREAD_ANSWER_MARK)
}
