//! `toolhost chat`: a conversation with an agent in the terminal. The answer streams in, each
//! tool call is shown as it starts and ends, approvals and missing variables are asked inline
//! (secrets without echo), Ctrl-C stops the turn under way and a second one leaves.
//!
//! Each message is sent to the thread like `toolhost send`, so the thread is the same stored
//! thread every other command sees, and it can be continued later with `--thread`.

mod ask;
mod input;
mod screen;
mod turn;
mod watch;

use super::output::{self, BAD_INPUT, INVALID};
use super::run::{load_runtime, open_store, DataArg};
use super::transcript::print_messages;
use ask::Answer;
use clap::Args;
use input::{Input, Read};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use tokio::signal::unix::{signal, Signal, SignalKind};
use toolhost_core::blueprint::Activities;
use toolhost_core::variables::VariableKind;
use toolhost_runtime::engine::{RunOutcome, Runtime, RuntimeError, StopReason, Waiting};
use toolhost_runtime::project::{load_definitions, load_tools, Definitions};
use toolhost_store::{Role, Store, ThreadStatus};
use turn::{Ended, Start};
use watch::Watch;

/// Exit code when a second Ctrl-C cut off a turn that was still running.
pub const INTERRUPTED: u8 = 130;

/// How many messages of a continued thread are shown before the first prompt.
const RECENT: usize = 12;

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

/// What the session does after a turn or a question.
enum Flow {
    /// Back to the prompt.
    Prompt,
    /// Leave with this exit code.
    Leave(u8),
}

/// Everything a chat needs while it lasts.
struct Session {
    runtime: Runtime,
    store: Arc<dyn Store>,
    dir: PathBuf,
    agent: String,
    /// The thread, once there is one, and what of it was shown.
    thread: Option<(String, Watch)>,
    input: Input,
    secrets: BTreeSet<String>,
    rt: tokio::runtime::Runtime,
    interrupts: Signal,
}

