//! # toolhost-server: the HTTP API
//!
//! Serves a loaded [`Runtime`] over HTTP: JSON under `/v1`, live thread events as server-sent
//! events, behind bearer tokens. The binary assembles it as `toolhost serve`.
//!
//! ## Contract
//! - **Every endpoint but `/health`, `/ready`, `/v1/openapi.json`, the web page's files, the
//!   OAuth protected resource metadata and the MCP login callback page needs a token**
//!   (`Authorization: Bearer …`). The callback (`/mcp/oauth/callback`) acts only on the answer
//!   to a login an admin started here (`POST /v1/mcp/servers/{name}/login`), within 10 minutes.
//!   A token carries scopes (`read`, `run`, `approve`, `admin`; admin implies the others) and may
//!   be limited to some agents: a thread of another agent is answered as if it did not exist.
//!   Tokens are stored as the SHA-256 of their secret ([`auth::mint`]) and compared in constant
//!   time; a revoked or expired token reaches nothing, an open event stream included (an
//!   expired one is told when it expired, and only once its secret matched).
//! - **Every error is `application/problem+json`** (RFC 9457; but for `/mcp`, whose errors are
//!   JSON-RPC's) with a `detail` that says what is wrong and, for a bad body, a JSON `pointer`
//!   to where; an internal error's details go to the
//!   log under an id the answer gives. A request that is refused changes nothing that is stored.
//! - **Bodies are bounded and strict**: at most [`ServerConfig::max_body_bytes`], a JSON object,
//!   unknown fields refused, integers kept exactly or refused, nesting limited by the parser.
//!   A request must start its answer within [`ServerConfig::request_timeout`]; CORS is off
//!   unless [`ServerConfig::allowed_origins`] names origins.
//! - **Runs happen in the background**: creating a thread, sending a message, deciding an
//!   approval or giving variables stores what was given and starts the thread's run in a task
//!   of its own (an abandoned request never leaves stored work without a run), then answers.
//!   Another run that owns the thread takes the work up instead. Clients follow a thread
//!   through its event stream; how each run ended is stored as its `run_ended` event.
//! - **Event streams miss nothing that is stored**: each stored message and event carries an
//!   id; a client that reconnects with `Last-Event-ID` gets everything stored after it. Live
//!   pieces of an answer (text deltas, calls starting) are progress only and carry no id. A
//!   client that reads too slowly is dropped, never waited for.
//! - **Start and shutdown**: [`Server::run`] first takes up the threads that have work no run
//!   is doing (left running by a dead process, queued work, an unanswered message). Asked to
//!   stop, it stops accepting, ends every event stream, asks the runs of this node to stop
//!   after the operation under way, and returns once they have stored what they did and
//!   released their threads.
//! - **Reloads**: with [`Server::reload_on_change`], a change of the project's files loads it
//!   again; the API and `/mcp` take the new load, what started on the old one finishes there
//!   (its runs keep streaming live events and obeying stops), MCP clients are told when their
//!   tool list changed, and a load that fails is passed over.
//! - **Metrics** (`GET /metrics`, Prometheus text) count by route template, never by raw path.
//! - **The web page** (`GET /`, `/ui/…`) is built into the binary and holds no data: it signs
//!   in with a token and uses the API like any client. It is served without a token, under a
//!   content security policy that lets only its own script run.
//! - **The API describes itself**: `GET /v1/openapi.json` serves an OpenAPI 3.1 document of
//!   every route (parameters, bodies, answers, the problems each can give, the scope each needs),
//!   without a token, since it tells how to call the API and nothing of what is stored. It is
//!   generated from the code: the handlers' `#[utoipa::path]` attributes, the very body and query
//!   types they parse, and the route table, which adds each route from its handler's attribute,
//!   so a route cannot be served undocumented (see the `openapi` module).
//! - **MCP** (`/mcp`, when [`ServerConfig::mcp_agent`] names an agent): that agent's tools over
//!   MCP's streamable HTTP ([`mcp`]), a protocol of its own outside the OpenAPI document, behind
//!   the same tokens (the `run` scope and the agent), or with [`ServerConfig::oauth`] also the
//!   access tokens of an OAuth authorization server ([`oauth`]: RFC 9728 metadata, challenges,
//!   JWT access tokens checked against the server's keys). A session belongs to the token that
//!   opened it: another token's requests with its id are answered as for an unknown session.

