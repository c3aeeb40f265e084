//! `toolhost serve DIR`: the HTTP API over a project, until Ctrl-C or SIGTERM.

use super::output::{self, BAD_INPUT, INVALID};
use super::run::{open_project, DataArg};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use tokio::signal::unix::{signal, SignalKind};
use toolhost_server::{Server, ServerConfig};

/// Where `toolhost serve` listens unless `--listen` says otherwise: this machine only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7878";

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The project folder.
    dir: PathBuf,
    #[command(flatten)]
    data: DataArg,
    /// The address and port to listen on (`0.0.0.0:7878` for every interface).
    #[arg(long, default_value = DEFAULT_LISTEN)]
    listen: String,
    /// Run every prompt on this model definition instead of its own.
    #[arg(long)]
    model: Option<String>,
}

/// Loads the project and serves it until asked to stop, then stops gracefully.
pub fn serve(args: ServeArgs) -> ExitCode {
    let (store, runtime) =
        match open_project(&args.dir, &args.data.data, None, args.model.as_deref()) {
            Ok(opened) => opened,
            Err(code) => return code,
        };
    let active = match store.tokens() {
        Ok(tokens) => tokens.iter().filter(|t| t.revoked_at.is_none()).count(),
        Err(e) => {
            output::error("the tokens could not be read.", Some(&e));
            return output::exit(INVALID);
        }
    };
    let threads = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            output::error("the async runtime could not start.", Some(&e));
            return output::exit(INVALID);
        }
    };
    threads.block_on(async move {
        let listener = match tokio::net::TcpListener::bind(&args.listen).await {
            Ok(l) => l,
            Err(e) => {
                output::error(&format!("toolhost could not listen on {}.", args.listen), Some(&e));
                return output::exit(BAD_INPUT);
            }
        };
        let address = listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| args.listen.clone());
        let data = args.data.data.display();
        println!("toolhost serves {} at http://{address} (threads in {data})", args.dir.display());
        if active == 0 {
            println!(
                "no token exists yet: create one with `toolhost tokens create NAME --scope admin --data {data}`"
            );
        } else {
            println!("authenticate with `Authorization: Bearer <token>` ({active} active tokens; `toolhost tokens list --data {data}`)");
        }
        let server = Server::new(Arc::new(runtime), ServerConfig::default());
        match server.run(listener, stop_signal()).await {
            Ok(()) => {
                println!("stopped: every run of this server stored its work and released its thread");
                ExitCode::SUCCESS
            }
            Err(e) => {
                output::error("the server failed.", Some(&e));
                output::exit(INVALID)
            }
        }
    })
}

/// Resolves on Ctrl-C or SIGTERM.
async fn stop_signal() {
    let term = signal(SignalKind::terminate());
    let interrupt = signal(SignalKind::interrupt());
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
