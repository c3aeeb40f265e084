//! What every handler shares.

use crate::config::ServerConfig;
use crate::metrics::Metrics;
use crate::runs::Runs;
use std::sync::{Arc, RwLock};
use tokio::sync::watch;
use toolhost_runtime::engine::Runtime;
use toolhost_store::AsyncStore;

/// The project as loaded now, shared by the API and `/mcp`: replaced when the project's files
/// change (see [`crate::Server::reload_on_change`]); what started on a load keeps that load.
#[derive(Clone)]
pub(crate) struct RuntimeSlot {
    current: Arc<RwLock<Arc<Runtime>>>,
    /// Counts the loads put in place, for those who follow them.
    loads: Arc<watch::Sender<u64>>,
}

impl RuntimeSlot {
    pub fn new(runtime: Arc<Runtime>) -> Self {
        Self {
            current: Arc::new(RwLock::new(runtime)),
            loads: Arc::new(watch::channel(0).0),
        }
    }

    /// The project as loaded now.
    pub fn current(&self) -> Arc<Runtime> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Puts `runtime` in place and tells the followers; the load it replaces.
    pub fn replace(&self, runtime: Arc<Runtime>) -> Arc<Runtime> {
        let old = std::mem::replace(
            &mut *self.current.write().unwrap_or_else(|e| e.into_inner()),
            runtime,
        );
        self.loads.send_modify(|n| *n += 1);
        old
    }

    /// Changes each time a new load is put in place.
    pub fn loads(&self) -> watch::Receiver<u64> {
        self.loads.subscribe()
    }
}

/// The shared state of a server: cheap to clone.
#[derive(Clone)]
pub(crate) struct AppState {
    pub slot: RuntimeSlot,
    pub db: AsyncStore,
    pub runs: Runs,
    pub config: Arc<ServerConfig>,
    pub metrics: Arc<Metrics>,
    /// Turns true when the server begins to shut down: event streams end then.
    pub closing: watch::Receiver<bool>,
    /// MCP logins waiting for their person (see `routes::mcp_login`).
    pub logins: Arc<crate::logins::Logins>,
}

impl AppState {
    pub fn new(
        runtime: Arc<Runtime>,
        config: ServerConfig,
        closing: watch::Receiver<bool>,
    ) -> Self {
        Self {
            closing,
            db: AsyncStore::new(runtime.store().clone()),
            slot: RuntimeSlot::new(runtime),
            runs: Runs::new(config.max_runs),
            config: Arc::new(config),
            metrics: Arc::default(),
            logins: Arc::default(),
        }
    }

    /// The project as loaded now.
    pub fn runtime(&self) -> Arc<Runtime> {
        self.slot.current()
    }
}
