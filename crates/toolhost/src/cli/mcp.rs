//! `toolhost mcp`: MCP both ways.
//!
//! - `toolhost mcp DIR --agent NAME`: the tools an agent offers, served to any MCP client over
//!   standard input and output (the official Rust SDK, `rmcp`; the stateful 2025-11-25 protocol
//!   and the stateless 2026-07-28 one, as the SDK negotiates them). What is served and how is
//!   the `mcp` module of `toolhost-server`; a call that waits names the `toolhost resume`
//!   command that answers it.
//! - `toolhost mcp list DIR`: the MCP servers the project uses (`agents/mcp/`), their state,
//!   their tools and their last words on standard error.
//! - `toolhost mcp login DIR SERVER` / `logout`: OAuth for a server at a URL (see
//!   `mcp_login`).
//! - `toolhost mcp accept DIR TOOL`: a person accepts, for the project, the definition an MCP
//!   server now gives a tool that the project pinned before (see `toolhost_runtime::mcp`).

use super::data::{mcp_vault, open_store, DataArg};
use super::executor::block_on;
use super::open::{check_agent_first, load_runtime, mcp_http, open_checked};
use super::output::{self, outln, BAD_INPUT, INVALID};
use super::project_config;
use clap::{Args, Subcommand};
use rmcp::ServiceExt;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use toolhost_runtime::mcp::{accept_definition, load_mcp, needs_approval};
use toolhost_server::mcp::{Answering, McpTools};

/// How often a served project's files are looked at for changes.
pub(super) const RELOAD_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// `toolhost mcp`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct McpArgs {
    #[command(subcommand)]
    command: Option<McpCommand>,
    /// The project folder whose agent is served.
    dir: Option<PathBuf>,
    /// The agent whose first prompt's tools are served; calls run as this agent.
    #[arg(long)]
    agent: Option<String>,
    /// The data folder or a `postgres://` database (default: `data` of toolhost.toml, else
    /// TOOLHOST_STORE, else `.toolhost`).
    #[arg(long, visible_alias = "store")]
    data: Option<PathBuf>,
}

/// The MCP servers a project uses.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Each MCP server of agents/mcp/: its state, its tools and its last words.
    List {
        /// The project folder.
        dir: PathBuf,
        /// Print the servers as JSON.
        #[arg(long)]
        json: bool,
        /// The data folder whose kept OAuth grants the servers get (default: `data` of
        /// toolhost.toml, else `.toolhost`).
        #[arg(long, visible_alias = "store")]
        data: Option<PathBuf>,
    },
    /// Authorize toolhost for an MCP server that asks for OAuth (its file has `oauth`): prints
    /// the address a person opens, waits for the answer, keeps the grant for later runs.
    Login {
        /// The project folder.
        dir: PathBuf,
        /// The server (a file of agents/mcp/).
        server: String,
        #[command(flatten)]
        data: DataArg,
        /// Print the address to open and the result as JSON lines.
        #[arg(long)]
        json: bool,
    },
    /// Forget the authorization kept for an MCP server.
    Logout {
        /// The project folder.
        dir: PathBuf,
        /// The server (a file of agents/mcp/).
        server: String,
        #[command(flatten)]
        data: DataArg,
    },
    /// Accept, for the whole project, the definition an MCP server now gives a tool the project
    /// pinned before.
    Accept {
        /// The project folder.
        dir: PathBuf,
        /// The imported tool, as SERVER.TOOL.
        tool: String,
        #[command(flatten)]
        data: DataArg,
    },
}

/// `toolhost mcp ...`.
pub fn mcp(args: McpArgs) -> ExitCode {
    match args.command {
        Some(McpCommand::List { dir, json, data }) => list(&dir, json, data),
        Some(McpCommand::Login {
            dir,
            server,
            data,
            json,
        }) => super::mcp_login::login_command(&dir, &server, &data.data, json),
        Some(McpCommand::Logout { dir, server, data }) => {
            super::mcp_login::logout_command(&dir, &server, &data.data)
        }
        Some(McpCommand::Accept { dir, tool, data }) => accept(&dir, &tool, &data.data),
        None => {
            let (Some(dir), Some(agent)) = (args.dir, args.agent) else {
                output::error(
                    "`toolhost mcp` needs a project folder and --agent NAME to serve, or a subcommand (list, accept).",
                    None,
                );
                return output::exit(BAD_INPUT);
            };
            serve(&dir, &agent, args.data)
        }
    }
}

