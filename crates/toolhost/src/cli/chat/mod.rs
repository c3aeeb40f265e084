//! `toolhost chat`: a conversation with an agent in the terminal. The answer streams in, each
//! tool call is shown as it starts and ends, approvals and missing variables are asked inline
//! (secrets without echo), Ctrl-C stops the turn under way and a second one leaves.
//!
//! Each message is sent to the thread like `toolhost send`, so the thread is the same stored
//! thread every other command sees, and it can be continued later with `--thread`.

mod ask;
mod input;
mod screen;
mod session;
mod turn;
mod watch;

use super::data::DataArg;
use super::output::{self, BAD_INPUT, INVALID};
use clap::Args;
use input::Input;
use session::Session;
use std::path::PathBuf;
use std::process::ExitCode;
use tokio::signal::unix::{signal, SignalKind};
use toolhost_runtime::engine::name_list;
use toolhost_runtime::project::load_definitions;
use watch::Watch;

/// Exit code when a second Ctrl-C cut off a turn that was still running.
pub const INTERRUPTED: u8 = 130;

#[derive(Debug, Args)]
pub struct ChatArgs {
    /// The project folder.
    dir: PathBuf,
    /// The agent to talk to (a file in agents/agents/).
    #[arg(long)]
    agent: String,
    /// Continue this stored thread (its last messages are shown first).
    #[arg(long, value_name = "ID")]
    thread: Option<String>,
    #[command(flatten)]
    data: DataArg,
    /// Use this model definition (a file in agents/models/) for every prompt.
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
}

/// Checks the project, agent and thread, then talks until the person leaves.
pub fn chat(args: ChatArgs) -> ExitCode {
    let checked = match super::open::check_agent_first(
        &args.dir,
        &args.data.data,
        &args.agent,
        args.model.as_deref(),
    ) {
        Ok(checked) => checked,
        Err(code) => return code,
    };
    let (store, runtime) = match super::open::open_checked(&args.dir, &args.data.data, checked) {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let defs = load_definitions(&args.dir);
    if !defs.agents.contains_key(&args.agent) {
        let known: Vec<&String> = defs.agents.keys().collect();
        output::error(
            &format!(
                "there is no agent named {} in {}.",
                args.agent,
                args.dir.join("agents/agents").display()
            ),
            Some(&format!("the agents there: {}", name_list(&known))),
        );
        return output::exit(BAD_INPUT);
    }
    if let Some(id) = &args.thread {
        match store.thread(id) {
            Err(toolhost_store::StoreError::ThreadNotFound(_)) => {
                return super::threads::missing_thread(store.as_ref(), id, &args.data.data);
            }
            Err(e) => {
                output::error(&format!("thread {id} could not be read."), Some(&e));
                return output::exit(INVALID);
            }
            Ok(t) if t.agent != args.agent => {
                output::error(
                    &format!(
                        "thread {id} belongs to agent {}, not {}.",
                        t.agent, args.agent
                    ),
                    None,
                );
                return output::exit(BAD_INPUT);
            }
            Ok(_) => {}
        }
    }
    let rt = super::executor::async_runtime();
    let interrupts = {
        let _entered = rt.enter();
        signal(SignalKind::interrupt())
    };
    let interrupts = match interrupts {
        Ok(s) => s,
        Err(e) => {
            output::error("Ctrl-C could not be handled.", Some(&e));
            return output::exit(INVALID);
        }
    };
    let thread = args
        .thread
        .as_ref()
        .map(|id| (id.clone(), Watch::new(store.clone(), id)));
    let session = Session {
        secrets: runtime.secret_names(),
        runtime,
        store,
        dir: args.dir,
        data: args.data.data,
        agent: args.agent,
        thread,
        input: Input::open(),
        rt,
        interrupts,
    };
    output::exit(session.go())
}