pub mod auth;
mod body;
mod config;
mod connections;
mod cors;
mod limits;
mod logins;
mod metrics;
pub mod oauth;
mod openapi;
mod plain_errors;
mod problem;
mod reload;
mod routes;
mod runs;
mod state;
mod takeover;
mod web;

pub use config::{ServerConfig, SettingsError};
pub use oauth::OAuthSettings;

pub mod mcp;
pub use problem::Problem;

use state::AppState;
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;
use toolhost_runtime::engine::Runtime;

/// The HTTP API over one runtime.
pub struct Server {
    state: AppState,
    closing: watch::Sender<bool>,
}

impl Server {
    /// A server for `runtime` (which holds the store it runs on).
    pub fn new(runtime: Arc<Runtime>, config: ServerConfig) -> Self {
        let (closing, closed) = watch::channel(false);
        Self {
            state: AppState::new(runtime, config, closed),
            closing,
        }
    }

    /// The routes, for a program that serves them itself.
    pub fn router(&self) -> axum::Router {
        routes::router(self.state.clone())
    }

    /// Loads the project at `root` again with `reload` when the files under its `agents/`
    /// change (looked at every `every`; a load that fails, `None`, is passed over and the
    /// previous one kept): the API and `/mcp` take the new load, what started on the previous
    /// one finishes on it (its runs still stream their events and obey stops), and MCP clients
    /// are told when what they list changed. Call it from within the Tokio runtime that serves.
    pub fn reload_on_change<Load>(
        &self,
        root: std::path::PathBuf,
        every: std::time::Duration,
        reload: impl Fn() -> Load + Send + Sync + 'static,
    ) -> tokio::task::JoinHandle<()>
    where
        Load: std::future::Future<Output = Option<Runtime>> + Send + 'static,
    {
        reload::reload_on_change(self.state.slot.clone(), root, every, reload)
    }

    /// Serves on `listener` until `shutdown` resolves, then shuts down gracefully (see the
    /// crate page). A configuration that does not hold ([`ServerConfig::check`]) is refused
    /// before anything is served.
    pub async fn run(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        self.state
            .config
            .check()
            .map_err(|why| std::io::Error::new(std::io::ErrorKind::InvalidInput, why))?;
        recover(&self.state).await;
        let taking_over = tokio::spawn(takeover::keep_taking_over(self.state.clone()));
        let app = self.router();
        let (runs, slot, closing) = (
            self.state.runs.clone(),
            self.state.slot.clone(),
            self.closing,
        );
        let served = slot.clone();
        let stopping = runs.clone();
        // When asked to stop: no new runs, the runs under way stop after their operation, and
        // event streams end (a connection that never ends would hold the shutdown forever).
        let begin = async move {
            shutdown.await;
            let _ = closing.send(true);
            stopping.close_and_stop(&slot.current()).await;
        };
        let limits = connections::Limits {
            header_read_timeout: self.state.config.header_read_timeout,
            per_client: self.state.config.max_connections_per_client,
        };
        connections::serve(listener, app, limits, begin).await;
        taking_over.abort();
        runs.wait().await;
        // The MCP servers of the project end with the server, not with the process.
        served.current().close_mcp().await;
        Ok(())
    }
}

/// Takes up, on start, the threads that have work no run is doing: those a run left `running`
/// (its process died; a live owner elsewhere keeps its thread, and the run started here ends at
/// once), those with queued messages or tools, and idle ones whose last message is a person's
/// that nothing answered (created, then the server went away). A thread stopped between steps
/// stays as it is until someone runs it (`POST /v1/threads/{id}/run`). The store finds them
/// in one query ([`toolhost_store::Store::threads_with_work`]), however many threads it holds.
pub(crate) async fn recover(state: &AppState) {
    let threads = match state.db.run_blocking(|s| s.threads_with_work()).await {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(error = %e, "the threads to take up could not be listed");
            return;
        }
    };
    for thread in threads {
        state.runs.start(state.runtime(), thread);
    }
}
