//! The `toolhost` command line.

// Standard output and error are written through `cli::output`, which ends the command quietly
// when the reader of a pipe has gone; `println!` would panic instead.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod cli;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    init_logs();
    let args = cli::Cli::parse();
    cli::run(args)
}

/// Logs go to standard error at the level `TOOLHOST_LOG` names (`error`, `warn`, `info`,
/// `debug`, `trace`); warnings by default. Logs never carry arguments, results or secrets. The
/// MCP SDK's own logs appear from `debug` on: what its failures mean is in toolhost's results
/// and errors already, in toolhost's words.
fn init_logs() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;
    let level = match std::env::var("TOOLHOST_LOG").as_deref().map(str::trim) {
        Ok("error") => tracing::Level::ERROR,
        Ok("info") => tracing::Level::INFO,
        Ok("debug") => tracing::Level::DEBUG,
        Ok("trace") => tracing::Level::TRACE,
        _ => tracing::Level::WARN,
    };
    let sdk_too = level >= tracing::Level::DEBUG;
    let filter = tracing_subscriber::filter::filter_fn(move |meta| {
        *meta.level() <= level && (sdk_too || !meta.target().starts_with("rmcp"))
    });
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(false)
                .with_filter(filter),
        )
        .try_init();
}
