//! `toolhost tokens ...`: the bearer tokens of `toolhost serve`, kept (hashed) in the data folder.

use super::output::{self, outln, BAD_INPUT, INVALID};
use super::run::{open_store, DataArg};
use clap::Subcommand;
use serde_json::json;
use std::process::ExitCode;
use toolhost_server::auth::{mint, Scope};
use toolhost_store::display_millis;

#[derive(Debug, Subcommand)]
pub enum TokensCommand {
    /// Create a token and print it (once: only its hash is kept).
    Create {
        /// A name to recognise it by.
        name: String,
        /// What it may do: read, run, approve, admin (comma-separated or repeated).
        #[arg(long, value_delimiter = ',', required = true)]
        scope: Vec<String>,
        /// Limit it to the threads of this agent (repeat for more); every agent when absent.
        #[arg(long)]
        agent: Vec<String>,
        #[command(flatten)]
        data: DataArg,
        /// Print the token and its record as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the tokens (never their secrets).
    List {
        #[command(flatten)]
        data: DataArg,
        /// Print them as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token by its id: it reaches nothing from now on.
    Revoke {
        /// The token's id (the part after `thk_`, before the next `_`).
        id: String,
        #[command(flatten)]
        data: DataArg,
    },
}

pub fn tokens(cmd: TokensCommand) -> ExitCode {
    match cmd {
        TokensCommand::Create {
            name,
            scope,
            agent,
            data,
            json,
        } => {
            let mut scopes = Vec::new();
            for name in &scope {
                match Scope::parse(name.trim()) {
                    Some(s) => scopes.push(s),
                    None => {
                        output::error(
                            &format!("\"{name}\" is not a scope."),
                            Some(&"the scopes are read, run, approve and admin"),
                        );
                        return output::exit(BAD_INPUT);
                    }
                }
            }
            let store = match open_store(&data.data) {
                Ok(s) => s,
                Err(code) => return code,
            };
            let agents = (!agent.is_empty()).then_some(agent);
            let minted = match mint(&name, &scopes, agents, None) {
                Ok(m) => m,
                Err(e) => {
                    output::error("the token could not be made.", Some(&e));
                    return output::exit(INVALID);
                }
            };
            if let Err(e) = store.create_token(&minted.record) {
                output::error("the token could not be stored.", Some(&e));
                return output::exit(INVALID);
            }
            if json {
                output::json(&json!({"token": minted.token, "record": minted.record}));
            } else {
                outln!("{}", minted.token);
                output::note(
                    "created",
                    &format!(
                        "token {} ({}) with scopes {}; it is shown only now, keep it safe",
                        minted.record.id,
                        minted.record.name,
                        minted.record.scopes.join(", ")
                    ),
                );
            }
            ExitCode::SUCCESS
        }
        TokensCommand::List { data, json } => {
            let store = match open_store(&data.data) {
                Ok(s) => s,
                Err(code) => return code,
            };
            let tokens = match store.tokens() {
                Ok(t) => t,
                Err(e) => {
                    output::error("the tokens could not be read.", Some(&e));
                    return output::exit(INVALID);
                }
            };
            if json {
                let rows: Vec<_> = tokens
                    .iter()
                    .map(|t| {
                        json!({"id": t.id, "name": t.name, "scopes": t.scopes, "agents": t.agents,
                               "created_at": t.created_at, "revoked_at": t.revoked_at})
                    })
                    .collect();
                output::json(&json!(rows));
            } else if tokens.is_empty() {
                outln!("no tokens in {}", data.data.display());
            } else {
                outln!(
                    "{:12}  {:20}  {:24}  {:20}  STATE",
                    "ID",
                    "NAME",
                    "SCOPES",
                    "AGENTS"
                );
                for t in tokens {
                    let state = match t.revoked_at {
                        Some(at) => format!("revoked {}", display_millis(at)),
                        None => format!("active since {}", display_millis(t.created_at)),
                    };
                    let agents = t
                        .agents
                        .map(|a| a.join(","))
                        .unwrap_or_else(|| "all".into());
                    outln!(
                        "{:12}  {:20}  {:24}  {:20}  {state}",
                        t.id,
                        t.name,
                        t.scopes.join(","),
                        agents
                    );
                }
            }
            ExitCode::SUCCESS
        }
        TokensCommand::Revoke { id, data } => {
            let store = match open_store(&data.data) {
                Ok(s) => s,
                Err(code) => return code,
            };
            match store.revoke_token(&id) {
                Ok(true) => {
                    outln!("revoked token {id}");
                    ExitCode::SUCCESS
                }
                Ok(false) => {
                    output::error(
                        &format!("there is no active token {id} in {}.", data.data.display()),
                        Some(&"`toolhost tokens list` shows the tokens and which are revoked"),
                    );
                    output::exit(BAD_INPUT)
                }
                Err(e) => {
                    output::error("the token could not be revoked.", Some(&e));
                    output::exit(INVALID)
                }
            }
        }
    }
}
