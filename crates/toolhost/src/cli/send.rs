//! `toolhost send`: a message to a stored thread, then its next turn, printed like `run`.

use super::data::DataArg;
use super::executor::block_on;
use super::open::open_project;
use super::output::{self, BAD_INPUT, INVALID};
use super::run::{drive, Drive};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use toolhost_runtime::engine::RuntimeError;

#[derive(Debug, Args)]
pub struct SendArgs {
    /// The project folder.
    dir: PathBuf,
    /// The thread to send to.
    thread_id: String,
    #[command(flatten)]
    data: DataArg,
    /// Print the whole thread record as JSON.
    #[arg(long)]
    json: bool,
    /// When another run owns the thread, wait until it is free and then run the next turn here
    /// (without this, the message is queued for the owner and the command exits 4).
    #[arg(long)]
    wait: bool,
    /// Use this model definition (a file in agents/models/) for every prompt.
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// The user's message.
    message: String,
}

pub fn send(args: SendArgs) -> ExitCode {
    let opened = open_project(
        &args.dir,
        &args.data.data,
        Some(&args.thread_id),
        args.model.as_deref(),
    );
    let (store, runtime) = match opened {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    // A thread whose agent cannot run is refused before its message is stored.
    let checked = store
        .thread(&args.thread_id)
        .map_err(RuntimeError::from)
        .and_then(|thread| runtime.check_agent(&thread.agent));
    if let Err(e) = checked {
        output::error("the message was not sent.", Some(&e));
        return output::exit(BAD_INPUT);
    }
    // Stored before anything runs: whoever owns the thread takes it at its next step.
    if let Err(e) = block_on(runtime.queue_message(&args.thread_id, &args.message)) {
        output::error("the message was not stored.", Some(&e));
        return output::exit(INVALID);
    }
    drive(
        &runtime,
        &store,
        &args.dir,
        &args.thread_id,
        &Drive {
            json: args.json,
            wait: args.wait,
            stored: "the message is queued and the owner takes it at its next step",
            data: &args.data.data,
        },
    )
}