fn list(dir: &Path, as_json: bool, data: Option<PathBuf>) -> ExitCode {
    let http = match mcp_http() {
        Ok(http) => http,
        Err(code) => return code,
    };
    let vault = project_vault(dir, data);
    let mcp = block_on(load_mcp(dir, Some(http), vault.clone()));
    let file_problems: Vec<_> = mcp
        .problems
        .iter()
        .filter(|p| !mcp.servers.iter().any(|s| s.def.path == p.path))
        .collect();
    if as_json {
        let servers: Vec<Value> = mcp
            .servers
            .iter()
            .map(|s| server_json(s, &mcp.problems, vault.as_deref()))
            .collect();
        let problems: Vec<Value> = file_problems
            .iter()
            .map(|p| json!({"file": p.path.display().to_string(), "problem": p.message}))
            .collect();
        output::json(&json!({"servers": servers, "problems": problems}));
    } else {
        if mcp.servers.is_empty() && file_problems.is_empty() {
            outln!("no MCP servers in {}", dir.join("agents/mcp").display());
        }
        for s in &mcp.servers {
            print_server(s, &mcp.problems, vault.as_deref());
        }
        for p in &file_problems {
            output::error(
                &format!("MCP server file {} was not loaded.", p.path.display()),
                Some(&p.message),
            );
        }
    }
    if mcp.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        output::exit(BAD_INPUT)
    }
}

/// One server of `toolhost mcp list --json`: its file, state, tools (or why it has none),
/// the tools refused, its OAuth state and its last words.
fn server_json(
    s: &toolhost_runtime::mcp::ServerStatus,
    problems: &[toolhost_runtime::project::FileProblem],
    vault: Option<&toolhost_runtime::mcp::Vault>,
) -> Value {
    let (state, tools) = match &s.listed {
        Ok(tools) => (
            json!("connected"),
            tools
                .iter()
                .map(|t| {
                    json!({
                        "name": toolhost_runtime::mcp::imported_name(&s.def.name, &t.name),
                        "description": t.description,
                        "annotations": t.annotations,
                        "approval": needs_approval(s.def.trusted, t),
                    })
                })
                .collect(),
        ),
        Err(why) => (json!({"failed": why.to_string()}), Vec::new()),
    };
    let refused: Vec<Value> = refused(problems, s)
        .map(|p| json!({"tool": p.tool, "problem": p.message}))
        .collect();
    json!({
        "name": s.def.name,
        "file": s.def.path.display().to_string(),
        "trusted": s.def.trusted,
        "oauth": oauth_state(vault, &s.def).map(|o| o.json),
        "state": state,
        "tools": tools,
        "refused": refused,
        "log": s.log,
    })
}

/// One server of `toolhost mcp list`, as lines.
fn print_server(
    s: &toolhost_runtime::mcp::ServerStatus,
    problems: &[toolhost_runtime::project::FileProblem],
    vault: Option<&toolhost_runtime::mcp::Vault>,
) {
    let trust = if s.def.trusted { ", trusted" } else { "" };
    match &s.listed {
        Ok(tools) => {
            outln!(
                "{} ({}{trust}): connected, {} tools",
                s.def.name,
                s.def.path.display(),
                tools.len()
            );
            for t in tools {
                let approval = if needs_approval(s.def.trusted, t) {
                    "needs approval"
                } else {
                    "no approval"
                };
                outln!(
                    "  {}  [{approval}]  {}",
                    toolhost_runtime::mcp::imported_name(&s.def.name, &t.name),
                    t.description
                        .as_deref()
                        .unwrap_or("")
                        .lines()
                        .next()
                        .unwrap_or("")
                );
            }
        }
        Err(why) => outln!(
            "{} ({}{trust}): not usable: {why}",
            s.def.name,
            s.def.path.display()
        ),
    }
    if let Some(oauth) = oauth_state(vault, &s.def) {
        outln!("  OAuth: {}", oauth.said);
    }
    for p in refused(problems, s) {
        outln!("  {}  [not imported]  {}", p.tool, p.message);
    }
    if !s.log.is_empty() {
        outln!("  last words on standard error:");
        for line in &s.log {
            outln!("    {line}");
        }
    }
}

/// The problems of a usable server's tools that could not be imported.
fn refused<'a>(
    problems: &'a [toolhost_runtime::project::FileProblem],
    server: &'a toolhost_runtime::mcp::ServerStatus,
) -> impl Iterator<Item = &'a toolhost_runtime::project::FileProblem> {
    problems
        .iter()
        .filter(move |p| p.path == server.def.path && p.tool != server.def.name)
}

fn accept(dir: &Path, tool: &str, data: &Path) -> ExitCode {
    let Some((server, name)) = tool.split_once('.') else {
        output::error(
            &format!("\"{tool}\" is not the name of an imported tool."),
            Some(&"imported tools are named SERVER.TOOL"),
        );
        return output::exit(BAD_INPUT);
    };
    let http = match mcp_http() {
        Ok(http) => http,
        Err(code) => return code,
    };
    let mcp = block_on(load_mcp(dir, Some(http), mcp_vault(data)));
    let Some(status) = mcp.servers.iter().find(|s| s.def.name == server) else {
        output::error(
            &format!("the project has no MCP server named \"{server}\"."),
            Some(&format!(
                "its servers are the files of {}",
                dir.join("agents/mcp").display()
            )),
        );
        return output::exit(BAD_INPUT);
    };
    if let Err(why) = &status.listed {
        output::error(
            &format!("MCP server \"{server}\" cannot be reached, so its definition of {tool} is unknown."),
            Some(why),
        );
        return output::exit(INVALID);
    }
    // The pin of the definition as it loaded now, the one the project's next call compares with.
    let Some(pin) = mcp.pins.get(tool) else {
        output::error(
            &format!("MCP server \"{server}\" does not list a tool named \"{name}\" that could be imported."),
            None,
        );
        return output::exit(BAD_INPUT);
    };
    let store = match open_store(data) {
        Ok(store) => store,
        Err(code) => return code,
    };
    match accept_definition(store.as_ref(), tool, pin) {
        Ok(()) => {
            outln!("accepted the definition MCP server \"{server}\" now gives {tool}, for every thread of the project");
            ExitCode::SUCCESS
        }
        Err(e) => {
            output::error("the accepted definition could not be stored.", Some(&e));
            output::exit(INVALID)
        }
    }
}

