//! One configured MCP server: its connections, the tools it listed last, what it wrote to
//! standard error, and one call's exchange with it.
//!
//! A program is one connection. A server at a URL has one connection per set of header values:
//! a thread whose variables give other values (another token) talks to it over a connection of
//! its own, so that no thread's calls carry another's credentials.

use super::envelope::UNREAD_ANSWER_MARK;
use super::http::FetcherClient;
use super::oauth::{Authorizer, Vault};
use super::server_def::{fill, Endpoint, McpServerDef};
use super::stdio::ChildTransport;
use crate::ask::{Answering, AskKind};
use crate::definition::definition_pin;
#[allow(deprecated)] // Sampling is deprecated by SEP-2577, still in 2026-07-28.
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification,
    CancelledNotificationParam, ClientCapabilities, ClientConfig, ClientRequest,
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    Implementation, InputRequiredResult, InputResponses, JsonObject, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, ServerResult, Tool,
};
use rmcp::service::RequestContext;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::service::{NotificationContext, PeerRequestOptions, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ErrorData;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use toolhost_core::tool::AbortSignal;
use toolhost_providers::fetch::Fetcher;

/// The most pages of `tools/list` read from one server: a cursor that never ends is cut here.
pub const MAX_LIST_PAGES: usize = 50;
/// The lines of a server's standard error kept (the newest), shown when it fails.
pub const STDERR_LINES_KEPT: usize = 40;
/// The most connections kept to one server at a URL (one per set of header values); the
/// oldest is closed for a new one.
pub const MAX_CONNECTIONS: usize = 8;
/// The longest line of standard error kept, in bytes.
const STDERR_LINE_BYTES: usize = 500;
/// How often a call checks its thread's abort signal.
const ABORT_POLL: Duration = Duration::from_millis(50);

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

/// What toolhost answers as an MCP client: it passes progress on to the call it belongs to,
/// lists the tools again when the server says they changed, and passes a 2025-11-25 server's
/// elicitation and sampling requests on to whoever made the call under way (see
/// [`ClientSide::relay`]).
#[derive(Clone)]
struct ClientSide {
    link: std::sync::Weak<ServerLink>,
}

impl ClientHandler for ClientSide {
    /// toolhost by name, offering in `initialize` the last protocol version that has it
    /// (2025-11-25; the stateless 2026-07-28 has no `initialize`, so offering it there would
    /// name a version the handshake cannot be).
    fn get_info(&self) -> ClientConfig {
        // Declared once for the connection, which every thread's calls share: each request is
        // answered only when the one call under way has someone to ask.
        let mut capabilities = ClientCapabilities::default();
        #[allow(deprecated)] // Sampling is deprecated by SEP-2577, still in 2026-07-28.
        {
            capabilities.sampling = Some(Default::default());
        }
        capabilities.elicitation = Some(Default::default());
        let mut info = ClientConfig::new(
            capabilities,
            Implementation::new("toolhost", env!("CARGO_PKG_VERSION")),
        );
        info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        info
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let Some(link) = self.link.upgrade() else {
            return;
        };
        let report = lock(&link.progress).get(&params.progress_token).cloned();
        if let Some(report) = report {
            report(params.progress, params.total, params.message);
        }
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.relay(AskKind::Elicit, &request).await
    }

    #[allow(deprecated)] // Sampling is deprecated by SEP-2577, still in 2026-07-28.
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.relay(AskKind::Sample, &params).await
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        let Some(link) = self.link.upgrade() else {
            return;
        };
        match list_tools(&context.peer).await {
            Ok(tools) => link.keep_listed(&tools),
            Err(e) => link.note(format!("listing the tools again failed: {e}")),
        }
    }
}

