//! Bearer tokens: minted with a random secret, stored as the secret's SHA-256, checked in
//! constant time, with scopes, an optional list of agents and an optional expiry.
//!
//! A token reads `thk_<id>_<secret>`: the id (12 hex digits) finds the stored record, the secret
//! (64 hex digits, 256 random bits) proves the holder. Only the secret's hash is stored, so a
//! copy of the database lets nobody in.

use crate::problem::Problem;
use crate::state::AppState;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use toolhost_store::{display_millis, now_millis, ApiToken, AsyncStore, Millis};

/// What a token allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// See agents, threads, messages, approvals, variable requests and events.
    Read,
    /// Create threads, send messages, give variables, stop runs.
    Run,
    /// Decide approvals.
    Approve,
    /// Everything.
    Admin,
}

impl Scope {
    /// Every scope, in order.
    pub const ALL: [Scope; 4] = [Scope::Read, Scope::Run, Scope::Approve, Scope::Admin];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Run => "run",
            Scope::Approve => "approve",
            Scope::Admin => "admin",
        }
    }

    /// Reads a stored or typed name.
    pub fn parse(name: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

/// Why a token could not be minted.
#[derive(Debug, thiserror::Error)]
pub enum MintError {
    /// The system's random source failed.
    #[error("no random bytes for the token: {0}")]
    Random(String),
    /// A token needs at least one scope.
    #[error("a token needs at least one scope ({})", Scope::ALL.map(Scope::as_str).join(", "))]
    NoScope,
    /// A lifetime must be positive and end before the end of time as the store counts it.
    #[error("a token's lifetime must be more than 0 ms and less than {} ms", Millis::MAX / 2)]
    Lifetime,
}

/// A token as it is made: the text the holder keeps (shown once) and the record to store.
#[derive(Debug)]
pub struct Minted {
    /// The whole token: `thk_<id>_<secret>`.
    pub token: String,
    /// What is stored: the id, the secret's hash, the scopes and agents.
    pub record: ApiToken,
}

/// Makes a new token named `name` with `scopes`, limited to `agents` when given, that expires
/// `expires_in` milliseconds from now when given (never otherwise).
pub fn mint(
    name: &str,
    scopes: &[Scope],
    agents: Option<Vec<String>>,
    expires_in: Option<Millis>,
) -> Result<Minted, MintError> {
    if scopes.is_empty() {
        return Err(MintError::NoScope);
    }
    if expires_in.is_some_and(|ms| ms <= 0 || ms >= Millis::MAX / 2) {
        return Err(MintError::Lifetime);
    }
    let created_at = now_millis();
    let mut id = [0u8; 6];
    let mut secret = [0u8; 32];
    getrandom::fill(&mut id).map_err(|e| MintError::Random(e.to_string()))?;
    getrandom::fill(&mut secret).map_err(|e| MintError::Random(e.to_string()))?;
    let (id, secret) = (hex(&id), hex(&secret));
    let mut names: Vec<String> = scopes.iter().map(|s| s.as_str().to_owned()).collect();
    names.sort();
    names.dedup();
    Ok(Minted {
        token: format!("thk_{id}_{secret}"),
        record: ApiToken {
            secret_hash: hash(&secret),
            id,
            name: name.to_owned(),
            scopes: names,
            agents,
            created_at,
            revoked_at: None,
            expires_at: expires_in.map(|ms| created_at + ms),
        },
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hash(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

/// The holder of a valid token, as handlers see it.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The token's id.
    pub token_id: String,
    scopes: Vec<Scope>,
    agents: Option<Vec<String>>,
}

impl Caller {
    /// The holder of a valid OAuth access token (see [`crate::oauth`]): known by its subject
    /// and the client it was given to (a session one client opened is not another's, even for
    /// the same person), with the toolhost scopes it was granted, for every agent.
    pub(crate) fn from_oauth(subject: &str, client: Option<&str>, scopes: Vec<Scope>) -> Self {
        Caller {
            token_id: format!("oauth:{subject}|{}", client.unwrap_or("")),
            scopes,
            agents: None,
        }
    }

    /// Refuses with 403 unless the token has `scope` (or `admin`).
    pub fn require(&self, scope: Scope) -> Result<(), Problem> {
        if self.scopes.contains(&scope) || self.scopes.contains(&Scope::Admin) {
            Ok(())
        } else {
            Err(Problem::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                format!(
                    "this token lacks the \"{}\" scope (it has: {})",
                    scope.as_str(),
                    self.scopes
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ))
        }
    }

    /// Whether the token reaches every agent (it is not limited to some).
    /// The agents the token is limited to; `None` for every agent.
    pub fn agents(&self) -> Option<&[String]> {
        self.agents.as_deref()
    }

    /// Whether the token may reach every agent.
    pub fn may_reach_all(&self) -> bool {
        self.agents.is_none()
    }

    /// Refuses with 403 (at `/agent` of the body) unless the token may start threads of `agent`.
    pub fn require_agent(&self, agent: &str) -> Result<(), Problem> {
        if self.may_reach(agent) {
            return Ok(());
        }
        Err(Problem::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!("this token may not start threads of agent \"{agent}\""),
        )
        .at("/agent"))
    }

    /// Whether the token may reach threads of `agent`.
    pub fn may_reach(&self, agent: &str) -> bool {
        self.agents
            .as_ref()
            .is_none_or(|agents| agents.iter().any(|a| a == agent))
    }
}

fn unauthorized(detail: &str) -> Problem {
    Problem::new(StatusCode::UNAUTHORIZED, "unauthorized", detail)
}

/// Why a stored token no longer lets its holder in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lapsed {
    /// It was revoked.
    Revoked,
    /// It expired at this time.
    Expired(Millis),
}

impl Lapsed {
    /// Whether `record` has lapsed at `now`, and how; `None` while it is valid.
    pub(crate) fn of(record: &ApiToken, now: Millis) -> Option<Lapsed> {
        if record.revoked_at.is_some() {
            return Some(Lapsed::Revoked);
        }
        let at = record.expires_at.filter(|_| record.is_expired(now))?;
        Some(Lapsed::Expired(at))
    }

    /// Looks the token with `id` up again: how it lapsed, if it did (a token that is gone counts
    /// as revoked). A store that cannot be read says nothing against it.
    pub(crate) async fn look_up(db: &AsyncStore, id: &str) -> Option<Lapsed> {
        let id = id.to_owned();
        match db.run_blocking(move |s| s.token(&id)).await {
            Ok(Some(token)) => Lapsed::of(&token, now_millis()),
            Ok(None) => Some(Lapsed::Revoked),
            Err(_) => None,
        }
    }

    /// What happened to the token: "was revoked", "expired at <when>".
    pub(crate) fn what(self) -> String {
        match self {
            Lapsed::Revoked => "was revoked".to_owned(),
            Lapsed::Expired(at) => format!("expired at {}", display_millis(at)),
        }
    }
}

/// Finds and checks the token of a request's `Authorization` header.
pub(crate) async fn authenticate(
    state: &AppState,
    header: Option<&str>,
) -> Result<Caller, Problem> {
    let Some(value) = header else {
        return Err(unauthorized(
            "this endpoint needs a token: send `Authorization: Bearer <token>` (create one with `toolhost tokens create`)",
        ));
    };
    // The scheme's name is case-insensitive (RFC 9110 §11.1).
    let token = value
        .split_once(' ')
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token);
    let Some(token) = token else {
        return Err(unauthorized(
            "the Authorization header must read `Bearer <token>`",
        ));
    };
    let malformed = || unauthorized("the token is not a toolhost token (`thk_<id>_<secret>`)");
    let rest = token.trim().strip_prefix("thk_").ok_or_else(malformed)?;
    let (id, secret) = rest.split_once('_').ok_or_else(malformed)?;
    if id.len() != 12 || secret.len() != 64 {
        return Err(malformed());
    }
    let lookup = id.to_owned();
    let record = state
        .db
        .run_blocking(move |s| s.token(&lookup))
        .await
        .map_err(Problem::from)?;
    // One answer for an unknown id, a wrong secret and a revoked token: nothing to probe.
    let refused = || unauthorized("the token is unknown or revoked");
    let record = record.ok_or_else(refused)?;
    let matches: bool = hash(secret)
        .as_bytes()
        .ct_eq(record.secret_hash.as_bytes())
        .into();
    if !matches {
        return Err(refused());
    }
    // Only the token's holder gets here, so saying when it expired tells nobody else anything.
    match Lapsed::of(&record, now_millis()) {
        None => {}
        Some(Lapsed::Revoked) => return Err(refused()),
        Some(expired) => return Err(unauthorized(&format!("the token {}", expired.what()))),
    }
    Ok(Caller {
        token_id: record.id,
        scopes: record
            .scopes
            .iter()
            .filter_map(|s| Scope::parse(s))
            .collect(),
        agents: record.agents,
    })
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Problem> {
        let header = match parts.headers.get(header::AUTHORIZATION) {
            None => None,
            Some(v) => Some(
                v.to_str()
                    .map_err(|_| unauthorized("the Authorization header is not plain text"))?,
            ),
        };
        authenticate(state, header).await
    }
}
