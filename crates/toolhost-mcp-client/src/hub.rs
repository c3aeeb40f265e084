//! The connections to a project's MCP servers, kept on a thread of their own.
//!
//! Connections live on one dedicated thread with its own Tokio runtime, so that a project can be
//! loaded from synchronous code or from inside any executor, and so that the servers' child
//! processes are owned by one place that ends them: when the [`McpHub`] is dropped, every
//! connection is closed there and each program sees its standard input end.
//!
//! A server is reached when the project loads (its tools must be known to offer them) and, if
//! a program exits or a connection closes, again by the next call. A call that was under way
//! then has an unknown outcome and says so; it is never sent twice.

pub use super::link::{ProgressFn, MAX_CONNECTIONS, MAX_LIST_PAGES, STDERR_LINES_KEPT};

use super::link::{CallError, OutgoingCall, ServerLink};
use super::server_def::McpServerDef;
use rmcp::model::{CallToolResult, Tool};
use std::collections::BTreeMap;
use std::sync::Arc;
use toolhost_providers::fetch::Fetcher;

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
    /// Starts the connection thread for these servers (nothing is connected yet); `http`
    /// carries the requests to servers at a URL, `vault` keeps their OAuth grants.
    pub fn start(
        defs: Vec<McpServerDef>,
        http: Option<Arc<dyn Fetcher>>,
        vault: Option<Arc<super::oauth::Vault>>,
    ) -> std::io::Result<Self> {
        let servers: BTreeMap<String, Arc<ServerLink>> = defs
            .into_iter()
            .map(|def| {
                let link = ServerLink::new(def, http.clone(), vault.clone());
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

    /// Connects to every server and lists its tools, all at once; done when each has answered
    /// or failed (each within its connect timeout). The connections are made on the hub's
    /// thread whatever executor awaits this.
    pub async fn connect_all(&self) -> BTreeMap<String, Result<Vec<Tool>, String>> {
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
        let mut listed = BTreeMap::new();
        for (name, task) in pending {
            let tools = task
                .await
                .unwrap_or_else(|e| Err(format!("the connection task failed: {e}")));
            listed.insert(name, tools);
        }
        listed
    }

    /// Makes `call` to `server`; runs on the hub's thread whatever executor awaits it.
    pub async fn call(
        &self,
        server: &str,
        call: OutgoingCall,
    ) -> Result<CallToolResult, CallError> {
        let Some(link) = self.servers.get(server).cloned() else {
            return Err(CallError::NotSent(format!(
                "no MCP server named \"{server}\""
            )));
        };
        self.runtime
            .spawn(async move { link.call(call).await })
            .await
            .unwrap_or_else(|e| Err(CallError::Lost(format!("the call's task failed: {e}"))))
    }

    /// What a login for server `name` needs: its definition, the HTTP client and the vault its
    /// grants are kept in; `None` unless it is at a URL, has `oauth` and grants can be kept.
    pub fn login_parts(
        &self,
        name: &str,
    ) -> Option<(McpServerDef, Arc<dyn Fetcher>, Arc<super::oauth::Vault>)> {
        let link = self.servers.get(name)?;
        let (http, vault) = link.login_parts()?;
        Some((link.def.clone(), http, vault))
    }

    /// The server named `name`.
    pub fn server(&self, name: &str) -> Option<&Arc<ServerLink>> {
        self.servers.get(name)
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
