//! What MCP clients are told when the project is loaded again (see `crate::reload`):
//! `notifications/tools/list_changed`, when what the agent offers changed, to each 2025-11-25
//! session and on each 2026-07-28 `subscriptions/listen` stream that asked for it.

use super::{listed_tool, McpTools};
use rmcp::service::{RoleServer, SubscriptionContext};
use rmcp::Peer;
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::watch;
use toolhost_runtime::engine::Runtime;

/// How often a session's follower looks whether its client is gone, when nothing changes.
const SESSION_CHECK: Duration = Duration::from_secs(5);

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

    /// Loads the project at `root` again with `reload` when its files change (looked at every
    /// `every`); clients are told when what they list changed. Calls under way finish on the
    /// load they started on.
    pub fn reload_on_change(
        &self,
        root: PathBuf,
        every: Duration,
        reload: impl Fn() -> Option<Runtime> + Send + Sync + 'static,
    ) -> tokio::task::JoinHandle<()> {
        crate::reload::reload_on_change(self.runtime.clone(), root, every, reload)
    }

    /// Waits until a new load changes what the agent offers from `seen` (updated); false once
    /// no load can come any more. Cancel-safe: a change is only taken once it is reported.
    async fn offer_changed(&self, loads: &mut watch::Receiver<u64>, seen: &mut Vec<Value>) -> bool {
        loop {
            if loads.changed().await.is_err() {
                return false;
            }
            let now = self.listing();
            if now != *seen {
                *seen = now;
                return true;
            }
        }
    }

    /// Tells an initialized (2025-11-25) session's client with `notifications/tools/list_changed`
    /// each time a new load changes what the agent offers, until the client is gone.
    pub(super) fn follow_for_session(&self, peer: Peer<RoleServer>) {
        let tools = self.clone();
        tokio::spawn(async move {
            let mut loads = tools.runtime.loads();
            let mut seen = tools.listing();
            loop {
                tokio::select! {
                    changed = tools.offer_changed(&mut loads, &mut seen) => {
                        if !changed || peer.notify_tool_list_changed().await.is_err() {
                            return;
                        }
                    }
                    () = tokio::time::sleep(SESSION_CHECK) => {
                        if peer.is_transport_closed() {
                            return;
                        }
                    }
                }
            }
        });
    }

    /// Sends `notifications/tools/list_changed` on a `subscriptions/listen` stream each time a
    /// new load changes what the agent offers (when the stream asked for them), until the
    /// client closes it.
    pub(super) async fn follow_changes(&self, subscription: SubscriptionContext) {
        let mut loads = self.runtime.loads();
        let wanted = subscription.accepted().tools_list_changed == Some(true);
        let mut seen = self.listing();
        loop {
            tokio::select! {
                () = subscription.cancelled() => return,
                changed = self.offer_changed(&mut loads, &mut seen) => {
                    if !changed
                        || (wanted && subscription.sink().notify_tool_list_changed().await.is_err())
                    {
                        return;
                    }
                }
            }
        }
    }
}
