//! `toolhost send`: a message to a stored thread, then its next turn, printed like `run`.

use super::output::{self, BAD_INPUT, INVALID};
use super::run::{block_on, drive, load_runtime, open_store, DataArg, Drive};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

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
    let store = match open_store(&args.data.data) {
        Ok(s) => s,
        Err(code) => return code,
    };
    if let Err(e) = store.thread(&args.thread_id) {
        output::error(
            &format!(
                "there is no thread {} in {}.",
                args.thread_id,
                args.data.data.display()
            ),
            Some(&e),
        );
        return output::exit(BAD_INPUT);
    }
    let Some(mut runtime) = load_runtime(&args.dir, &args.data.data, store.clone()) else {
        return output::exit(BAD_INPUT);
    };
    if let Some(model) = &args.model {
        if let Err(e) = runtime.override_model(model) {
            output::error(&format!("--model {model} cannot be used."), Some(&e));
            return output::exit(BAD_INPUT);
        }
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
        },
    )
}
