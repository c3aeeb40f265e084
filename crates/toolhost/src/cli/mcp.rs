//! `toolhost mcp DIR --agent NAME`: the tools an agent offers, served to any MCP client over
//! standard input and output (the official Rust SDK, `rmcp`; the stateful 2025-11-25 protocol
//! and the stateless 2026-07-28 one, as the SDK negotiates them).
//!
//! What is served and how is the `mcp` module of `toolhost-server`; a call that waits names
//! the `toolhost resume` command that answers it.

use super::output::{self, BAD_INPUT};
use super::project_config;
use super::run::{block_on, check_agent_first, open_project};
use clap::Args;
use rmcp::ServiceExt;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use toolhost_server::mcp::{Answering, McpTools};

/// `toolhost mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// The project folder.
    dir: PathBuf,
    /// The agent whose first prompt's tools are served; calls run as this agent.
    #[arg(long)]
    agent: String,
    /// The data folder (default: `data` of toolhost.toml, else `.toolhost`).
    #[arg(long)]
    data: Option<PathBuf>,
}

/// Serves the agent's tools until the client closes standard input.
pub fn mcp(args: McpArgs) -> ExitCode {
    let file = match project_config::load(&args.dir) {
        Ok(c) => c,
        Err(e) => {
            output::error("the project's toolhost.toml cannot be used.", Some(&e));
            return output::exit(BAD_INPUT);
        }
    };
    if let Err(code) = check_agent_first(&args.dir, &args.agent, None) {
        return code;
    }
    let data = file.data_folder(&args.dir, args.data);
    let (_store, runtime) = match open_project(&args.dir, &data, None, None) {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let answering = Answering::CommandLine {
        project: args.dir.display().to_string(),
        data: data.display().to_string(),
    };
    let server = McpTools::new(Arc::new(runtime), &args.agent, answering);
    let served = block_on(async move {
        let running = server.serve(rmcp::transport::stdio()).await?;
        running.waiting().await?;
        Ok::<(), Box<dyn std::error::Error>>(())
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            output::error("the MCP session ended with an error.", Some(&e.to_string()));
            output::exit(BAD_INPUT)
        }
    }
}
