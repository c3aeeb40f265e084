//! `toolhost tokens ...`: the bearer tokens of `toolhost serve`, kept (hashed) in the data folder.
//!
//! The data folder is the one `toolhost serve` uses for the same project: `--data`, else `data`
//! of the project's toolhost.toml, else `.toolhost`. Its `[tokens]` table sets how long a new
//! token lives by default and at most.

use super::data::open_store;
use super::lifetime::Lifetime;
use super::output::{self, outln, BAD_INPUT, INVALID};
use super::project_config::{self, ProjectConfig, FILE_NAME};
use clap::{Args, Subcommand};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use toolhost_server::auth::{mint, Scope};
use toolhost_store::{display_millis, now_millis, ApiToken, Store};

/// Which project and data folder a `tokens` command works on.
#[derive(Debug, Args)]
pub struct ProjectArgs {
    /// The project folder whose toolhost.toml names the data folder and holds the `[tokens]`
    /// settings (default: the current folder when it holds a toolhost.toml; otherwise no
    /// project: the data folder is `.toolhost` and there are no token settings).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// The data folder, which wins over toolhost.toml (default: `data` of the project's
    /// toolhost.toml, found as `toolhost serve` finds it, else `.toolhost`). `:memory:` keeps
    /// everything in memory for this one command.
    #[arg(long, visible_alias = "store", value_name = "DATA_DIR")]
    data: Option<PathBuf>,
}

/// A project's settings and data folder as a `tokens` command found them.
struct Located {
    /// toolhost.toml of the project, when there is a project.
    file: Option<PathBuf>,
    config: ProjectConfig,
    data: PathBuf,
}

impl ProjectArgs {
    /// Finds the project (`--project`, else the current folder if it holds a toolhost.toml),
    /// reads its toolhost.toml and resolves the data folder as `toolhost serve` does.
    fn locate(self) -> Result<Located, ExitCode> {
        let dir = match self.project {
            Some(dir) if !dir.is_dir() => {
                output::error(
                    &format!("the project folder {} does not exist.", dir.display()),
                    None,
                );
                return Err(output::exit(BAD_INPUT));
            }
            Some(dir) => Some(dir),
            None => Some(PathBuf::from(".")).filter(|here| here.join(FILE_NAME).is_file()),
        };
        let Some(dir) = dir else {
            let config = ProjectConfig::default();
            let data = config.data_folder(Path::new("."), self.data);
            return Ok(Located {
                file: None,
                config,
                data,
            });
        };
        let config = project_config::load(&dir).map_err(|e| {
            output::error("the project's toolhost.toml cannot be used.", Some(&e));
            output::exit(BAD_INPUT)
        })?;
        Ok(Located {
            file: Some(dir.join(FILE_NAME)),
            data: config.data_folder(&dir, self.data),
            config,
        })
    }
}

impl Located {
    fn open(&self) -> Result<Arc<dyn Store>, ExitCode> {
        open_store(&self.data)
    }

    /// How long a new token lives: `--expires-in`, else `default_expires_in`; within
    /// `max_expires_in`. `None` for a token that never expires.
    fn lifetime(&self, expires_in: Option<&str>) -> Result<Option<Lifetime>, ExitCode> {
        let refused = |sentence: String, cause: Option<&dyn std::fmt::Display>| {
            output::error(&sentence, cause);
            output::exit(BAD_INPUT)
        };
        let settings = &self.config.tokens;
        let lifetime =
            match expires_in {
                Some(text) => Some(Lifetime::parse(text).map_err(|e| {
                    refused(format!("--expires-in {text} cannot be used."), Some(&e))
                })?),
                None => settings.default_expires_in.clone(),
            };
        let (Some(max), Some(file)) = (&settings.max_expires_in, &self.file) else {
            return Ok(lifetime);
        };
        let limit = format!(
            "max_expires_in = \"{max}\" of [tokens] in {}",
            file.display()
        );
        match lifetime {
            Some(l) if l.millis() <= max.millis() => Ok(Some(l)),
            Some(l) if expires_in.is_some() => Err(refused(
                format!("--expires-in {l} is longer than {limit}."),
                None,
            )),
            Some(l) => Err(refused(
                format!("default_expires_in = \"{l}\" is longer than {limit}."),
                None,
            )),
            None => Err(refused(
                format!("a token that never expires is longer than {limit}."),
                Some(&"give --expires-in, or set default_expires_in in that table"),
            )),
        }
    }
}

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
        /// How long it lives: a whole number and a unit, s, m, h, d or w (90d, 12h, 30m)
        /// (default: `default_expires_in` of `[tokens]` in toolhost.toml, else forever; at most
        /// its `max_expires_in`).
        #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
        expires_in: Option<String>,
        #[command(flatten)]
        project: ProjectArgs,
        /// Print the token and its record as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the tokens (never their secrets).
    List {
        #[command(flatten)]
        project: ProjectArgs,
        /// Print them as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token by its id: it reaches nothing from now on.
    Revoke {
        /// The token's id (the part after `thk_`, before the next `_`).
        id: String,
        #[command(flatten)]
        project: ProjectArgs,
    },
}

