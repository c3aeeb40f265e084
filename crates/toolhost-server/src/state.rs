//! What every handler shares.

use crate::config::ServerConfig;
use crate::metrics::Metrics;
use crate::runs::Runs;
use std::sync::Arc;
use tokio::sync::watch;
use toolhost_runtime::engine::Runtime;
use toolhost_store::AsyncStore;

/// The shared state of a server: cheap to clone.
#[derive(Clone)]
pub(crate) struct AppState {
    pub runtime: Arc<Runtime>,
    pub db: AsyncStore,
    pub runs: Runs,
    pub config: Arc<ServerConfig>,
    pub metrics: Arc<Metrics>,
    /// Turns true when the server begins to shut down: event streams end then.
    pub closing: watch::Receiver<bool>,
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
            runtime,
            runs: Runs::default(),
            config: Arc::new(config),
            metrics: Arc::default(),
        }
    }
}
