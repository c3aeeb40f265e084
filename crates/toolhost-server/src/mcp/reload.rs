//! Tool files that change on disk: the project is loaded again and clients are told with
//! `notifications/tools/list_changed` when what they list changed.

use super::{listed_tool, McpTools};
use rmcp::service::{RoleServer, SubscriptionContext};
use rmcp::Peer;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use toolhost_runtime::engine::Runtime;

/// How deep under `agents/` the watch looks (tool files may import helpers in folders).
const WATCH_DEPTH: usize = 4;

/// Every file under the project's `agents/` with its size and modification time, sorted: what
/// changes when a definition is written, added or removed.
fn fingerprint(root: &Path) -> Vec<(PathBuf, u64, Option<SystemTime>)> {
    let mut files = Vec::new();
    let mut folders = vec![(root.join("agents"), 0)];
    while let Some((folder, depth)) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if meta.is_dir() {
                if depth < WATCH_DEPTH {
                    folders.push((path, depth + 1));
                }
            } else {
                files.push((path, meta.len(), meta.modified().ok()));
            }
        }
    }
    files.sort();
    files
}

impl McpTools {
    /// What a client lists now: each offered tool as `tools/list` gives it.
    fn listing(&self) -> Vec<Value> {
        let runtime = self.runtime();
        self.offered()
            .iter()
            .filter_map(|name| runtime.tools().get(name))
            .map(listed_tool)
            .collect()
    }

    /// Looks at the project's files under `root` every `every`; when they changed, takes the
    /// runtime `reload` loads (one that does not load is passed over, the old one kept) and,
    /// when what the agent offers changed with it, tells `peer` with
    /// `notifications/tools/list_changed`. Calls under way finish on the runtime they started
    /// on. Ends when the client is gone.
    pub fn reload_on_change(
        &self,
        root: PathBuf,
        peer: Peer<RoleServer>,
        every: Duration,
        reload: impl Fn() -> Option<Runtime> + Send + Sync + 'static,
    ) -> tokio::task::JoinHandle<()> {
        let tools = self.clone();
        let reload = Arc::new(reload);
        tokio::spawn(async move {
            let mut seen = fingerprint(&root);
            loop {
                tokio::time::sleep(every).await;
                let now = fingerprint(&root);
                if now == seen {
                    continue;
                }
                seen = now;
                let before = tools.listing();
                // Loading starts the project's MCP servers and reads its files: off the executor.
                let reload = reload.clone();
                let Ok(Some(runtime)) = tokio::task::spawn_blocking(move || reload()).await else {
                    continue;
                };
                let old = std::mem::replace(
                    &mut *tools.runtime.write().unwrap_or_else(|e| e.into_inner()),
                    Arc::new(runtime),
                );
                // The old project's MCP connections close when its last call is done; a drop
                // that waits for them never holds the lock or an executor thread.
                tokio::task::spawn_blocking(move || drop(old));
                if tools.listing() == before {
                    continue;
                }
                tools.changes.send_modify(|n| *n += 1);
                // A client that initialized speaks 2025-11-25 and is told directly; a 2026-07-28
                // client is told only on the listen streams it opened.
                if peer.peer_info().is_some() && peer.notify_tool_list_changed().await.is_err() {
                    return;
                }
            }
        })
    }

    /// Sends `notifications/tools/list_changed` on a `subscriptions/listen` stream at each
    /// change of what the agent offers (when the stream asked for them), until the client
    /// closes it.
    pub(super) async fn follow_changes(&self, subscription: SubscriptionContext) {
        let mut changes = self.changes.subscribe();
        let wanted = subscription.accepted().tools_list_changed == Some(true);
        loop {
            tokio::select! {
                () = subscription.cancelled() => return,
                changed = changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    if wanted && subscription.sink().notify_tool_list_changed().await.is_err() {
                        return;
                    }
                }
            }
        }
    }
}
