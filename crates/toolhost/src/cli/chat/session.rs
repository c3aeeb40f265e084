//! The chat's prompt loop: each message goes to the thread, each turn runs until the thread
//! needs the next message, and what it waits for is asked on the way.

use super::ask::{self, Answer};
use super::input::{Input, Read};
use super::screen;
use super::turn::{self, Ended, Start};
use super::watch::Watch;
use super::INTERRUPTED;
use crate::cli::data::EPHEMERAL;
use crate::cli::output::{self, errln, BAD_INPUT};
use crate::cli::transcript::print_messages;
use crate::cli::waiting::{data_flag, shell_word};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::signal::unix::Signal;
use toolhost_runtime::engine::{RunOutcome, Runtime, RuntimeError, StopReason, Waiting};
use toolhost_store::{Role, Store, ThreadStatus};

/// How many messages of a continued thread are shown before the first prompt.
const RECENT: usize = 12;

/// What the session does after a turn or a question.
pub(super) enum Flow {
    /// Back to the prompt.
    Prompt,
    /// Leave with this exit code.
    Leave(u8),
}

/// Everything a chat needs while it lasts.
pub(super) struct Session {
    /// The loaded project.
    pub(super) runtime: Runtime,
    /// Where the thread is kept.
    pub(super) store: Arc<dyn Store>,
    /// The project folder, for the command that continues the thread.
    pub(super) dir: PathBuf,
    /// The data folder, named in the commands that continue or show the thread.
    pub(super) data: PathBuf,
    /// The agent talked to.
    pub(super) agent: String,
    /// The thread, once there is one, and what of it was shown.
    pub(super) thread: Option<(String, Watch)>,
    /// What the person types.
    pub(super) input: Input,
    /// Variables read without echo.
    pub(super) secrets: BTreeSet<String>,
    /// Runs each turn.
    pub(super) rt: &'static tokio::runtime::Runtime,
    /// Ctrl-C while a turn runs.
    pub(super) interrupts: Signal,
}

impl Session {
    /// The prompt loop; returns the exit code.
    pub(super) fn go(mut self) -> u8 {
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
            if self.data == Path::new(EPHEMERAL) {
                errln!("thread {id} was kept in memory and is gone now");
            } else {
                errln!(
                    "thread {id} is kept; continue it with: toolhost chat {} --agent {} --thread {id}{}",
                    shell_word(&self.dir.display().to_string()),
                    self.agent,
                    data_flag(&self.data)
                );
            }
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
        show_recent(self.store.as_ref(), id, &self.data);
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
            match self.rt.block_on(self.runtime.start_thread_with(
                &self.agent,
                message,
                values.clone(),
            )) {
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
                Err(e @ (RuntimeError::Model { .. } | RuntimeError::UnknownAgent { .. })) => {
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
        StopReason::SessionStop(end) => {
            format!(
                "the session ended: {}",
                super::super::run::session_words(end)
            )
        }
        StopReason::SessionFail(end) => {
            format!(
                "the session failed: {}",
                super::super::run::session_words(end)
            )
        }
    };
    screen::line(&format!("  {why}"));
}

/// Prints the last messages of a thread.
fn show_recent(store: &dyn Store, thread: &str, data: &Path) {
    let messages: Vec<_> = store
        .messages(thread)
        .unwrap_or_default()
        .into_iter()
        .filter(|m| m.depth == 0 && m.role != Role::System)
        .collect();
    let skip = messages.len().saturating_sub(RECENT);
    if skip > 0 {
        screen::line(&format!(
            "… {skip} earlier messages (toolhost threads show {thread}{})",
            data_flag(data)
        ));
    }
    print_messages(&messages[skip..]);
    screen::line("");
}