pub fn chat(args: ChatArgs) -> ExitCode {
    let store = match open_store(&args.data.data) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let Some(mut runtime) = load_runtime(&args.dir, &args.data.data, store.clone()) else {
        return output::exit(BAD_INPUT);
    };
    if let Some(model) = &args.model {
        if let Err(e) = runtime.override_model(model) {
            output::error(&format!("--model {model} cannot be used."), Some(&e));
            return output::exit(BAD_INPUT);
        }
    }
    let defs = load_definitions(&args.dir);
    if !defs.agents.contains_key(&args.agent) {
        output::error(
            &format!(
                "there is no agent named {} in {}.",
                args.agent,
                args.dir.join("agents/agents").display()
            ),
            None,
        );
        return output::exit(BAD_INPUT);
    }
    if let Some(id) = &args.thread {
        match store.thread(id) {
            Err(e) => {
                output::error(
                    &format!("there is no thread {id} in {}.", args.data.data.display()),
                    Some(&e),
                );
                return output::exit(BAD_INPUT);
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
        secrets: secret_names(&args.dir, &defs),
        runtime,
        store,
        dir: args.dir,
        agent: args.agent,
        thread,
        input: Input::open(),
        rt,
        interrupts,
    };
    output::exit(session.go())
}

impl Session {
    /// The prompt loop; returns the exit code.
    fn go(mut self) -> u8 {
        let code = self.opening().unwrap_or_else(|| loop {
            let message = match self.input.line("> ") {
                Read::Line(line) => line,
                Read::Interrupted | Read::Eof => break 0,
            };
            let message = message.trim();
            if message.is_empty() {
                continue;
            }
            self.input.remember(message);
            let flow = if self.thread.is_some() {
                self.converse(Start::Send(message.to_owned()))
            } else {
                self.start(message)
            };
            if let Flow::Leave(code) = flow {
                break code;
            }
        });
        screen::end_line();
        if let Some((id, _)) = &self.thread {
            eprintln!(
                "thread {id} is kept; continue it with: toolhost chat {} --agent {} --thread {id}",
                self.dir.display(),
                self.agent
            );
        }
        code
    }

    /// Greets; a continued thread shows its last messages and what it waits for is asked.
    /// Returns an exit code when the person leaves already.
    fn opening(&mut self) -> Option<u8> {
        let how = if self.input.is_terminal() {
            "Ctrl-C stops a turn; Ctrl-C or Ctrl-D at the prompt leaves"
        } else {
            "one message a line"
        };
        let Some((id, _)) = &self.thread else {
            screen::line(&format!("chat with agent {} ({how})", self.agent));
            return None;
        };
        screen::line(&format!(
            "chat with agent {} on thread {id} ({how})",
            self.agent
        ));
        show_recent(self.store.as_ref(), id);
        let paused = self
            .store
            .thread(id)
            .is_ok_and(|t| t.status == ThreadStatus::Paused);
        match paused.then(|| self.converse(Start::Run)) {
            Some(Flow::Leave(code)) => Some(code),
            _ => None,
        }
    }

    /// Starts the thread with its first message, asking for variables the agent requires.
    fn start(&mut self, message: &str) -> Flow {
        let mut values = Vec::new();
        loop {
            match self
                .runtime
                .start_thread_with(&self.agent, message, values.clone())
            {
                Ok(thread) => {
                    let watch = Watch::new(self.store.clone(), &thread.id);
                    self.thread = Some((thread.id, watch));
                    return self.converse(Start::Run);
                }
                Err(RuntimeError::MissingVariables { names, .. }) if values.is_empty() => {
                    screen::line(&format!("  ? the agent needs {}", names.join(", ")));
                    match ask::values(&mut self.input, &names, &self.secrets) {
                        Ok(given) => values = given,
                        Err(Answer::Leave) => return Flow::Leave(0),
                        Err(_) => {
                            screen::line("  no thread was started; your next message starts it");
                            return Flow::Prompt;
                        }
                    }
                }
                Err(e @ (RuntimeError::Model { .. } | RuntimeError::UnknownAgent(_))) => {
                    output::error("the thread could not be started.", Some(&e));
                    return Flow::Leave(BAD_INPUT);
                }
                Err(e) => {
                    output::error("the thread could not be started.", Some(&e));
                    return Flow::Prompt;
                }
            }
        }
    }

    /// Runs turns until the thread needs the next message, asking what it waits for.
    fn converse(&mut self, mut start: Start) -> Flow {
        loop {
            let Some((thread, watch)) = self.thread.as_mut() else {
                return Flow::Prompt;
            };
            let ended = self.rt.block_on(turn::run(
                &self.runtime,
                thread,
                start,
                &mut self.interrupts,
                watch,
            ));
            let thread = thread.clone();
            let (outcome, stop_asked) = match ended {
                Ended::Left => return Flow::Leave(INTERRUPTED),
                Ended::StoppedWaiting => {
                    screen::line("  stopped waiting; what you sent stays stored for the run that owns the thread");
                    return Flow::Prompt;
                }
                Ended::Ran {
                    outcome,
                    stop_asked,
                } => (*outcome, stop_asked),
            };
            let answer = match outcome {
                Ok(RunOutcome::Done(reason)) => {
                    say_done(&reason);
                    return Flow::Prompt;
                }
                Ok(RunOutcome::Paused(_)) if stop_asked => {
                    screen::line(
                        "  stopped; the thread waits for you, and your next message asks again",
                    );
                    return Flow::Prompt;
                }
                Ok(RunOutcome::Paused(Waiting::Approval(request))) => {
                    ask::approval(&mut self.input, &self.runtime, &thread, &request)
                }
                Ok(RunOutcome::Paused(Waiting::Variables { names, .. })) => ask::variables(
                    &mut self.input,
                    &self.runtime,
                    &thread,
                    &names,
                    &self.secrets,
                ),
                Err(e) => {
                    screen::end_line();
                    output::error("the turn failed.", Some(&e));
                    return Flow::Prompt;
                }
            };
            match answer {
                Answer::Given => start = Start::Run,
                Answer::Later => return Flow::Prompt,
                Answer::Leave => return Flow::Leave(0),
            }
        }
    }
}

/// Says why a turn ended, unless the agent simply replied.
fn say_done(reason: &StopReason) {
    let why = match reason {
        StopReason::Response => return,
        StopReason::StopTool(t) => format!("the turn ended: stop tool {t} was called"),
        StopReason::MaxSteps(n) => format!("the turn ended: its step budget of {n} was used up"),
        StopReason::MaxSessionTurns(n) => format!("the session had its {n} turns"),
        StopReason::Stopped => "stopped; the thread goes on with your next message".to_owned(),
    };
    screen::line(&format!("  {why}"));
}

/// Prints the last messages of a thread.
fn show_recent(store: &dyn Store, thread: &str) {
    let messages: Vec<_> = store
        .messages(thread)
        .unwrap_or_default()
        .into_iter()
        .filter(|m| m.depth == 0 && m.role != Role::System)
        .collect();
    let skip = messages.len().saturating_sub(RECENT);
    if skip > 0 {
        screen::line(&format!(
            "… {skip} earlier messages (toolhost threads show {thread})"
        ));
    }
    print_messages(&messages[skip..]);
    screen::line("");
}

/// The variables any tool, prompt or agent of the project declares secret: these are read
/// without echo.
fn secret_names(dir: &Path, defs: &Definitions) -> BTreeSet<String> {
    let tools = load_tools(dir, &Activities::new())
        .map(|p| p.tools)
        .unwrap_or_default();
    tools
        .iter()
        .flat_map(|t| t.tool.definition().variables.iter())
        .chain(defs.prompts.values().flat_map(|p| p.variables.iter()))
        .chain(defs.agents.values().flat_map(|a| a.variables.iter()))
        .filter(|d| d.kind == VariableKind::Secret)
        .map(|d| d.name.clone())
        .collect()
}
