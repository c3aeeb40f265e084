//! What MCP clients are told when the project changes (see `crate::reload`): when a new load
//! changes what the agent offers, `notifications/tools/list_changed`; when it changes the
//! served prompts, `notifications/prompts/list_changed`; the served resources or templates,
//! `notifications/resources/list_changed`; and when a followed resource changes (its definition,
//! or its file on disk, looked at every [`FOLLOW_EVERY`]), `notifications/resources/updated`.
//! A 2025-11-25 session is told all of them (updates for what it subscribed to); a 2026-07-28
//! `subscriptions/listen` stream what it asked for.

use super::served::Version;
use super::{listed_tool, McpTools};
use rmcp::model::{ResourceUpdatedNotificationParam, SubscriptionFilter};
use rmcp::service::{RoleServer, SubscriptionContext};
use rmcp::Peer;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::watch;
use toolhost_runtime::engine::Runtime;

/// How often a follower looks at followed resources, and whether its client is gone.
const FOLLOW_EVERY: Duration = Duration::from_secs(1);

/// What a client lists.
#[derive(PartialEq)]
struct Listings {
    tools: Vec<Value>,
    prompts: Vec<Value>,
    resources: (Vec<Value>, Value),
}

/// Which lists a new load changed.
#[derive(Default)]
struct Changed {
    tools: bool,
    prompts: bool,
    resources: bool,
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

    fn listings(&self) -> Listings {
        let templates = self
            .served_templates()
            .ok()
            .and_then(|t| serde_json::to_value(t).ok())
            .unwrap_or_default();
        Listings {
            tools: self.listing(),
            prompts: self.prompt_listing(),
            resources: (self.served_resources(), templates),
        }
    }

    /// Loads the project at `root` again with `reload` when its files change (looked at every
    /// `every`); clients are told when what they list changed. Calls under way finish on the
    /// load they started on.
    pub fn reload_on_change<Load>(
        &self,
        root: PathBuf,
        every: Duration,
        reload: impl Fn() -> Load + Send + Sync + 'static,
    ) -> tokio::task::JoinHandle<()>
    where
        Load: std::future::Future<Output = Option<Runtime>> + Send + 'static,
    {
        crate::reload::reload_on_change(self.runtime.clone(), root, every, reload)
    }

    /// Waits until a new load changes a list from `seen` (updated); `None` once no load can
    /// come any more. Cancel-safe: a change is only taken once it is reported.
    async fn lists_changed(
        &self,
        loads: &mut watch::Receiver<u64>,
        seen: &mut Listings,
    ) -> Option<Changed> {
        loop {
            loads.changed().await.ok()?;
            let now = self.listings();
            let changed = Changed {
                tools: now.tools != seen.tools,
                prompts: now.prompts != seen.prompts,
                resources: now.resources != seen.resources,
            };
            if changed.tools || changed.prompts || changed.resources {
                *seen = now;
                return Some(changed);
            }
        }
    }

    /// Tells an initialized (2025-11-25) session's client of each list a new load changes, and
    /// of each change of a resource it subscribed to, until the client is gone.
    pub(super) fn follow_for_session(&self, peer: Peer<RoleServer>) {
        let tools = self.clone();
        tokio::spawn(async move {
            let mut loads = tools.runtime.loads();
            let mut seen = tools.listings();
            loop {
                let told = tokio::select! {
                    changed = tools.lists_changed(&mut loads, &mut seen) => match changed {
                        Some(changed) => tell_peer(&peer, &changed).await,
                        None => false,
                    },
                    () = tokio::time::sleep(FOLLOW_EVERY) => {
                        let mut told = !peer.is_transport_closed();
                        for uri in tools.updated_resources() {
                            let update = ResourceUpdatedNotificationParam::new(uri);
                            told = told && peer.notify_resource_updated(update).await.is_ok();
                        }
                        told
                    }
                };
                if !told {
                    return;
                }
            }
        });
    }

    /// The filter a `subscriptions/listen` stream gets for `requested`: the list changes it
    /// asked for, and the project's fixed resources among those it asked to follow.
    pub(super) fn accepted_filter(&self, requested: &SubscriptionFilter) -> SubscriptionFilter {
        let mut accepted = SubscriptionFilter::builder();
        if requested.tools_list_changed == Some(true) {
            accepted = accepted.tools_list_changed();
        }
        if requested.prompts_list_changed == Some(true) {
            accepted = accepted.prompts_list_changed();
        }
        if requested.resources_list_changed == Some(true) {
            accepted = accepted.resources_list_changed();
        }
        if let Some(uris) = &requested.resource_subscriptions {
            let runtime = self.runtime();
            let catalog = &runtime.definitions().mcp;
            let served: Vec<&String> = uris
                .iter()
                .filter(|u| catalog.resource(u).is_some())
                .collect();
            // One the project does not serve is left out of the acknowledgement, not followed.
            if !served.is_empty() {
                accepted = accepted.resource_subscriptions(served);
            }
        }
        accepted.build()
    }

    /// Sends what a `subscriptions/listen` stream accepted (list changes, updates of followed
    /// resources) until the client closes it.
    pub(super) async fn follow_changes(&self, subscription: SubscriptionContext) {
        let mut loads = self.runtime.loads();
        let accepted = subscription.accepted().clone();
        let mut seen = self.listings();
        let mut followed: BTreeMap<String, Version> = accepted
            .resource_subscriptions
            .iter()
            .flatten()
            .map(|uri| (uri.clone(), self.version_of(uri)))
            .collect();
        let sink = subscription.sink();
        loop {
            let sent = tokio::select! {
                () = subscription.cancelled() => return,
                changed = self.lists_changed(&mut loads, &mut seen) => match changed {
                    None => false,
                    Some(changed) => {
                        (!(changed.tools && accepted.tools_list_changed == Some(true))
                            || sink.notify_tool_list_changed().await.is_ok())
                        && (!(changed.prompts && accepted.prompts_list_changed == Some(true))
                            || sink.notify_prompt_list_changed().await.is_ok())
                        && (!(changed.resources && accepted.resources_list_changed == Some(true))
                            || sink.notify_resource_list_changed().await.is_ok())
                    }
                },
                () = tokio::time::sleep(FOLLOW_EVERY), if !followed.is_empty() => {
                    let mut sent = true;
                    for uri in self.changed_in(&mut followed) {
                        sent = sent && sink.notify_resource_updated(uri).await.is_ok();
                    }
                    sent
                }
            };
            if !sent {
                return;
            }
        }
    }
}

/// Tells a 2025-11-25 session's client which lists changed; false once it is gone.
async fn tell_peer(peer: &Peer<RoleServer>, changed: &Changed) -> bool {
    (!changed.tools || peer.notify_tool_list_changed().await.is_ok())
        && (!changed.prompts || peer.notify_prompt_list_changed().await.is_ok())
        && (!changed.resources || peer.notify_resource_list_changed().await.is_ok())
}