impl ClientSide {
    /// Puts a server's request (`params` of a request of `kind`) to whoever made the server's
    /// call under way; the answer, as the request's result. A 2025-11-25 request does not say
    /// which call it belongs to: with one call under way it is that call's; with none, or
    /// several, it is refused, saying why.
    async fn relay<Answer: serde::de::DeserializeOwned>(
        &self,
        kind: AskKind,
        params: &impl serde::Serialize,
    ) -> Result<Answer, ErrorData> {
        let params = serde_json::to_value(params).unwrap_or_default();
        let refuse = |why: String| ErrorData::invalid_request(why, None);
        let link = self
            .link
            .upgrade()
            .ok_or_else(|| refuse("toolhost is shutting down".to_owned()))?;
        let (ask, key) = {
            let asking = lock(&link.asking);
            match asking.as_slice() {
                [(_, ask, asked)] => {
                    let n = asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                    (ask.clone(), format!("{}-{}-{n}", link.def.name, kind.short()))
                }
                [] => return Err(refuse(format!("{} comes from no call of toolhost's under way: nobody can answer it", kind.method()))),
                _ => return Err(refuse(format!("toolhost has several calls of this server under way and cannot tell which one {} belongs to", kind.method()))),
            }
        };
        let Some(ask) = ask else {
            return Err(refuse(format!(
                "nobody can answer {} in the call under way",
                kind.method()
            )));
        };
        let answer = ask(kind, key, params).await.map_err(refuse)?;
        serde_json::from_value(answer).map_err(|e| {
            ErrorData::internal_error(
                format!("the answer is no result of {}: {e}", kind.method()),
                None,
            )
        })
    }
}

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
                    .map_err(|missing| (name.clone(), missing))
            })
            .collect()
    }

    /// Starts or reaches the server and completes the handshake, within the connect timeout.
    async fn connect(self: &Arc<Self>, headers: &HeaderSet) -> Result<Connection, String> {
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
                    .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
                tokio::spawn(read_stderr(stderr, self.stderr.clone()));
                tokio::time::timeout(timeout, handler.serve(transport)).await
            }
            Endpoint::Url { url, .. } => {
                let Some(http) = self.http.clone() else {
                    return Err("this runtime was loaded without an HTTP client, so it cannot reach an MCP server at a URL (the command line gives it one)".to_owned());
                };
                let mut custom = HashMap::new();
                for (name, value) in headers {
                    let name = http::HeaderName::from_bytes(name.as_bytes())
                        .map_err(|_| format!("{name:?} is not a header name"))?;
                    // The value is never quoted: it may hold a secret.
                    let value = http::HeaderValue::from_str(value).map_err(|_| {
                        format!("the value of header {name} is not a valid header value")
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
                            return Err(why);
                        }
                        let left = timeout.saturating_sub(started.elapsed());
                        match tokio::time::timeout(left, handler.serve(transport())).await {
                            // Both ways failed: both reasons, the first often the telling one.
                            Ok(Err(second)) => {
                                return Err(match self.refusal() {
                                    Some(why) => why,
                                    None => format!(
                                        "the MCP handshake failed: server/discover: {}; initialize: {}{}",
                                        innermost(&first),
                                        innermost(&second),
                                        self.said()
                                    ),
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
                Some(why) => why,
                None => format!("the MCP handshake failed: {}{}", innermost(&e), self.said()),
            }),
            Err(_) => Err(format!(
                "the server did not complete the MCP handshake within {} ms{}",
                timeout.as_millis(),
                self.said()
            )),
        }
    }

    /// The peer of the open connection for `headers`, connecting (again) when there is none or
    /// it closed (a program that exited is noted in its log and started again).
    async fn peer(self: &Arc<Self>, headers: &HeaderSet) -> Result<rmcp::Peer<RoleClient>, String> {
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

    /// Connects with the headers toolhost's environment gives and lists the server's tools.
    pub(crate) async fn refresh(self: &Arc<Self>) -> Result<Vec<Tool>, String> {
        let env = |name: &str| std::env::var(name).ok();
        let headers = match self.headers(&env) {
            Ok(headers) => headers,
            Err((header, missing)) => {
                return Err(format!(
                    "header {header} needs the variable {missing}, which is not in toolhost's environment, so the server's tools cannot be listed"
                ))
            }
        };
        let peer = self.peer(&headers).await?;
        let listed = tokio::time::timeout(self.def.call_timeout, list_tools(&peer))
            .await
            .map_err(|_| {
                format!(
                    "tools/list got no answer within {} ms",
                    self.def.call_timeout.as_millis()
                )
            })?;
        // A list refused for want of authorization says so, and what a person does about it.
        let tools = listed.map_err(|failed| self.refusal().unwrap_or(failed))?;
        self.keep_listed(&tools);
        Ok(tools)
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
            let peer = self.peer(headers).await.map_err(CallError::NotSent)?;
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
        tokio::pin!(answer);
        loop {
            tokio::select! {
                result = &mut answer => {
                    // Refused for want of authorization: the server ran nothing.
                    if let (Err(_), Some(why)) = (&result, self.refusal()) {
                        return Err(CallError::NotSent(why));
                    }
                    return match result {
                        Ok(answer) => Ok(answer),
                        Err(rmcp::ServiceError::McpError(e)) if unread_answer(&e) => Err(CallError::Failed(e.message.to_string())),
                        Err(rmcp::ServiceError::McpError(e)) => Err(CallError::Failed(format!("the server refused the call: {} (code {})", e.message, e.code.0))),
                        Err(rmcp::ServiceError::Timeout { timeout }) => Err(CallError::TimedOut(timeout)),
                        Err(rmcp::ServiceError::TransportClosed) => Err(CallError::Lost(match self.def.endpoint {
                            Endpoint::Command { .. } => format!("the server exited while the call ran{}", self.said()),
                            Endpoint::Url { .. } => "the connection to the server closed before it answered".to_owned(),
                        })),
                        Err(e) => Err(CallError::Lost(innermost(&e))),
                    };
                }
                _ = tokio::time::sleep(ABORT_POLL) => {
                    if abort.is_aborted() {
                        let cancelled = CancelledNotification::new(CancelledNotificationParam::new(
                            Some(id),
                            Some("the thread was stopped".to_owned()),
                        ));
                        let _ = peer.send_notification(cancelled.into()).await;
                        return Err(CallError::Cancelled);
                    }
                }
            }
        }
    }

    /// Closes every connection (a program sees its standard input end).
    pub(crate) async fn close(&self) {
        for (_, connection) in self.connections.lock().await.drain(..) {
            let _ = tokio::time::timeout(Duration::from_secs(2), connection.cancel()).await;
        }
    }
}

/// The request `_meta` declaring `answerable` as the client's capabilities, for a server that
/// takes them per request (2026-07-28 on): those of whoever made the call replace the
/// connection's (which say what toolhost can pass on at all).
fn capabilities_meta(
    peer: &rmcp::Peer<RoleClient>,
    answerable: &[AskKind],
) -> Option<rmcp::model::RequestMetaObject> {
    let stateless = peer
        .peer_info()
        .is_some_and(|info| info.protocol_version.as_str() >= "2026-07-28");
    // Even none: the connection's own (declared for 2025-11-25 relays) must not stand.
    if !stateless {
        return None;
    }
    serde_json::from_value(serde_json::json!({
        "io.modelcontextprotocol/clientCapabilities": AskKind::capabilities(answerable),
    }))
    .ok()
}

/// The answers to what an `input_required` result asks, each put to `ask` under its key; the
/// first that finds no answer fails the call, saying what the server asked.
async fn answers(
    asked: &InputRequiredResult,
    ask: Option<&AskFn>,
) -> Result<InputResponses, CallError> {
    let mut answers = InputResponses::new();
    for (key, request) in asked.input_requests.iter().flatten() {
        let request = serde_json::to_value(request).unwrap_or_default();
        let method = request["method"].as_str().unwrap_or_default();
        let kind = match method {
            "elicitation/create" => AskKind::Elicit,
            "sampling/createMessage" => AskKind::Sample,
            "roots/list" => AskKind::Roots,
            _ => {
                return Err(CallError::Failed(format!(
                    "the server asked \"{key}\" with {method:?}, which is no request an MCP client answers"
                )))
            }
        };
        let answered = match ask {
            Some(ask) => ask(kind, key.clone(), request["params"].clone()).await,
            None => Err("nobody can answer it here".to_owned()),
        };
        let answer = answered.map_err(|why| {
            CallError::Failed(format!(
                "the server asked for input before it answers ({method}, \"{key}\"), which was not given: {why}"
            ))
        })?;
        answers.insert(key.clone(), answer);
    }
    Ok(answers)
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

/// Reads a server's stderr to its end as bytes, keeping its last lines (as text, invalid
/// UTF-8 replaced): whatever the server writes, the pipe stays open until it closes it, so the
/// server never fails on a write to it. A line longer than is kept is read through and cut.
async fn read_stderr(
    stderr: impl tokio::io::AsyncRead + Unpin,
    kept: Arc<Mutex<VecDeque<String>>>,
) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        // At most one byte past the kept length is held; the rest of a long line is skipped.
        match (&mut reader)
            .take(STDERR_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.last() != Some(&b'\n') && line.len() > STDERR_LINE_BYTES {
            let mut rest = Vec::new();
            loop {
                rest.clear();
                match (&mut reader)
                    .take(64 << 10)
                    .read_until(b'\n', &mut rest)
                    .await
                {
                    Ok(0) | Err(_) => break,
                    Ok(_) if rest.last() == Some(&b'\n') => break,
                    Ok(_) => {}
                }
            }
        }
        while matches!(line.last(), Some(b'\n' | b'\r')) {
            line.pop();
        }
        push_line(&kept, String::from_utf8_lossy(&line).into_owned());
    }
}

pub(super) fn push_line(kept: &Mutex<VecDeque<String>>, mut line: String) {
    if line.len() > STDERR_LINE_BYTES {
        let mut end = STDERR_LINE_BYTES;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        line.truncate(end);
        line.push('…');
    }
    let mut kept = lock(kept);
    if kept.len() == STDERR_LINES_KEPT {
        kept.pop_front();
    }
    kept.push_back(line);
}

/// Whether `error` is toolhost's own, made in place of an answer it could not read.
fn unread_answer(error: &rmcp::model::ErrorData) -> bool {
    error.data.as_ref().and_then(Value::as_str) == Some(UNREAD_ANSWER_MARK)
}

/// Every page of `tools/list`, up to [`MAX_LIST_PAGES`].
async fn list_tools(peer: &rmcp::Peer<RoleClient>) -> Result<Vec<Tool>, String> {
    let mut tools = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_LIST_PAGES {
        let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let page = peer.list_tools(params).await.map_err(|e| match e {
            rmcp::ServiceError::McpError(e) if unread_answer(&e) => {
                format!("tools/list failed: {}", e.message)
            }
            e => format!("tools/list failed: {}", innermost(&e)),
        })?;
        tools.extend(page.tools);
        match page.next_cursor {
            Some(next) if !next.is_empty() => cursor = Some(next),
            _ => return unique(tools),
        }
    }
    Err(format!(
        "tools/list returned more than {MAX_LIST_PAGES} pages; the server's cursor may never end"
    ))
}

/// `tools` when no two share a name: a server that lists one name twice leaves it unclear which
/// definition a call would run, so none of its list is taken.
fn unique(tools: Vec<Tool>) -> Result<Vec<Tool>, String> {
    let mut seen = std::collections::HashSet::new();
    match tools.iter().find(|t| !seen.insert(t.name.as_ref())) {
        Some(twice) => Err(format!(
            "tools/list names the tool {:?} more than once; toolhost cannot tell which \
             definition a call would run, so it takes none of the server's tools",
            twice.name
        )),
        None => Ok(tools),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stderr_is_read_to_its_end_whatever_its_bytes() {
        let kept = Arc::new(Mutex::new(VecDeque::new()));
        let mut bytes = b"first\n\xff\xfe not text\n".to_vec();
        bytes.extend_from_slice(&vec![b'x'; 100_000]);
        bytes.extend_from_slice(b"\nlast words\n");
        read_stderr(&bytes[..], kept.clone()).await;
        let kept: Vec<String> = lock(&kept).iter().cloned().collect();
        assert_eq!(kept.len(), 4, "{kept:?}");
        assert_eq!(kept[0], "first");
        assert_eq!(kept[1], "\u{fffd}\u{fffd} not text");
        assert!(kept[2].starts_with("xxx") && kept[2].ends_with('…'));
        assert!(kept[2].len() <= STDERR_LINE_BYTES + '…'.len_utf8());
        assert_eq!(kept[3], "last words");
    }

    #[test]
    fn a_tool_listed_twice_is_refused_by_name() {
        let tool = |name: &str| {
            serde_json::from_value::<Tool>(serde_json::json!({
                "name": name, "inputSchema": {"type": "object"}
            }))
            .unwrap()
        };
        assert_eq!(unique(vec![tool("a"), tool("b")]).unwrap().len(), 2);
        let refused = unique(vec![tool("a"), tool("b"), tool("a")]).unwrap_err();
        assert!(refused.contains("\"a\" more than once"), "{refused}");
    }
}
