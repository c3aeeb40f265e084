//! Tools of MCP servers (`agents/mcp/NAME.json`), imported as `NAME.tool`; the connections
//! themselves are the MCP client's (`toolhost-mcp-client`).
//!
//! ## Contract
//! - Each file names one server: a program run as a child process over standard input and
//!   output, or a URL reached over MCP's streamable HTTP through the HTTP client the embedding
//!   program gives ([`crate::engine::Runtime::load_networked`]); see
//!   [`server_def`](toolhost_mcp_client::server_def).
//!   When the project loads, every server is started or reached and its tools listed
//!   (all pages, up to [`MAX_LIST_PAGES`](toolhost_mcp_client::hub::MAX_LIST_PAGES)); a server that cannot be started, does not
//!   complete the handshake in time or lists a tool whose schema cannot be taken is a
//!   [`FileProblem`] of its file, naming what went wrong (and the server's last words on
//!   standard error). Its other tools still load.
//! - Imported tools are ordinary tools: offered by prompts by name, validated, approved,
//!   journaled and redacted like any other (see [`imported`] for approvals, idempotency, pins
//!   and results).
//! - The definition a server gave each imported tool when the project first called it is
//!   pinned for the project ([`pins`]); a changed one is refused in every thread and session
//!   until a person accepts it ([`accept_definition`]).
//! - What servers write to standard error is kept apart from toolhost's own output (the last
//!   [`STDERR_LINES_KEPT`](toolhost_mcp_client::hub::STDERR_LINES_KEPT) lines per server, shown by `toolhost mcp list` and quoted when a
//!   server fails). Only `PATH` and the variables a file names reach a server's environment.
//! - A server at a URL gets the headers its file gives, each `${NAME}` filled from the calling
//!   thread's variables (else toolhost's environment): one connection per set of values, at
//!   most [`MAX_CONNECTIONS`](toolhost_mcp_client::hub::MAX_CONNECTIONS), so no thread's calls carry another's credentials.
//! - A server at a URL whose file has `oauth` gets OAuth tokens ([`oauth`](toolhost_mcp_client::oauth)): discovered from
//!   its 401, kept sealed in the store, renewed before they expire and when refused.

pub mod imported;
pub mod pins;

use crate::files::{read_text, MAX_FILE_BYTES};
use crate::project::{json_files, FileProblem};
pub use imported::{imported_name, needs_approval};
pub use pins::{accept_definition, pin_record};
use std::path::Path;
use std::sync::Arc;
use toolhost_core::AnyTool;
pub use toolhost_mcp_client::definition::definition_pin;
pub use toolhost_mcp_client::{McpHub, McpServerDef, Vault};
use toolhost_providers::fetch::Fetcher;

/// A server as it loaded: its tools, or why it has none.
#[derive(Debug, Clone)]
pub struct ServerStatus {
    /// The server's definition.
    pub def: McpServerDef,
    /// The tools it listed (as it described them), or why it could not be reached.
    pub listed: Result<Vec<rmcp::model::Tool>, toolhost_mcp_client::ConnectError>,
    /// The last lines it wrote to standard error.
    pub log: Vec<String>,
}

/// What the project's `agents/mcp/` gave: the imported tools, the servers' states, the files
/// that did not load, and the hub that keeps the connections (none when there are no servers).
#[derive(Debug, Default)]
pub struct McpImport {
    /// The connections; `None` when the project configures no server.
    pub hub: Option<Arc<McpHub>>,
    /// Every imported tool, in server then tool order.
    pub tools: Vec<AnyTool>,
    /// Every configured server, in name order.
    pub servers: Vec<ServerStatus>,
    /// Files (and tools) that did not load.
    pub problems: Vec<FileProblem>,
    /// The pin of each imported tool's definition as it loaded, by tool name: what a thread
    /// that accepts the definition stores.
    pub pins: std::collections::HashMap<String, serde_json::Value>,
}

/// Reads `agents/mcp/*.json` of the project at `root`, connects to each server and imports its
/// tools; `http` carries the requests to servers at a URL (without it they are problems), and
/// `vault` keeps their OAuth grants (without it a grant lasts as long as the process).
/// Done when every server answered or failed (each within its connect timeout).
pub async fn load_mcp(
    root: &Path,
    http: Option<Arc<dyn Fetcher>>,
    vault: Option<Arc<Vault>>,
) -> McpImport {
    let mut out = McpImport::default();
    let mut defs = Vec::new();
    for (name, path) in json_files(&root.join("agents").join("mcp")) {
        let loaded = read_text(&path, MAX_FILE_BYTES)
            .map_err(|e| e.reason())
            .and_then(|text| {
                McpServerDef::parse(&name, &path, &text, root).map_err(|e| e.to_string())
            });
        match loaded {
            Ok(def) if name.contains('.') => out.problems.push(FileProblem::not_loaded(
                def.path,
                &name,
                "a server's name may not contain `.`: its tools are named SERVER.TOOL".to_owned(),
            )),
            Ok(def) => defs.push(def),
            Err(message) => {
                out.problems
                    .push(FileProblem::not_loaded(path.clone(), &name, message))
            }
        }
    }
    if defs.is_empty() {
        return out;
    }
    let hub = Arc::new(McpHub::new(defs, http, vault));
    for (name, listed) in hub.connect_all().await {
        let link = hub.server(&name).expect("connected servers are the hub's");
        let def = link.def.clone();
        match &listed {
            Ok(tools) => {
                for tool in tools {
                    // Pinned from this very definition (the listing may have moved on since).
                    let pin = definition_pin(tool);
                    match imported::import_tool(&hub, &def, tool, pin.clone()) {
                        Ok(t) => {
                            out.pins.insert(t.name().to_owned(), pin);
                            out.tools.push(t);
                        }
                        Err(why) => out.problems.push(FileProblem::not_loaded(
                            def.path.clone(),
                            &imported_name(&name, &tool.name),
                            format!(
                                "tool \"{}\" of this server cannot be imported: {why}",
                                tool.name
                            ),
                        )),
                    }
                }
            }
            Err(why) => out.problems.push(FileProblem::not_loaded(
                def.path.clone(),
                &name,
                format!("MCP server \"{name}\" is not usable: {why}"),
            )),
        }
        out.servers.push(ServerStatus {
            log: link.log_tail(),
            def,
            listed,
        });
    }
    out.hub = Some(hub);
    out
}
