//! `toolhost serve DIR`: the HTTP API over a project, until Ctrl-C or SIGTERM.

use super::mcp::RELOAD_EVERY;
use super::open::{load_runtime, open_project};
use super::output::{self, outln, BAD_INPUT, INVALID};
use super::project_config;
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};
use toolhost_runtime::engine::Runtime;
use toolhost_server::{Server, ServerConfig};
use toolhost_store::{now_millis, Store};

/// Where `toolhost serve` listens unless `--listen` says otherwise: this machine only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7878";

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The project folder. Its `toolhost.toml`, if any, may set the data folder, the listen
    /// address and the `[server]` settings; flags win.
    dir: PathBuf,
    /// The data folder or a `postgres://` database (default: `data` of toolhost.toml, else
    /// TOOLHOST_STORE, else `.toolhost`).
    #[arg(long, visible_alias = "store")]
    data: Option<PathBuf>,
    /// The address and port to listen on (default: `server.listen` of toolhost.toml, else
    /// 127.0.0.1:7878, this machine only; `0.0.0.0:7878` for every interface).
    #[arg(long)]
    listen: Option<String>,
    /// A browser origin allowed to call the API (repeat for more); replaces
    /// `server.allowed_origins` of toolhost.toml.
    #[arg(long = "allowed-origin")]
    allowed_origins: Vec<String>,
    /// Run every prompt on this model definition instead of its own.
    #[arg(long)]
    model: Option<String>,
    /// Serve this agent's tools to MCP clients at `/mcp` (replaces `server.mcp_agent` of
    /// toolhost.toml).
    #[arg(long = "mcp-agent")]
    mcp_agent: Option<String>,
    /// Keep the project as it loaded at start, even when its `agents/` files change (by
    /// default it is loaded again; `server.reload = false` in toolhost.toml does the same).
    #[arg(long = "no-reload")]
    no_reload: bool,
}

/// Loads the project and serves it until asked to stop, then stops gracefully.
pub fn serve(args: ServeArgs) -> ExitCode {
    let file = match project_config::load(&args.dir) {
        Ok(c) => c,
        Err(e) => {
            output::error("the project's toolhost.toml cannot be used.", Some(&e));
            return output::exit(BAD_INPUT);
        }
    };
    let data = file.data_folder(&args.dir, args.data.clone());
    let listen = args
        .listen
        .clone()
        .or(file.server.listen.clone())
        .unwrap_or_else(|| DEFAULT_LISTEN.to_owned());
    let config = match server_config(&args, &file) {
        Ok(config) => config,
        Err(code) => return code,
    };
    let (store, runtime) = match open_project(&args.dir, &data, None, args.model.as_deref()) {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    if let Some(agent) = &config.mcp_agent {
        if !runtime.definitions().agents.contains_key(agent) {
            output::error(
                &format!("the MCP agent \"{agent}\" is not an agent of the project."),
                None,
            );
            return output::exit(BAD_INPUT);
        }
    }
    let active = match active_tokens(store.as_ref()) {
        Ok(active) => active,
        Err(code) => return code,
    };
    let reload = reloader(&args, &data, store, config.mcp_agent.clone());
    let reloading = !args.no_reload && file.server.reload.unwrap_or(true);
    super::executor::block_on(async move {
        let listener = match tokio::net::TcpListener::bind(&listen).await {
            Ok(l) => l,
            Err(e) => {
                output::error(&format!("toolhost could not listen on {listen}."), Some(&e));
                return output::exit(BAD_INPUT);
            }
        };
        let address = listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| listen.clone());
        let stop = stop_signal();
        greet(&args.dir, &address, &data, active, &config);
        let server = Server::new(Arc::new(runtime), config);
        let _watch =
            reloading.then(|| server.reload_on_change(args.dir.clone(), RELOAD_EVERY, reload));
        match server.run(listener, stop).await {
            Ok(()) => {
                outln!("stopped: every run of this server stored its work and released its thread");
                ExitCode::SUCCESS
            }
            Err(e) => {
                output::error("the server failed.", Some(&e));
                output::exit(INVALID)
            }
        }
    })
}