/// Serves the agent's tools until the client closes standard input.
fn serve(dir: &Path, agent: &str, data: Option<PathBuf>) -> ExitCode {
    let file = match project_config::load(dir) {
        Ok(c) => c,
        Err(e) => {
            output::error("the project's toolhost.toml cannot be used.", Some(&e));
            return output::exit(BAD_INPUT);
        }
    };
    let data = file.data_folder(dir, data);
    let checked = match check_agent_first(dir, &data, agent, None) {
        Ok(checked) => checked,
        Err(code) => return code,
    };
    let (store, runtime) = match open_checked(dir, &data, checked) {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let answering = Answering::CommandLine {
        project: dir.display().to_string(),
        data: super::data::shown(&data),
    };
    let server = McpTools::new(Arc::new(runtime), agent, answering);
    let watched = server.clone();
    let (root, agent_name) = (dir.to_owned(), agent.to_owned());
    // Tool files that change are loaded again (with the project's settings, on the same store)
    // and announced to the client; a project that no longer runs the agent is not taken.
    let reload = move || {
        let (root, data, store) = (root.clone(), data.clone(), store.clone());
        let agent_name = agent_name.clone();
        async move {
            let runtime = load_runtime(&root, &data, store).await?;
            runtime.check_agent(&agent_name).ok()?;
            Some(runtime)
        }
    };
    let project = dir.to_owned();
    let served = block_on(async move {
        let session = async {
            let running = server.serve(super::mcp_stdio::stdio()).await?;
            let watch = watched.reload_on_change(project, RELOAD_EVERY, reload);
            let waited = running.waiting().await;
            watch.abort();
            waited?;
            Ok::<(), Box<dyn std::error::Error>>(())
        };
        let ended = session.await;
        // However the session ended, the project's MCP servers end before toolhost does.
        watched.close().await;
        ended
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            output::error("the MCP session ended with an error.", Some(&e.to_string()));
            output::exit(BAD_INPUT)
        }
    }
}

/// The kept OAuth grants of the project in `dir`, in the data folder `data`, else the one its
/// toolhost.toml names (or the default one), when that folder is in use.
pub(super) fn project_vault(
    dir: &Path,
    data: Option<PathBuf>,
) -> Option<std::sync::Arc<toolhost_runtime::mcp::Vault>> {
    let file = project_config::load(dir).ok()?;
    mcp_vault(&file.data_folder(dir, data))
}

/// What `mcp list` says of a server's OAuth: as JSON, and in a sentence.
struct OAuthState {
    json: Value,
    said: String,
}

/// The OAuth state of a server whose file has `oauth`: the grant kept for its URL, if any.
fn oauth_state(
    vault: Option<&toolhost_runtime::mcp::Vault>,
    def: &toolhost_runtime::mcp::McpServerDef,
) -> Option<OAuthState> {
    use toolhost_mcp_client::server_def::Endpoint;
    let oauth = def.oauth.as_ref()?;
    let Endpoint::Url { url, .. } = &def.endpoint else {
        return None;
    };
    let grant = vault
        .and_then(|v| v.load(&def.name).ok().flatten())
        .map(|kept| kept.grant)
        .filter(|g| g.is_for(url));
    let kind = serde_json::to_value(oauth.grant).unwrap_or(Value::Null);
    Some(match grant {
        Some(g) => OAuthState {
            said: format!(
                "authorized by {} (scope {}{})",
                g.issuer,
                g.scope.as_deref().unwrap_or("none named"),
                if g.refresh_token.is_some() {
                    ", renewable"
                } else {
                    ""
                }
            ),
            json: json!({"grant": kind, "authorized": true, "issuer": g.issuer,
                         "scope": g.scope, "expires_at": g.expires_at,
                         "renewable": g.refresh_token.is_some()}),
        },
        None => OAuthState {
            said: match oauth.grant {
                toolhost_mcp_client::oauth::GrantType::ClientCredentials => {
                    "no token kept yet (toolhost gets one with its client credentials)".to_owned()
                }
                toolhost_mcp_client::oauth::GrantType::AuthorizationCode => format!(
                    "not authorized: run `toolhost mcp login` with the project and \"{}\"",
                    def.name
                ),
            },
            json: json!({"grant": kind, "authorized": false}),
        },
    })
}
