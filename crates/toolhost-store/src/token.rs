//! API tokens as the store keeps them: never the secret a client holds, only its hash.
//!
//! The server mints a token, shows its secret once, and stores this record. A request's token is
//! found by its public `id` and checked against `secret_hash`; what the scopes and agent limits
//! mean is the server's business, the store only keeps them.

use crate::model::Millis;
use serde::{Deserialize, Serialize};

/// One API token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiToken {
    /// The public part of the token, unique: how a request's token is found.
    pub id: String,
    /// A name people recognise it by ("ci", "alice's laptop").
    pub name: String,
    /// The hash of the token's secret part (hex); the secret itself is never stored.
    pub secret_hash: String,
    /// What the token may do (for example `read`, `run`, `approve`, `admin`).
    pub scopes: Vec<String>,
    /// The agents whose threads it may reach; `None` for every agent.
    pub agents: Option<Vec<String>>,
    /// When it was created.
    pub created_at: Millis,
    /// When it was revoked, if it was: a revoked token reaches nothing.
    pub revoked_at: Option<Millis>,
    /// When it stops working, if it ever does: from then on it reaches nothing, like a revoked
    /// one. Records written before tokens could expire have none.
    #[serde(default)]
    pub expires_at: Option<Millis>,
}

impl ApiToken {
    /// Whether the token has expired at `now`: its last moment is the millisecond before
    /// `expires_at`.
    pub fn is_expired(&self, now: Millis) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }
}

/// A credential of the project, as stored: a value its writer sealed, and how many times it was
/// written (for compare-and-set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    /// The sealed value.
    pub value: String,
    /// The number of writes so far (1 after the first).
    pub version: i64,
}