/// The server's settings: `toolhost.toml`'s `[server]` table, with the command line's options
/// over it; checked, or an error already said.
fn server_config(
    args: &ServeArgs,
    file: &project_config::ProjectConfig,
) -> Result<ServerConfig, ExitCode> {
    let mut config = ServerConfig::default();
    if let Some(ms) = file.server.request_timeout_ms {
        config.request_timeout = Duration::from_millis(ms);
    }
    if let Some(bytes) = file.server.max_body_bytes {
        config.max_body_bytes = bytes;
    }
    if let Some(ms) = file.server.header_read_timeout_ms {
        config.header_read_timeout = Duration::from_millis(ms);
    }
    if let Some(cap) = file.server.max_connections_per_client {
        config.max_connections_per_client = cap;
    }
    if let Some(ms) = file.server.takeover_interval_ms {
        config.takeover_interval = Duration::from_millis(ms);
    }
    if let Some(ms) = file.server.poll_interval_ms {
        config.poll_interval = Duration::from_millis(ms);
    }
    if let Some(runs) = file.server.max_runs {
        config.max_runs = runs;
    }
    config.allowed_origins = if args.allowed_origins.is_empty() {
        file.server.allowed_origins.clone().unwrap_or_default()
    } else {
        args.allowed_origins.clone()
    };
    config.mcp_agent = args.mcp_agent.clone().or(file.server.mcp_agent.clone());
    config.mcp_stream_hold = file.server.mcp_stream_hold_ms.map(Duration::from_millis);
    if let Some(oauth) = &file.server.oauth {
        match oauth_settings(oauth) {
            Ok(settings) => config.oauth = Some(settings),
            Err(why) => {
                output::error("the [server.oauth] table cannot be used.", Some(&why));
                return Err(output::exit(BAD_INPUT));
            }
        }
    }
    if let Err(why) = config.check() {
        output::error("the server settings cannot be used.", Some(&why));
        return Err(output::exit(BAD_INPUT));
    }
    Ok(config)
}

/// How many tokens can be used now, or an error already said.
fn active_tokens(store: &dyn Store) -> Result<usize, ExitCode> {
    match store.tokens() {
        Ok(tokens) => {
            let now = now_millis();
            Ok(tokens
                .iter()
                .filter(|t| t.revoked_at.is_none() && !t.is_expired(now))
                .count())
        }
        Err(e) => {
            output::error("the tokens could not be read.", Some(&e));
            Err(output::exit(INVALID))
        }
    }
}

/// Loads the project again when its files change, as it was loaded at the start (`--model`
/// applied); a load that no longer has the MCP agent is not taken.
fn reloader(
    args: &ServeArgs,
    data: &Path,
    store: Arc<dyn Store>,
    mcp_agent: Option<String>,
) -> impl Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<Runtime>> + Send>>
       + Send
       + Sync
       + 'static {
    let (root, data, model) = (args.dir.clone(), data.to_owned(), args.model.clone());
    move || {
        let (root, data, store) = (root.clone(), data.clone(), store.clone());
        let (model, mcp_agent) = (model.clone(), mcp_agent.clone());
        Box::pin(async move {
            let mut runtime = load_runtime(&root, &data, store).await?;
            if let Some(model) = &model {
                runtime.override_model(model).ok()?;
            }
            if let Some(agent) = &mcp_agent {
                runtime.definitions().agents.get(agent)?;
            }
            Some(runtime)
        })
    }
}

/// Says where the server listens, how to authenticate, and what `/mcp` also takes.
fn greet(dir: &Path, address: &str, data: &Path, active: usize, config: &ServerConfig) {
    let data = super::data::shown(data);
    outln!(
        "toolhost serves {} at http://{address} (threads in {data})",
        dir.display()
    );
    if active == 0 {
        outln!(
            "no token exists yet: create one with `toolhost tokens create NAME --scope admin --data {data}`"
        );
    } else {
        outln!("authenticate with `Authorization: Bearer <token>` ({active} active tokens; `toolhost tokens list --data {data}`)");
    }
    if let Some(oauth) = &config.oauth {
        outln!(
            "/mcp also takes access tokens of {} for {} (metadata at {})",
            oauth.issuer,
            oauth.resource,
            oauth.metadata_url()
        );
    }
}

/// The OAuth settings of `[server.oauth]`, with an HTTP client for the authorization server's
/// keys (the environment's proxies apply; 10 s per answer, at most 1 MiB).
fn oauth_settings(
    table: &super::project_config::OAuthSection,
) -> Result<toolhost_server::OAuthSettings, String> {
    let network = toolhost_providers::Network::from_env().map_err(|e| e.to_string())?;
    let fetcher =
        toolhost_providers::fetch::HttpFetcher::new(&network, Duration::from_secs(10), 1 << 20)
            .map_err(|e| e.to_string())?;
    let mut settings =
        toolhost_server::OAuthSettings::new(&table.issuer, &table.resource, Arc::new(fetcher));
    settings.jwks_uri = table.jwks_uri.clone();
    settings.scope_prefix = table.scope_prefix.clone().unwrap_or_default();
    if let Some(seconds) = table.leeway_s {
        settings.leeway = Duration::from_secs(seconds);
    }
    settings.accept_plain_jwt = table.accept_plain_jwt.unwrap_or(false);
    Ok(settings)
}

/// A future that resolves on Ctrl-C or SIGTERM. The handlers are installed here, before the
/// address is printed, so that a signal sent as soon as the server says where it listens is
/// already a graceful stop.
fn stop_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    let term = signal(SignalKind::terminate());
    let interrupt = signal(SignalKind::interrupt());
    async move {
        match (term, interrupt) {
            (Ok(mut term), Ok(mut interrupt)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = interrupt.recv() => {}
                }
            }
            // Without signal handlers the server runs until it is killed.
            _ => std::future::pending().await,
        }
    }
}
