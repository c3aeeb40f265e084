//! The connections to a project's MCP servers.
//!
//! A server is reached when its tools are listed (they must be known to offer them) and, if a
//! program exits or a connection closes, again by the next call. A call that was under way
//! then has an unknown outcome and says so; it is never sent twice.
//!
//! The connections live on the async runtime that made them (the one that awaited
//! [`McpHub::connect_all`] or a call): no thread or runtime of their own. Each call runs as a
//! task there, so that a call whose caller stops waiting still ends (its answer is passed over)
//! rather than being cut off mid-exchange. [`McpHub::close`] ends every connection gracefully
//! (a program sees its standard input end, then its signals; see the stdio transport); a hub
//! dropped without it closes them the same way: waited for when it is dropped outside any
//! runtime (a command that ends), in the background inside one (a server replacing a load).
//! Should the runtime itself go away first, each program's process group is killed as its
//! transport is dropped.

pub use super::link::{ProgressFn, MAX_CONNECTIONS, MAX_LIST_PAGES, STDERR_LINES_KEPT};

use super::link::{CallError, ConnectError, OutgoingCall, ServerLink};
use super::server_def::McpServerDef;
use rmcp::model::{CallToolResult, Tool};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use tokio::runtime::{Handle, RuntimeFlavor};
use toolhost_providers::fetch::Fetcher;

/// The project's MCP servers and their connections.
pub struct McpHub {
    servers: BTreeMap<String, Arc<ServerLink>>,
    /// The runtime the connections were made on, once one was.
    runtime: OnceLock<Handle>,
}

impl std::fmt::Debug for McpHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHub")
            .field("servers", &self.servers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl McpHub {
    /// The hub of these servers (nothing is connected yet); `http` carries the requests to
    /// servers at a URL, `vault` keeps their OAuth grants.
    pub fn new(
        defs: Vec<McpServerDef>,
        http: Option<Arc<dyn Fetcher>>,
        vault: Option<Arc<super::oauth::Vault>>,
    ) -> Self {
        let servers = defs
            .into_iter()
            .map(|def| {
                let link = ServerLink::new(def, http.clone(), vault.clone());
                (link.def.name.clone(), Arc::new(link))
            })
            .collect();
        Self {
            servers,
            runtime: OnceLock::new(),
        }
    }

    /// Connects to every server and lists its tools, all at once; done when each has answered
    /// or failed (each within its connect timeout).
    pub async fn connect_all(&self) -> BTreeMap<String, Result<Vec<Tool>, ConnectError>> {
        self.runtime.get_or_init(Handle::current);
        let pending: Vec<_> = self
            .servers
            .iter()
            .map(|(name, link)| {
                let link = link.clone();
                (
                    name.clone(),
                    tokio::spawn(async move { link.refresh().await }),
                )
            })
            .collect();
        let mut listed = BTreeMap::new();
        for (name, task) in pending {
            let tools = task
                .await
                .unwrap_or_else(|e| Err(ConnectError::Task(e.to_string())));
            listed.insert(name, tools);
        }
        listed
    }

    /// Makes `call` to `server`, as a task of the runtime that awaits it.
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
        self.runtime.get_or_init(Handle::current);
        tokio::spawn(async move { link.call(call).await })
            .await
            .unwrap_or_else(|e| Err(CallError::Lost(format!("the call's task failed: {e}"))))
    }

    /// Ends every connection gracefully, all at once; a later call connects again.
    pub async fn close(&self) {
        close_all(self.servers.values().cloned().collect()).await
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

async fn close_all(links: Vec<Arc<ServerLink>>) {
    let closing: Vec<_> = links
        .into_iter()
        .map(|link| tokio::spawn(async move { link.close().await }))
        .collect();
    for task in closing {
        let _ = task.await;
    }
}

impl Drop for McpHub {
    fn drop(&mut self) {
        let Some(runtime) = self.runtime.get().cloned() else {
            // Never connected: nothing to close.
            return;
        };
        let links: Vec<Arc<ServerLink>> = std::mem::take(&mut self.servers).into_values().collect();
        // Outside any runtime the closes are waited for on the runtime that owns the
        // connections, which its own threads drive (a current-thread runtime is driven only by
        // whoever blocks on it, so its closes go on when it runs again, or end with it).
        let outside = Handle::try_current().is_err();
        if outside && runtime.runtime_flavor() == RuntimeFlavor::MultiThread {
            runtime.block_on(close_all(links));
        } else {
            drop(runtime.spawn(close_all(links)));
        }
    }
}
