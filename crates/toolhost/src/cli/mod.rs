//! Command-line parsing and dispatch. Each command group lives in its own module.
//!
//! Exit codes: 0 success; 1 the input was checked and found invalid, or a run failed; 2 a bad
//! file, an unknown name or a usage error; 3 a run paused, waiting for a person (an approval or
//! variables); 4 another run owns the thread (what was given is stored for it, nothing was run);
//! 130 `toolhost chat` left with a second Ctrl-C while a turn was still running. When standard
//! output is a pipe whose reader has gone (`| head`), every command ends at once and quietly, as
//! `cat` and `git` do: by `SIGPIPE`, which a shell shows as 141 (see `output`).

mod chat;
mod data;
mod executor;
mod lifetime;
mod lines;
mod mcp;
mod mcp_login;
mod mcp_stdio;
mod migrate;
mod open;
mod output;
mod progress;
mod project_config;
mod run;
mod send;
mod serve;
mod threads;
mod tokens;
mod tools;
mod transcript;
mod tree;
mod values;
mod waiting;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Define the tools of an LLM agent once, show them to any model, validate every call it makes,
/// and run it durably: approvals, variables and secrets, and a journal in which a crash loses
/// nothing and repeats nothing.
///
/// A project is a folder with `agents/` in it (agents, prompts, models, tools, activities);
/// threads are stored in a data folder (`--data`, default `./.toolhost`). Start with
/// `toolhost tools list DIR`, then `toolhost run DIR --agent NAME "message"` or
/// `toolhost chat DIR --agent NAME`.
///
/// Exit codes: 0 done; 1 invalid input or a failed run; 2 a bad file, an unknown name or a
/// usage error; 3 paused, waiting for an approval or variables; 4 another run owns the thread.
#[derive(Debug, Parser)]
#[command(name = "toolhost", version)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Inspect and check the tools of a project.
    #[command(subcommand)]
    Tools(tools::ToolsCommand),
    /// Start a thread for an agent and run it until its turn ends.
    Run(run::RunArgs),
    /// Continue a stored thread from where it stopped.
    Resume(run::ResumeArgs),
    /// Send a message to a stored thread and run its next turn.
    Send(send::SendArgs),
    /// Talk with an agent in the terminal: streamed answers, calls shown, approvals and
    /// variables asked inline.
    Chat(chat::ChatArgs),
    /// List and show stored threads.
    #[command(subcommand)]
    Threads(threads::ThreadsCommand),
    /// Serve a project over HTTP: the JSON API and live events, behind bearer tokens.
    Serve(serve::ServeArgs),
    /// Create, list and revoke the bearer tokens of `toolhost serve`.
    #[command(subcommand)]
    Tokens(tokens::TokensCommand),
    /// Serve the tools an agent offers to an MCP client over standard input and output.
    Mcp(mcp::McpArgs),
    /// Copy a data folder's threads, tokens and credentials into an empty PostgreSQL database,
    /// checking every thread.
    Migrate(migrate::MigrateArgs),
}

/// Runs the parsed command and returns the process exit code.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Tools(cmd) => tools::run(cmd),
        Command::Run(args) => run::run(args),
        Command::Resume(args) => run::resume(args),
        Command::Send(args) => send::send(args),
        Command::Chat(args) => chat::chat(args),
        Command::Threads(cmd) => threads::threads(cmd),
        Command::Serve(args) => serve::serve(args),
        Command::Tokens(cmd) => tokens::tokens(cmd),
        Command::Mcp(args) => mcp::mcp(args),
        Command::Migrate(args) => migrate::migrate(args),
    }
}
