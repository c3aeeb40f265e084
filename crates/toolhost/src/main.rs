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
/// `debug`, `trace`); warnings by default. Logs never carry arguments, results or secrets.
fn init_logs() {
    let level = match std::env::var("TOOLHOST_LOG").as_deref().map(str::trim) {
        Ok("error") => tracing::Level::ERROR,
        Ok("info") => tracing::Level::INFO,
        Ok("debug") => tracing::Level::DEBUG,
        Ok("trace") => tracing::Level::TRACE,
        _ => tracing::Level::WARN,
    };
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}
