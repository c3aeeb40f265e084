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

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The project folder.
    dir: PathBuf,
    /// The thread to continue.
    thread_id: String,
    #[command(flatten)]
    data: DataArg,
    /// Print the whole thread record as JSON.
    #[arg(long)]
    json: bool,
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
    let Some(runtime) = load_runtime(&args.dir, store.clone()) else {
        return output::exit(BAD_INPUT);
    };
    match runtime.start_thread(&args.agent, &args.message) {
        Ok(thread) => drive(&runtime, &store, &thread.id, args.json),
        Err(e) => {
            output::error("the thread could not be started.", Some(&e));
            output::exit(BAD_INPUT)
        }
    }
}

/// `toolhost resume`: continues a thread from what is stored (after a crash, for example).
pub fn resume(args: ResumeArgs) -> ExitCode {
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
    let Some(runtime) = load_runtime(&args.dir, store.clone()) else {
        return output::exit(BAD_INPUT);
    };
    drive(&runtime, &store, &args.thread_id, args.json)
}

fn load_runtime(dir: &Path, store: Arc<dyn Store>) -> Option<Runtime> {
    match Runtime::load(dir, store) {
        Ok(runtime) => {
            for problem in runtime.problems() {
                output::note("warning", &format!("{problem} (the file was not loaded)"));
            }
            Some(runtime)
        }
        Err(e) => {
            output::error("the project could not be loaded.", Some(&e));
            None
        }
    }
}

/// Runs a thread until its turn ends and prints it.
fn drive(runtime: &Runtime, store: &Arc<dyn Store>, thread_id: &str, as_json: bool) -> ExitCode {
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
    let outcome = rt.block_on(runtime.run(thread_id));
    if as_json {
        if let (Ok(t), Ok(m), Ok(c)) = (
            store.thread(thread_id),
            store.messages(thread_id),
            store.calls(thread_id),
        ) {
            output::json(&thread_json(&t, &m, &c));
        }
    } else if let Ok(messages) = store.messages(thread_id) {
        print_messages(&messages);
    }
    match outcome {
        Ok(RunOutcome::Done(reason)) => {
            if !as_json {
                let why = match reason {
                    StopReason::Response => "the agent replied".to_owned(),
                    StopReason::StopTool(t) => format!("stop tool {t} was called"),
                    StopReason::MaxSteps(n) => format!("the step budget of {n} was used up"),
                    StopReason::MaxSessionTurns(n) => {
                        format!("the session had its {n} turns")
                    }
                    StopReason::Stopped => "it was stopped".to_owned(),
                };
                eprintln!("thread {thread_id} done: {why}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            output::error(&format!("thread {thread_id} failed."), Some(&e));
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
