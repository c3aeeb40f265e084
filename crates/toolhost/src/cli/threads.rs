//! `toolhost threads ...`: list stored threads and show one, with what it waits for.

use super::output::{self, outln, BAD_INPUT, INVALID};
use super::run::{open_store, DataArg};
use super::transcript::{print_messages, thread_json};
use super::waiting::{pending_json, print_pending};
use clap::Subcommand;
use std::process::ExitCode;
use toolhost_runtime::engine::describe_owner;

#[derive(Debug, Subcommand)]
pub enum ThreadsCommand {
    /// One line per thread, newest first.
    List {
        #[command(flatten)]
        data: DataArg,
    },
    /// A thread's transcript.
    Show {
        /// The thread's id.
        thread_id: String,
        #[command(flatten)]
        data: DataArg,
        /// Print the whole thread record as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Ask the run that owns a thread to stop, in whatever process it runs; it stops after the
    /// model request or tool call under way, and `resume` continues it later.
    Stop {
        /// The thread's id.
        thread_id: String,
        #[command(flatten)]
        data: DataArg,
    },
}

pub fn threads(cmd: ThreadsCommand) -> ExitCode {
    match cmd {
        ThreadsCommand::List { data } => {
            let store = match open_store(&data.data) {
                Ok(s) => s,
                Err(code) => return code,
            };
            match store.threads(None) {
                Ok(threads) if threads.is_empty() => {
                    outln!("no threads in {}", data.data.display())
                }
                Ok(threads) => {
                    outln!("{:36}  {:8}  {:20}  MESSAGES", "THREAD", "STATUS", "AGENT");
                    for t in threads {
                        let count = store.messages(&t.id).map(|m| m.len()).unwrap_or(0);
                        outln!(
                            "{:36}  {:8}  {:20}  {count}",
                            t.id,
                            t.status.as_str(),
                            t.agent
                        );
                    }
                }
                Err(e) => {
                    output::error("the threads could not be listed.", Some(&e));
                    return output::exit(INVALID);
                }
            }
            ExitCode::SUCCESS
        }
        ThreadsCommand::Show {
            thread_id,
            data,
            json,
        } => {
            let store = match open_store(&data.data) {
                Ok(s) => s,
                Err(code) => return code,
            };
            let loaded = store
                .thread(&thread_id)
                .and_then(|t| Ok((t, store.messages(&thread_id)?, store.calls(&thread_id)?)));
            match loaded {
                Ok((t, messages, calls)) => {
                    let owner = store.lease(&t.id).ok().flatten();
                    if json {
                        let mut record = thread_json(&t, &messages, &calls);
                        record["pending"] = pending_json(store.as_ref(), &t.id);
                        record["owner"] = serde_json::to_value(&owner).unwrap_or_default();
                        output::json(&record);
                    } else {
                        outln!("thread {} ({}, agent {})", t.id, t.status.as_str(), t.agent);
                        if let Some(lease) = &owner {
                            outln!("{}", describe_owner(lease));
                        }
                        print_messages(&messages);
                        print_pending(store.as_ref(), &t.id);
                    }
                    ExitCode::SUCCESS
                }
                Err(e @ toolhost_store::StoreError::ThreadNotFound(_)) => {
                    output::error(
                        &format!("there is no thread {thread_id} in {}.", data.data.display()),
                        Some(&e),
                    );
                    output::exit(BAD_INPUT)
                }
                Err(e) => {
                    output::error("the thread could not be read.", Some(&e));
                    output::exit(INVALID)
                }
            }
        }
        ThreadsCommand::Stop { thread_id, data } => {
            let store = match open_store(&data.data) {
                Ok(s) => s,
                Err(code) => return code,
            };
            match store.request_stop(&thread_id) {
                Ok(true) => {
                    outln!("asked the run that owns thread {thread_id} to stop");
                    ExitCode::SUCCESS
                }
                Ok(false) => {
                    outln!("no run owns thread {thread_id}; nothing to stop");
                    ExitCode::SUCCESS
                }
                Err(e @ toolhost_store::StoreError::ThreadNotFound(_)) => {
                    output::error(
                        &format!("there is no thread {thread_id} in {}.", data.data.display()),
                        Some(&e),
                    );
                    output::exit(BAD_INPUT)
                }
                Err(e) => {
                    output::error("the stop request was not stored.", Some(&e));
                    output::exit(INVALID)
                }
            }
        }
    }
}
