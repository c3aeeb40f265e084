//! `toolhost run` and `toolhost threads ...`: run an agent on a thread, list and show threads.

use super::output::{self, BAD_INPUT, INVALID};
use super::transcript::{print_messages, thread_json};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use toolhost_runtime::engine::{RunOutcome, Runtime, StopReason};
use toolhost_store::{SqliteStore, Store};

/// Where threads are kept unless `--data` says otherwise.
pub const DEFAULT_DATA_DIR: &str = ".toolhost";

#[derive(Debug, Args)]
pub struct DataArg {
    /// The data folder (created if missing); its toolhost.db holds every thread.
    #[arg(long, default_value = DEFAULT_DATA_DIR)]
    data: PathBuf,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The project folder.
    dir: PathBuf,
    /// The agent to run (a file in agents/agents/).
    #[arg(long)]
    agent: String,
    #[command(flatten)]
    data: DataArg,
    /// Print the whole thread record as JSON.
    #[arg(long)]
    json: bool,
    /// The user's message.
    message: String,
}

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
}

fn open_store(data: &Path) -> Result<Arc<dyn Store>, ExitCode> {
    std::fs::create_dir_all(data).map_err(|e| {
        output::error(
            &format!("the data folder {} could not be created.", data.display()),
            Some(&e),
        );
        output::exit(BAD_INPUT)
    })?;
    let store = SqliteStore::open(&data.join("toolhost.db")).map_err(|e| {
        output::error(
            &format!("the store in {} could not be opened.", data.display()),
            Some(&e),
        );
        output::exit(INVALID)
    })?;
    Ok(Arc::new(store))
}

pub fn run(args: RunArgs) -> ExitCode {
    let store = match open_store(&args.data.data) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let runtime = match Runtime::load(&args.dir, store.clone()) {
        Ok(r) => r,
        Err(e) => {
            output::error("the project could not be loaded.", Some(&e));
            return output::exit(BAD_INPUT);
        }
    };
    for problem in runtime.problems() {
        output::note("warning", &format!("{problem} (the file was not loaded)"));
    }
    let thread = match runtime.start_thread(&args.agent, &args.message) {
        Ok(t) => t,
        Err(e) => {
            output::error("the thread could not be started.", Some(&e));
            return output::exit(BAD_INPUT);
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            output::error("the async runtime could not start.", Some(&e));
            return output::exit(INVALID);
        }
    };
    let outcome = rt.block_on(runtime.run(&thread.id));
    let show = |store: &Arc<dyn Store>| {
        if args.json {
            let (Ok(t), Ok(m), Ok(c)) = (
                store.thread(&thread.id),
                store.messages(&thread.id),
                store.calls(&thread.id),
            ) else {
                return;
            };
            output::json(&thread_json(&t, &m, &c));
        } else if let Ok(messages) = store.messages(&thread.id) {
            print_messages(&messages);
        }
    };
    match outcome {
        Ok(RunOutcome::Done(reason)) => {
            show(&store);
            if !args.json {
                let why = match reason {
                    StopReason::Response => "the agent replied".to_owned(),
                    StopReason::StopTool(t) => format!("stop tool {t} was called"),
                    StopReason::MaxSteps(n) => format!("the step budget of {n} was used up"),
                };
                eprintln!("thread {} done: {why}", thread.id);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            show(&store);
            output::error(&format!("thread {} failed.", thread.id), Some(&e));
            output::exit(INVALID)
        }
    }
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
                    println!("no threads in {}", data.data.display())
                }
                Ok(threads) => {
                    println!("{:36}  {:8}  {:20}  MESSAGES", "THREAD", "STATUS", "AGENT");
                    for t in threads {
                        let count = store.messages(&t.id).map(|m| m.len()).unwrap_or(0);
                        println!(
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
                    if json {
                        output::json(&thread_json(&t, &messages, &calls));
                    } else {
                        println!("thread {} ({}, agent {})", t.id, t.status.as_str(), t.agent);
                        print_messages(&messages);
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
    }
}
