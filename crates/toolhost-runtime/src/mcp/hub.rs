//! The connections to a project's MCP servers, kept on a thread of their own.
//!
//! Connections live on one dedicated thread with its own Tokio runtime, so that a project can be
//! loaded from synchronous code or from inside any executor, and so that the servers' child
//! processes are owned by one place that ends them: when the [`McpHub`] is dropped, every
//! connection is closed there and each server sees its standard input end.
//!
//! A server is started when the project loads (its tools must be known to offer them) and, if
//! it exits, started again by the next call. A call that was under way when the server exited
//! has an unknown outcome and says so; it is never sent twice.

use super::server_def::McpServerDef;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification,
    CancelledNotificationParam, ClientRequest, JsonObject, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ServerResult, Tool,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ServiceExt};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use toolhost_core::tool::AbortSignal;

/// The most pages of `tools/list` read from one server: a cursor that never ends is cut here.
pub const MAX_LIST_PAGES: usize = 50;
/// The lines of a server's standard error kept (the newest), shown when it fails.
pub const STDERR_LINES_KEPT: usize = 40;
/// The longest line of standard error kept, in bytes.
const STDERR_LINE_BYTES: usize = 500;
/// How often a call checks its thread's abort signal.
const ABORT_POLL: Duration = Duration::from_millis(50);

type Connection = RunningService<RoleClient, ClientSide>;

/// What a call does with the progress its server reports: `(progress, total, message)`.
pub type ProgressFn = Arc<dyn Fn(f64, Option<f64>, Option<String>) + Send + Sync>;

/// What toolhost answers as an MCP client: it notes that a server's tool list changed.
struct ClientSide {
    link: std::sync::Weak<ServerLink>,
}

impl ClientHandler for ClientSide {
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

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        let Some(link) = self.link.upgrade() else {
            return;
        };
        match list_tools(&context.peer).await {
            Ok(tools) => *lock(&link.listed) = tools,
            Err(e) => link.note(format!("listing the tools again failed: {e}")),
        }
    }
}

