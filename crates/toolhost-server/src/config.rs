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
    /// How long a request may take until its answer starts (an event stream starts at once and
    /// then runs as long as its client stays).
    pub request_timeout: Duration,
    /// The browser origins (`https://app.example.com`) allowed to call the API from a web page;
    /// none by default, so no other site's page can.
    pub allowed_origins: Vec<String>,
    /// The agent whose tools `/mcp` serves to MCP clients (see [`crate::mcp`]); without one
    /// there is no `/mcp`.
    pub mcp_agent: Option<String>,
    /// OAuth access tokens of an authorization server, taken at `/mcp` besides toolhost's own
    /// (see [`crate::oauth`]); none by default.
    pub oauth: Option<crate::OAuthSettings>,
    /// How long a call of a 2025-11-25 MCP session may hold its POST event stream before the
    /// server closes it (SEP-1699), so that no connection stays open for a long call (proxies
    /// and load balancers cut those); the client resumes with a GET carrying `Last-Event-ID`.
    /// None by default: the stream stays open until the call's answer.
    pub mcp_stream_hold: Option<Duration>,
    /// How long a connection may take to send a request's head (its line and headers); past
    /// it the connection is closed. Default 30 s.
    pub header_read_timeout: Duration,
    /// How many connections one client address may hold open at once; one more is closed at
    /// once. Default 256.
    pub max_connections_per_client: usize,
    /// How often the server looks in the store for threads with work that no live run holds
    /// (their owner died, or let go without taking up what arrived) and takes them up: what
    /// lets several servers share one database and replace each other. Default 2 s.
    pub takeover_interval: Duration,
    /// How many threads this server runs at once. Work that arrives while it runs that many is
    /// stored and offered to any server of the same database with room for it (see
    /// [`toolhost_store::Store::offer_work`]); this server takes it up itself once it has room.
    /// Default 256.
    pub max_runs: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: 1024 * 1024,
            poll_interval: Duration::from_millis(250),
            keep_alive: Duration::from_secs(15),
            max_page: 200,
            request_timeout: Duration::from_secs(30),
            allowed_origins: Vec::new(),
            mcp_agent: None,
            oauth: None,
            mcp_stream_hold: None,
            header_read_timeout: Duration::from_secs(30),
            max_connections_per_client: 256,
            takeover_interval: Duration::from_secs(2),
            max_runs: 256,
        }
    }
}

impl ServerConfig {
    /// Checks what a person configured, naming the setting at fault.
    pub fn check(&self) -> Result<(), SettingsError> {
        for origin in &self.allowed_origins {
            crate::cors::origin(origin).map_err(SettingsError::Origin)?;
        }
        if self.request_timeout.is_zero() {
            return Err(SettingsError::TooSmall {
                setting: "request_timeout",
                minimum: "more than 0",
            });
        }
        if self.max_body_bytes == 0 {
            return Err(SettingsError::TooSmall {
                setting: "max_body_bytes",
                minimum: "more than 0",
            });
        }
        if self.header_read_timeout.is_zero() {
            return Err(SettingsError::TooSmall {
                setting: "header_read_timeout",
                minimum: "more than 0",
            });
        }
        if self.max_connections_per_client == 0 {
            return Err(SettingsError::TooSmall {
                setting: "max_connections_per_client",
                minimum: "more than 0",
            });
        }
        if self
            .mcp_stream_hold
            .is_some_and(|hold| hold < Duration::from_millis(10))
        {
            return Err(SettingsError::TooSmall {
                setting: "mcp_stream_hold",
                minimum: "at least 10 ms",
            });
        }
        if self.poll_interval < Duration::from_millis(10) {
            return Err(SettingsError::TooSmall {
                setting: "poll_interval",
                minimum: "at least 10 ms",
            });
        }
        if self.max_runs == 0 {
            return Err(SettingsError::TooSmall {
                setting: "max_runs",
                minimum: "at least 1",
            });
        }
        if self.takeover_interval < Duration::from_millis(10) {
            return Err(SettingsError::TooSmall {
                setting: "takeover_interval",
                minimum: "at least 10 ms",
            });
        }
        if self.keep_alive.is_zero() {
            return Err(SettingsError::TooSmall {
                setting: "keep_alive",
                minimum: "more than 0",
            });
        }
        if let Some(oauth) = &self.oauth {
            if self.mcp_agent.is_none() {
                return Err(SettingsError::OAuthWithoutMcp);
            }
            oauth.check().map_err(SettingsError::OAuth)?;
        }
        if self.max_page == 0 {
            return Err(SettingsError::TooSmall {
                setting: "max_page",
                minimum: "more than 0",
            });
        }
        Ok(())
    }
}

/// Why the server's settings cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// An allowed origin that is not an origin.
    #[error("{0}")]
    Origin(String),
    /// A setting under its minimum.
    #[error("{setting} must be {minimum}")]
    TooSmall {
        /// The setting.
        setting: &'static str,
        /// What it must be.
        minimum: &'static str,
    },
    /// OAuth settings without `/mcp` to apply to.
    #[error("oauth applies to /mcp only, which needs an MCP agent (mcp_agent)")]
    OAuthWithoutMcp,
    /// The OAuth settings cannot be used.
    #[error(transparent)]
    OAuth(#[from] crate::oauth::OAuthSettingsError),
}
