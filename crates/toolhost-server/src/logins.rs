//! The logins to MCP servers that wait for their person: started by
//! `POST /v1/mcp/servers/{name}/login`, ended by the authorization server's callback (see
//! `routes::mcp_login`). Held in memory by `state`, for a while and up to a number.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use toolhost_mcp_client::oauth::login::Pending;

/// How long a login waits for its person.
pub(crate) const PATIENCE: Duration = Duration::from_secs(600);
/// The most logins waiting at once; the oldest is dropped for a new one.
const MAX_WAITING: usize = 64;

/// Logins waiting for their person, by `state`.
#[derive(Default)]
pub(crate) struct Logins(Mutex<HashMap<String, (Instant, Pending)>>);

impl Logins {
    pub(crate) fn keep(&self, pending: Pending) {
        let mut waiting = self.0.lock().unwrap_or_else(|e| e.into_inner());
        waiting.retain(|_, (at, _)| at.elapsed() < PATIENCE);
        if waiting.len() >= MAX_WAITING {
            let oldest = waiting
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(state, _)| state.clone());
            if let Some(oldest) = oldest {
                waiting.remove(&oldest);
            }
        }
        waiting.insert(pending.state.clone(), (Instant::now(), pending));
    }

    pub(crate) fn take(&self, state: &str) -> Option<Pending> {
        let mut waiting = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (at, pending) = waiting.remove(state)?;
        (at.elapsed() < PATIENCE).then_some(pending)
    }
}