/// Runs a `tokens` command.
pub fn tokens(cmd: TokensCommand) -> ExitCode {
    let outcome = match cmd {
        TokensCommand::Create {
            name,
            scope,
            agent,
            expires_in,
            project,
            json,
        } => create(&name, &scope, agent, expires_in.as_deref(), project, json),
        TokensCommand::List { project, json } => list(project, json),
        TokensCommand::Revoke { id, project } => revoke(&id, project),
    };
    outcome.unwrap_or_else(|code| code)
}

fn create(
    name: &str,
    scope: &[String],
    agent: Vec<String>,
    expires_in: Option<&str>,
    project: ProjectArgs,
    json: bool,
) -> Result<ExitCode, ExitCode> {
    let mut scopes = Vec::new();
    for name in scope {
        let Some(s) = Scope::parse(name.trim()) else {
            output::error(
                &format!("\"{name}\" is not a scope."),
                Some(&"the scopes are read, run, approve and admin"),
            );
            return Err(output::exit(BAD_INPUT));
        };
        scopes.push(s);
    }
    let located = project.locate()?;
    let lifetime = located.lifetime(expires_in)?;
    let store = located.open()?;
    let agents = (!agent.is_empty()).then_some(agent);
    let minted = mint(
        name,
        &scopes,
        agents,
        lifetime.as_ref().map(Lifetime::millis),
    )
    .map_err(|e| {
        output::error("the token could not be made.", Some(&e));
        output::exit(INVALID)
    })?;
    if let Err(e) = store.create_token(&minted.record) {
        output::error("the token could not be stored.", Some(&e));
        return Err(output::exit(INVALID));
    }
    if json {
        output::json(&json!({"token": minted.token, "record": minted.record}));
    } else {
        let record = &minted.record;
        let expiry = match record.expires_at {
            Some(at) => format!("expires at {}", display_millis(at)),
            None => "never expires".to_owned(),
        };
        outln!("{}", minted.token);
        output::note(
            "created",
            &format!(
                "token {} ({}) with scopes {}; it {expiry}; it is shown only now, keep it safe",
                record.id,
                record.name,
                record.scopes.join(", ")
            ),
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// What a token is at `now`: active, expired or revoked, and since when.
fn state(t: &ApiToken, now: i64) -> String {
    match (t.revoked_at, t.expires_at) {
        (Some(at), _) => format!("revoked {}", display_millis(at)),
        (None, Some(at)) if t.is_expired(now) => format!("expired {}", display_millis(at)),
        (None, _) => format!("active since {}", display_millis(t.created_at)),
    }
}

fn list(project: ProjectArgs, json: bool) -> Result<ExitCode, ExitCode> {
    let located = project.locate()?;
    let store = located.open()?;
    let tokens = store.tokens().map_err(|e| {
        output::error("the tokens could not be read.", Some(&e));
        output::exit(INVALID)
    })?;
    let now = now_millis();
    if json {
        let rows: Vec<_> = tokens
            .iter()
            .map(|t| {
                json!({"id": t.id, "name": t.name, "scopes": t.scopes, "agents": t.agents,
                       "created_at": t.created_at, "revoked_at": t.revoked_at,
                       "expires_at": t.expires_at, "expired": t.is_expired(now)})
            })
            .collect();
        output::json(&json!(rows));
    } else if tokens.is_empty() {
        outln!("no tokens in {}", super::data::shown(&located.data));
    } else {
        outln!(
            "{:12}  {:20}  {:24}  {:20}  {:27}  STATE",
            "ID",
            "NAME",
            "SCOPES",
            "AGENTS",
            "EXPIRES"
        );
        for t in tokens {
            let agents = t.agents.as_ref().map_or("all".into(), |a| a.join(","));
            let expires = t.expires_at.map_or("never".into(), display_millis);
            outln!(
                "{:12}  {:20}  {:24}  {:20}  {:27}  {}",
                t.id,
                t.name,
                t.scopes.join(","),
                agents,
                expires,
                state(&t, now)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn revoke(id: &str, project: ProjectArgs) -> Result<ExitCode, ExitCode> {
    let located = project.locate()?;
    let store = located.open()?;
    match store.revoke_token(id) {
        Ok(true) => {
            outln!("revoked token {id}");
            Ok(ExitCode::SUCCESS)
        }
        Ok(false) => {
            output::error(
                &format!(
                    "there is no active token {id} in {}.",
                    super::data::shown(&located.data)
                ),
                Some(&"`toolhost tokens list` shows the tokens and which are revoked"),
            );
            Err(output::exit(BAD_INPUT))
        }
        Err(e) => {
            output::error("the token could not be revoked.", Some(&e));
            Err(output::exit(INVALID))
        }
    }
}
