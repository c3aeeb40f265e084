//! What a server may be configured with.

use std::time::Duration;

/// Limits and settings of a server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// How often an event stream looks at the store for what other processes stored.
    pub poll_interval: Duration,
    /// How long an event stream may go without sending anything before it sends a comment, so
    /// that proxies keep the connection open.
    pub keep_alive: Duration,
    /// The most items one page of a list holds.
    pub max_page: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: 1024 * 1024,
            poll_interval: Duration::from_millis(250),
            keep_alive: Duration::from_secs(15),
            max_page: 200,
        }
    }
}
