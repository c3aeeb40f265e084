//! `toolhost threads ...`: list stored threads and show one, with what it waits for.

use super::data::{open_store, DataArg};
use super::output::{self, outln, BAD_INPUT, INVALID};
use super::transcript::{print_messages, thread_json};
use super::tree::{print_tree, tree_json};
use super::waiting::{pending_json, print_pending};
use clap::Subcommand;
use std::path::Path;
use std::process::ExitCode;
use toolhost_runtime::engine::describe_owner;
use toolhost_store::Store;

#[derive(Debug, Subcommand)]
pub enum ThreadsCommand {
    /// One line per thread, newest first: its status, agent, messages, and when it was created
    /// and last active.
    List {
        #[command(flatten)]
        data: DataArg,
        /// Print the threads as a JSON array.
        #[arg(long)]
        json: bool,
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
        /// Show the thread and its sub-agents' threads, each with its status, instead of the
        /// transcript.
        #[arg(long)]
        tree: bool,
    },
    /// Ask the run that owns a thread to stop, in whatever process it runs: a running tool
    /// program is interrupted (SIGTERM, then SIGKILL), the model is not asked again, and
    /// `resume` continues the thread later.
    Stop {
        /// The thread's id.
        thread_id: String,
        #[command(flatten)]
        data: DataArg,
    },
}

pub fn threads(cmd: ThreadsCommand) -> ExitCode {
    match cmd {
        ThreadsCommand::List { data, json } => list(&data.data, json),
        ThreadsCommand::Show {
            thread_id,
            data,
            json,
            tree,
        } => show(&thread_id, &data.data, json, tree),
        ThreadsCommand::Stop { thread_id, data } => stop(&thread_id, &data.data),
    }
}

/// `threads list`: every thread with its status, agent, size and times.
fn list(data: &Path, json: bool) -> ExitCode {
    let store = match open_store(data) {
        Ok(s) => s,
        Err(code) => return code,
    };
    match store.threads(None) {
        Ok(threads) if json => {
            let rows: Vec<serde_json::Value> = threads
                .iter()
                .map(|t| {
                    let count = store.message_tally(&t.id).map(|n| n.count).unwrap_or(0);
                    let mut row = serde_json::to_value(t).unwrap_or_default();
                    row["messages"] = count.into();
                    row
                })
                .collect();
            output::json(&serde_json::Value::Array(rows));
        }
        Ok(threads) if threads.is_empty() => {
            outln!("no threads in {}", super::data::shown(data))
        }
        Ok(threads) => {
            outln!(
                "{:36}  {:8}  {:20}  {:>8}  {:19}  LAST ACTIVE (UTC)",
                "THREAD",
                "STATUS",
                "AGENT",
                "MESSAGES",
                "CREATED (UTC)"
            );
            for t in threads {
                let count = store.message_tally(&t.id).map(|n| n.count).unwrap_or(0);
                outln!(
                    "{:36}  {:8}  {:20}  {count:>8}  {:19}  {}",
                    t.id,
                    t.status.as_str(),
                    t.agent,
                    to_the_second(t.created_at),
                    to_the_second(t.updated_at),
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

/// `threads show THREAD`: its messages and what it waits for (`--tree`: with its descendants).
fn show(thread_id: &str, data: &Path, json: bool, tree: bool) -> ExitCode {
    let store = match open_store(data) {
        Ok(s) => s,
        Err(code) => return code,
    };
    if tree {
        return show_tree(store.as_ref(), thread_id, data, json);
    }
    let loaded = store
        .thread(thread_id)
        .and_then(|t| Ok((t, store.messages(thread_id)?, store.calls(thread_id)?)));
    match loaded {
        Ok((t, messages, calls)) => {
            let owner = store
                .lease(&t.id)
                .ok()
                .flatten()
                .filter(|l| l.is_live(toolhost_store::now_millis()));
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
        Err(toolhost_store::StoreError::ThreadNotFound(_)) => {
            missing_thread(store.as_ref(), thread_id, data)
        }
        Err(e) => {
            output::error("the thread could not be read.", Some(&e));
            output::exit(INVALID)
        }
    }
}

/// `threads stop THREAD`: asks the run that owns it to stop.
fn stop(thread_id: &str, data: &Path) -> ExitCode {
    let store = match open_store(data) {
        Ok(s) => s,
        Err(code) => return code,
    };
    match store.request_stop(thread_id) {
        Ok(true) => {
            outln!("asked the run that owns thread {thread_id} to stop");
            ExitCode::SUCCESS
        }
        Ok(false) => {
            outln!("no run owns thread {thread_id}; nothing to stop");
            ExitCode::SUCCESS
        }
        Err(toolhost_store::StoreError::ThreadNotFound(_)) => {
            missing_thread(store.as_ref(), thread_id, data)
        }
        Err(e) => {
            output::error("the stop request was not stored.", Some(&e));
            output::exit(INVALID)
        }
    }
}

/// `threads show THREAD --tree`: the thread and its descendants, as lines or as JSON.
fn show_tree(store: &dyn Store, thread_id: &str, data: &Path, json: bool) -> ExitCode {
    let shown = store.thread(thread_id).and_then(|t| {
        if json {
            output::json(&tree_json(store, &t)?);
            Ok(())
        } else {
            print_tree(store, &t)
        }
    });
    match shown {
        Ok(()) => ExitCode::SUCCESS,
        Err(toolhost_store::StoreError::ThreadNotFound(_)) => {
            missing_thread(store, thread_id, data)
        }
        Err(e) => {
            output::error("the thread's tree could not be read.", Some(&e));
            output::exit(INVALID)
        }
    }
}

/// Reports a thread id that `data` does not hold, naming the newest threads it does hold, and
/// returns the exit code for an unknown name.
pub(super) fn missing_thread(store: &dyn Store, id: &str, data: &Path) -> ExitCode {
    const SHOWN: usize = 5;
    let cause = match store.threads(None) {
        Ok(threads) if threads.is_empty() => "it holds no threads".to_owned(),
        Ok(threads) => {
            let newest: Vec<String> = threads
                .iter()
                .take(SHOWN)
                .map(|t| format!("{} ({})", t.id, t.agent))
                .collect();
            let more = if threads.len() > SHOWN {
                format!(
                    "; `toolhost threads list --data {}` lists all {}",
                    super::data::shown(data),
                    threads.len()
                )
            } else {
                String::new()
            };
            format!("the newest threads there: {}{more}", newest.join(", "))
        }
        Err(e) => format!("its threads could not be listed either: {e}"),
    };
    output::error(
        &format!("there is no thread {id} in {}.", super::data::shown(data)),
        Some(&cause),
    );
    output::exit(BAD_INPUT)
}

/// A stored time as `YYYY-MM-DD HH:MM:SS` in UTC: a list needs no milliseconds.
fn to_the_second(millis: toolhost_store::Millis) -> String {
    let full = toolhost_store::display_millis(millis);
    full.get(..19).unwrap_or(&full).to_owned()
}
