//! `toolhost.toml` in a project folder: settings for `toolhost serve` and `toolhost tokens`
//! that flags override.
//!
//! ```toml
//! data = ".toolhost"                  # the data folder, relative to the project folder,
//!                                     # or a PostgreSQL database: "postgres://user@host/db"
//!
//! [server]
//! listen = "127.0.0.1:7878"
//! allowed_origins = ["https://app.example.com"]
//! request_timeout_ms = 30000
//! max_body_bytes = 1048576
//! header_read_timeout_ms = 30000      # a connection that sends no whole request head is closed
//! max_connections_per_client = 256    # open connections of one client address at once
//! mcp_agent = "assistant"             # /mcp serves this agent's tools to MCP clients
//! mcp_stream_hold_ms = 30000          # a session's call lets go of its stream after this long
//! reload = true                       # load the project again when agents/ files change
//! takeover_interval_ms = 2000         # how often threads no live run holds are taken up
//! poll_interval_ms = 250              # how often event streams read what others stored
//! max_runs = 256                      # threads run at once; more are offered to other nodes
//!
//! [server.oauth]                      # /mcp also takes this authorization server's tokens
//! issuer = "https://auth.example.com"
//! resource = "https://tools.example.com/mcp"   # /mcp as clients reach it: tokens' audience
//! jwks_uri = "https://auth.example.com/jwks"   # else found through the issuer's metadata
//! scope_prefix = "toolhost:"          # tokens then grant `toolhost:run`, not `run`
//! leeway_s = 60                       # how far the two servers' clocks may differ (≤ 300)
//! accept_plain_jwt = false            # take tokens whose `typ` is `JWT` or missing too
//!
//! [tokens]                            # read by `toolhost tokens create`
//! default_expires_in = "90d"          # a token made without --expires-in lives this long
//! max_expires_in = "365d"             # no token may live longer (nor forever)
//!
//! [code]                              # every `runCode` run (the sandbox), for every command
//! memory_bytes = 67108864             # 64 MiB (at least 1 MiB)
//! max_stack_bytes = 1048576           # 1 MiB (64 KiB to 256 MiB)
//! deadline_ms = 30000                 # wall time of one run
//! max_result_bytes = 1048576
//! max_log_bytes = 65536
//! max_in_flight = 4                   # runs at once (each on a thread); more wait
//! warm_runtimes = 1                   # runs of each JavaScript tool file kept prepared
//!
//! [quotas]                            # what tools store (writeFile, setValue, emitThreadEvent)
//! call_file_bytes = 67108864          # one call writes at most 64 MiB of files
//! call_value_bytes = 16777216         # … 16 MiB of values (keys and JSON)
//! call_event_bytes = 4194304          # … 4 MiB of its own events
//! thread_file_bytes = 1073741824      # one thread holds at most 1 GiB of files
//! thread_value_bytes = 67108864       # … 64 MiB of values
//! thread_event_bytes = 67108864       # … 64 MiB of tools' own events
//!
//! [fetch]                             # what tool files in JavaScript may reach with fetch
//! hosts = ["api.example.com", "127.0.0.1:8080", "*.tides.org"]   # none unless listed; a name reaches only public addresses
//! timeout_ms = 10000                  # for the answer's headers, and again for its body
//! max_body_bytes = 4194304            # an answer's body is read up to this
//! ```
//!
//! Lifetimes are a whole number and a unit: `s`, `m`, `h`, `d` or `w`. Without
//! `default_expires_in` a token made without `--expires-in` never expires; with
//! `max_expires_in` such a token is refused unless a default within the limit is set.
//!
//! Every key is optional; an unknown key or a wrong type is an error naming the file and the
//! key, never ignored.

use super::lifetime::Lifetime;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use toolhost_runtime::engine::WriteQuotas;
use toolhost_runtime::sandbox::SandboxLimits;
use toolhost_store::UsageLimits;

/// The file's name in a project folder.
pub const FILE_NAME: &str = "toolhost.toml";

/// What `toolhost.toml` holds.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectConfig {
    /// The data folder, relative to the project folder.
    pub data: Option<PathBuf>,
    /// Settings of `toolhost serve`.
    #[serde(default)]
    pub server: ServerSection,
    /// Settings of `toolhost tokens`.
    #[serde(default)]
    pub tokens: TokensSection,
    /// The limits of the `runCode` sandbox.
    #[serde(default)]
    pub code: CodeSection,
    /// The `[quotas]` table.
    #[serde(default)]
    pub quotas: QuotasSection,
    /// What tool files may fetch.
    #[serde(default)]
    pub fetch: FetchSection,
}