/// One configured server: its definition, its connection when it has one, the tools it listed
/// last, and the tail of what it wrote to standard error.
pub(crate) struct ServerLink {
    pub(crate) def: McpServerDef,
    connection: tokio::sync::Mutex<Option<Connection>>,
    listed: Mutex<Vec<Tool>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// Where the progress of each call under way goes, by its progress token.
    progress: Mutex<HashMap<ProgressToken, ProgressFn>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl ServerLink {
    /// Keeps a line in the server's log (toolhost's own notes about it are marked).
    fn note(&self, line: String) {
        push_line(&self.stderr, format!("[toolhost] {line}"));
    }

    /// The tool `name` as the server listed it last.
    pub(crate) fn listed(&self, name: &str) -> Option<Tool> {
        lock(&self.listed).iter().find(|t| t.name == name).cloned()
    }

    /// The last lines the server wrote to standard error, oldest first.
    pub(crate) fn log_tail(&self) -> Vec<String> {
        lock(&self.stderr).iter().cloned().collect()
    }

    /// " (the server wrote: …)" with the last lines of standard error, or nothing.
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

    /// Starts the server and completes the handshake, within the connect timeout.
    async fn connect(self: &Arc<Self>) -> Result<Connection, String> {
        let def = &self.def;
        let mut command = tokio::process::Command::new(&def.program);
        command
            .args(&def.args)
            .current_dir(&def.cwd)
            .env_clear()
            .kill_on_drop(true);
        for name in std::iter::once("PATH").chain(def.env.iter().map(String::as_str)) {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        let (transport, stderr) = TokioChildProcess::builder(command)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", def.program.display()))?;
        if let Some(stderr) = stderr {
            let kept = self.stderr.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    push_line(&kept, line);
                }
            });
        }
        let handler = ClientSide {
            link: Arc::downgrade(self),
        };
        match tokio::time::timeout(def.connect_timeout, handler.serve(transport)).await {
            Ok(Ok(connection)) => Ok(connection),
            Ok(Err(e)) => Err(format!("the MCP handshake failed: {e}{}", self.said())),
            Err(_) => Err(format!(
                "the server did not complete the MCP handshake within {} ms{}",
                def.connect_timeout.as_millis(),
                self.said()
            )),
        }
    }

    /// Connects (again, if the server exited) and lists its tools.
    async fn refresh(self: &Arc<Self>) -> Result<Vec<Tool>, String> {
        let mut slot = self.connection.lock().await;
        if slot.as_ref().is_none_or(|c| c.is_closed()) {
            *slot = Some(self.connect().await?);
        }
        let connection = slot.as_ref().expect("connected above");
        let tools = tokio::time::timeout(self.def.call_timeout, list_tools(connection.peer()))
            .await
            .map_err(|_| {
                format!(
                    "tools/list got no answer within {} ms",
                    self.def.call_timeout.as_millis()
                )
            })??;
        *lock(&self.listed) = tools.clone();
        Ok(tools)
    }

    /// Sends one `tools/call` and waits for its answer, the timeouts or the abort signal.
    async fn call(
        self: &Arc<Self>,
        tool: String,
        arguments: JsonObject,
        meta: JsonObject,
        abort: AbortSignal,
        on_progress: Option<ProgressFn>,
    ) -> Result<CallToolResult, CallError> {
        let mut params = CallToolRequestParams::new(tool).with_arguments(arguments);
        params.meta = Some(meta.into());
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // A server that exited may not be noticed as closed until a send fails: a request that
        // could not be sent never reached it, so it is sent once more on a new connection.
        let mut restarted = false;
        let (peer, handle) = loop {
            let peer = {
                let mut slot = self.connection.lock().await;
                if slot.as_ref().is_none_or(|c| c.is_closed()) {
                    if slot.is_some() {
                        self.note("the server had exited; starting it again".to_owned());
                    }
                    let connection = self.connect().await.map_err(CallError::NotSent)?;
                    *slot = Some(connection);
                }
                slot.as_ref().expect("connected above").peer().clone()
            };
            let mut options = PeerRequestOptions::with_timeout(self.def.call_timeout)
                .reset_timeout_on_progress()
                .with_max_total_timeout(self.def.max_call_timeout);
            options.timeout = Some(self.def.call_timeout);
            match peer
                .send_request_with_option(request.clone(), options)
                .await
            {
                Ok(handle) => break (peer, handle),
                Err(rmcp::ServiceError::TransportClosed) if !restarted => {
                    restarted = true;
                    self.note("the server had exited; starting it again".to_owned());
                    if let Some(dead) = self.connection.lock().await.take() {
                        let _ = dead.cancel().await;
                    }
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
                    return match result {
                        Ok(ServerResult::CallToolResult(result)) => Ok(result),
                        Ok(other) => Err(CallError::Failed(format!("the server answered tools/call with something else: {other:?}"))),
                        Err(rmcp::ServiceError::McpError(e)) => Err(CallError::Failed(format!("the server refused the call: {} (code {})", e.message, e.code.0))),
                        Err(rmcp::ServiceError::Timeout { timeout }) => Err(CallError::TimedOut(timeout)),
                        Err(rmcp::ServiceError::TransportClosed) => Err(CallError::Lost(format!("the server exited while the call ran{}", self.said()))),
                        Err(e) => Err(CallError::Lost(e.to_string())),
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

    async fn close(&self) {
        if let Some(connection) = self.connection.lock().await.take() {
            let _ = connection.cancel().await;
        }
    }
}

/// Takes a call's progress route away when the call ends, however it ends.
struct Unregister(Arc<ServerLink>, ProgressToken);

impl Drop for Unregister {
    fn drop(&mut self) {
        lock(&self.0.progress).remove(&self.1);
    }
}

/// Why a call did not get the server's result.
#[derive(Debug)]
pub(crate) enum CallError {
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

fn push_line(kept: &Mutex<VecDeque<String>>, mut line: String) {
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

/// Every page of `tools/list`, up to [`MAX_LIST_PAGES`].
async fn list_tools(peer: &rmcp::Peer<RoleClient>) -> Result<Vec<Tool>, String> {
    let mut tools = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_LIST_PAGES {
        let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let page = peer
            .list_tools(params)
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        tools.extend(page.tools);
        match page.next_cursor {
            Some(next) if !next.is_empty() => cursor = Some(next),
            _ => return Ok(tools),
        }
    }
    Err(format!(
        "tools/list returned more than {MAX_LIST_PAGES} pages; the server's cursor may never end"
    ))
}

/// The project's MCP servers and the thread their connections live on.
pub struct McpHub {
    runtime: tokio::runtime::Handle,
    pub(crate) servers: BTreeMap<String, Arc<ServerLink>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for McpHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHub")
            .field("servers", &self.servers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl McpHub {
    /// Starts the connection thread for these servers (nothing is connected yet).
    pub fn start(defs: Vec<McpServerDef>) -> std::io::Result<Self> {
        let servers: BTreeMap<String, Arc<ServerLink>> = defs
            .into_iter()
            .map(|def| {
                let link = ServerLink {
                    def,
                    connection: tokio::sync::Mutex::new(None),
                    listed: Mutex::new(Vec::new()),
                    stderr: Arc::new(Mutex::new(VecDeque::new())),
                    progress: Mutex::new(HashMap::new()),
                };
                (link.def.name.clone(), Arc::new(link))
            })
            .collect();
        let (handle_tx, handle_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let links: Vec<Arc<ServerLink>> = servers.values().cloned().collect();
        let thread = std::thread::Builder::new()
            .name("toolhost-mcp".to_owned())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = handle_tx.send(Err(e));
                        return;
                    }
                };
                let _ = handle_tx.send(Ok(runtime.handle().clone()));
                runtime.block_on(async move {
                    let _ = stopped.await;
                    // Connections are closed here, on the runtime that owns their processes.
                    for link in links {
                        link.close().await;
                    }
                });
            })?;
        let runtime = handle_rx
            .recv()
            .map_err(|_| std::io::Error::other("the MCP connection thread ended at once"))??;
        Ok(Self {
            runtime,
            servers,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Connects to every server and lists its tools, all at once; blocks until each has
    /// answered or failed. Call it outside any async executor's worker (at load).
    pub fn connect_all(&self) -> BTreeMap<String, Result<Vec<Tool>, String>> {
        let pending: Vec<_> = self
            .servers
            .iter()
            .map(|(name, link)| {
                let link = link.clone();
                (
                    name.clone(),
                    self.runtime.spawn(async move { link.refresh().await }),
                )
            })
            .collect();
        pending
            .into_iter()
            .map(|(name, task)| {
                let listed = futures_block_on(task)
                    .unwrap_or_else(|e| Err(format!("the connection task failed: {e}")));
                (name, listed)
            })
            .collect()
    }

    /// Calls `tool` on `server`; runs on the hub's thread whatever executor awaits it.
    pub(crate) async fn call(
        &self,
        server: &str,
        tool: String,
        arguments: JsonObject,
        meta: JsonObject,
        abort: AbortSignal,
        on_progress: Option<ProgressFn>,
    ) -> Result<CallToolResult, CallError> {
        let Some(link) = self.servers.get(server).cloned() else {
            return Err(CallError::NotSent(format!(
                "no MCP server named \"{server}\""
            )));
        };
        self.runtime
            .spawn(async move { link.call(tool, arguments, meta, abort, on_progress).await })
            .await
            .unwrap_or_else(|e| Err(CallError::Lost(format!("the call's task failed: {e}"))))
    }

    /// The server named `name`.
    pub(crate) fn server(&self, name: &str) -> Option<&Arc<ServerLink>> {
        self.servers.get(name)
    }
}

/// Waits for a task of the hub's runtime from a thread that is not one of its workers.
fn futures_block_on<F: std::future::Future>(future: F) -> F::Output {
    // A plain park/unpark executor: the hub's own thread drives the task, this one only waits.
    struct Unparker(std::thread::Thread);
    impl std::task::Wake for Unparker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Arc::new(Unparker(std::thread::current())).into();
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

impl Drop for McpHub {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            // Never wait on the hub's own thread (a runtime dropped from a task of it).
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}