/// The `[fetch]` table: the hosts tool files in JavaScript may reach with `fetch` (none by
/// default), and the bounds of one request.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FetchSection {
    /// Hosts (`api.example.com`), hosts with a port (`127.0.0.1:8080`) or subdomains of a
    /// domain (`*.example.com`). A name is reached only at its public addresses; a loopback or
    /// private service is reached by its address, written in the URL and here.
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Milliseconds allowed for an answer's headers, and again for its body (default 10 s).
    pub timeout_ms: Option<u64>,
    /// The largest body read (default 4 MiB).
    pub max_body_bytes: Option<usize>,
}

impl FetchSection {
    /// The default time allowed for an answer.
    pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
    /// The default cap on an answer's body.
    pub const DEFAULT_MAX_BODY_BYTES: usize = 4 << 20;
}

/// The `[quotas]` table: what tools may store, per call and per thread; a key left out keeps
/// its default ([`WriteQuotas::default`]).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuotasSection {
    /// Bytes of files one call may write.
    pub call_file_bytes: Option<u64>,
    /// Bytes of values one call may write.
    pub call_value_bytes: Option<u64>,
    /// Bytes of its own events one call may write.
    pub call_event_bytes: Option<u64>,
    /// Bytes of files one thread may hold.
    pub thread_file_bytes: Option<u64>,
    /// Bytes of values one thread may hold.
    pub thread_value_bytes: Option<u64>,
    /// Bytes of tools' own events one thread may hold.
    pub thread_event_bytes: Option<u64>,
}

impl QuotasSection {
    /// The quotas, defaults where a key is left out.
    pub fn quotas(&self) -> WriteQuotas {
        let base = WriteQuotas::default();
        let pick = |set: Option<u64>, default: Option<u64>| set.or(default);
        WriteQuotas {
            call: UsageLimits {
                file_bytes: pick(self.call_file_bytes, base.call.file_bytes),
                value_bytes: pick(self.call_value_bytes, base.call.value_bytes),
                event_bytes: pick(self.call_event_bytes, base.call.event_bytes),
            },
            thread: UsageLimits {
                file_bytes: pick(self.thread_file_bytes, base.thread.file_bytes),
                value_bytes: pick(self.thread_value_bytes, base.thread.value_bytes),
                event_bytes: pick(self.thread_event_bytes, base.thread.event_bytes),
            },
        }
    }
}

/// The `[code]` table: the limits of every `runCode` run; a key left out keeps its default.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeSection {
    /// Memory one run may allocate, in bytes.
    pub memory_bytes: Option<usize>,
    /// Native stack one run may use, in bytes.
    pub max_stack_bytes: Option<usize>,
    /// Wall time of one run, in milliseconds (more than 0).
    pub deadline_ms: Option<u64>,
    /// Bytes of a run's result as JSON.
    pub max_result_bytes: Option<usize>,
    /// Bytes of a run's logs.
    pub max_log_bytes: Option<usize>,
    /// How many runs may be in flight at once.
    pub max_in_flight: Option<usize>,
    /// How many runs of each JavaScript tool file are kept prepared (0: none).
    pub warm_runtimes: Option<usize>,
}

impl CodeSection {
    /// Whether any limit is set.
    pub fn is_set(&self) -> bool {
        self.memory_bytes.is_some()
            || self.max_stack_bytes.is_some()
            || self.deadline_ms.is_some()
            || self.max_result_bytes.is_some()
            || self.max_log_bytes.is_some()
            || self.max_in_flight.is_some()
            || self.warm_runtimes.is_some()
    }

    /// The limits and the number of runs in flight, defaults where a key is left out; a
    /// `deadline_ms` of 0 is refused (a run without a deadline is for embedders that stop runs
    /// themselves).
    pub fn limits(&self) -> Result<(SandboxLimits, usize), String> {
        let base = SandboxLimits::default();
        if self.deadline_ms == Some(0) {
            return Err("`code.deadline_ms` must be more than 0".to_owned());
        }
        Ok((
            SandboxLimits {
                memory_bytes: self.memory_bytes.unwrap_or(base.memory_bytes),
                max_stack_bytes: self.max_stack_bytes.unwrap_or(base.max_stack_bytes),
                deadline: self
                    .deadline_ms
                    .map(std::time::Duration::from_millis)
                    .or(base.deadline),
                max_result_bytes: self.max_result_bytes.unwrap_or(base.max_result_bytes),
                max_log_bytes: self.max_log_bytes.unwrap_or(base.max_log_bytes),
            },
            self.max_in_flight
                .unwrap_or(toolhost_runtime::engine::DEFAULT_MAX_RUNS_IN_FLIGHT),
        ))
    }
}

impl ProjectConfig {
    /// The data folder of the project in `dir`: `flag` (`--data`) when given, else `data` of
    /// toolhost.toml relative to the project folder (however the folder was named on the
    /// command line; a `postgres://` URL as it is), else `TOOLHOST_STORE`, else `.toolhost` in
    /// the working folder.
    pub fn data_folder(&self, dir: &Path, flag: Option<PathBuf>) -> PathBuf {
        // A database's URL names no folder: it is taken as it is.
        flag.or_else(|| {
            self.data.as_ref().map(|d| {
                if super::data::is_postgres(d) {
                    d.clone()
                } else {
                    dir.join(d)
                }
            })
        })
        .unwrap_or_else(|| PathBuf::from(super::data::default_data()))
    }
}

/// The `[tokens]` table.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokensSection {
    /// How long a token made without `--expires-in` lives; forever when absent.
    pub default_expires_in: Option<Lifetime>,
    /// The longest a token may live; no limit when absent.
    pub max_expires_in: Option<Lifetime>,
}

/// The `[server]` table.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    /// Where to listen.
    pub listen: Option<String>,
    /// Browser origins allowed to call the API.
    pub allowed_origins: Option<Vec<String>>,
    /// The time limit of a request until its answer starts, in milliseconds.
    pub request_timeout_ms: Option<u64>,
    /// The largest request body, in bytes.
    pub max_body_bytes: Option<usize>,
    /// How long a connection may take to send a request's head, in milliseconds.
    pub header_read_timeout_ms: Option<u64>,
    /// How many connections one client address may hold open at once.
    pub max_connections_per_client: Option<usize>,
    /// The agent whose tools `/mcp` serves to MCP clients; no `/mcp` without one.
    pub mcp_agent: Option<String>,
    /// How long a 2025-11-25 MCP session's call holds its event stream before the server
    /// closes it (the client resumes with `Last-Event-ID`), in milliseconds.
    pub mcp_stream_hold_ms: Option<u64>,
    /// Whether the project is loaded again when its `agents/` files change (the default).
    pub reload: Option<bool>,
    /// How often the server takes up threads with work that no live run holds, in
    /// milliseconds.
    pub takeover_interval_ms: Option<u64>,
    /// How often an event stream reads what other processes stored, in milliseconds (a
    /// PostgreSQL store also wakes it when another node commits).
    pub poll_interval_ms: Option<u64>,
    /// How many threads the server runs at once; work past it is offered to the other nodes
    /// of the same database.
    pub max_runs: Option<usize>,
    /// An OAuth authorization server whose access tokens `/mcp` takes.
    pub oauth: Option<OAuthSection>,
}

/// The `[server.oauth]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthSection {
    /// The authorization server's issuer identifier.
    pub issuer: String,
    /// `/mcp` as clients reach it: the audience tokens must name.
    pub resource: String,
    /// Where the server's keys are; found through its metadata when absent.
    pub jwks_uri: Option<String>,
    /// Put before toolhost's scope names in tokens.
    pub scope_prefix: Option<String>,
    /// How far the two servers' clocks may differ, in seconds.
    pub leeway_s: Option<u64>,
    /// Whether JWTs not marked `at+jwt` are taken as access tokens.
    pub accept_plain_jwt: Option<bool>,
}

/// Reads `dir/toolhost.toml`; no file is the same as an empty one.
pub fn load(dir: &Path) -> Result<ProjectConfig, String> {
    let path = dir.join(FILE_NAME);
    if !path.exists() {
        return Ok(ProjectConfig::default());
    }
    let text = toolhost_runtime::files::read_text(&path, 1024 * 1024).map_err(|e| e.to_string())?;
    toml::from_str(&text).map_err(|e| format!("{}: {}", path.display(), e.to_string().trim()))
}
