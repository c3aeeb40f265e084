//! Process activities: a program run once per call, JSON in on standard input, a `ToolResult`
//! out on standard output.
//!
//! A definition (`agents/activities/NAME.json`):
//! ```json
//! {"command": ["python3", "activities/weather.py"], "timeoutMs": 10000,
//!  "env": ["PATH", "WEATHER_URL"], "cwd": ".", "stopGraceMs": 5000}
//! ```
//! `command` is the program and its arguments as a list, never a shell string. `env` names the
//! variables of toolhost's own environment the program may see; it sees no others. `cwd` is a
//! folder inside the project. The program starts in its own process group so that a timeout
//! kills everything it started. A call made in a thread also gets the thread's `ThreadState`
//! over a channel of its own (see [`super::channel`]), and a stop of the run reaches the
//! program: SIGTERM to its group, SIGKILL after `stopGraceMs` ([`STOP_GRACE`] unless set; at most
//! [`MAX_STOP_GRACE_MS`]).

use super::channel::{STATE_FD, STATE_FD_VAR};
use super::streams::{quoted_tail, read_capped, Captured};
use crate::engine::ThreadState;
use crate::variables::Redactor;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;
use tokio::process::Command;
use toolhost_core::tool::AbortSignal;
use toolhost_core::ToolResult;
use toolhost_programs::{kill_group, terminate_group, Located};

/// The default time a call may take.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// The default cap on standard output (and, separately, standard error).
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1024 * 1024;

/// A process activity as declared in its file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Definition {
    command: Vec<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    env: Vec<String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    max_output_bytes: Option<usize>,
    #[serde(default)]
    approval: Option<ApprovalRule>,
    #[serde(default)]
    stop_grace_ms: Option<u64>,
}

/// `approval` in an activity file: every call of a tool bound to the activity needs approval.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApprovalRule {
    /// Why approval is asked, shown to the person deciding.
    #[serde(default)]
    pub reason: Option<String>,
    /// What the model is told when a call is rejected without a message.
    #[serde(default)]
    pub reject_message: Option<String>,
}

/// A loaded, checked process activity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessActivity {
    /// The activity's name (its file stem).
    pub name: String,
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// How long one call may run.
    pub timeout: Duration,
    /// Names of environment variables passed through.
    pub env: Vec<String>,
    /// The working folder.
    pub cwd: PathBuf,
    /// The cap on standard output.
    pub max_output_bytes: usize,
    /// When set, every call needs approval.
    pub approval: Option<ApprovalRule>,
    /// How long a stopped program has between SIGTERM and SIGKILL.
    pub stop_grace: Duration,
}

/// Why an activity file could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("activity {name}: {reason}")]
pub struct ProcessActivityError {
    /// The activity (the file stem).
    pub name: String,
    /// What is wrong.
    pub reason: String,
}

/// What a program receives on standard input for one call. Its `Debug` names the variables
/// but never shows their values, which may be secrets opened for this call.
#[derive(Clone, PartialEq, Serialize)]
pub struct ActivityInput {
    /// The tool called.
    pub tool: String,
    /// The validated arguments.
    pub arguments: Value,
    /// The thread the call runs in.
    pub thread_id: Option<String>,
    /// The runtime-owned call id.
    pub call_id: String,
    /// A key that stays the same when the call is retried.
    pub idempotency_key: String,
    /// The values of the variables the tool declared.
    pub variables: Map<String, Value>,
}

impl std::fmt::Debug for ActivityInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActivityInput")
            .field("tool", &self.tool)
            .field("arguments", &self.arguments)
            .field("thread_id", &self.thread_id)
            .field("call_id", &self.call_id)
            .field("idempotency_key", &self.idempotency_key)
            .field("variables", &self.variables.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ProcessActivity {
    /// Reads an activity definition; `project` is the project root that `cwd` and relative
    /// program paths are resolved against.
    pub fn parse(name: &str, text: &str, project: &Path) -> Result<Self, ProcessActivityError> {
        let fail = |reason: String| ProcessActivityError {
            name: name.to_owned(),
            reason,
        };
        let def: Definition = serde_json::from_str(text)
            .map_err(|e| fail(format!("not a valid activity definition: {e}")))?;
        let located = Located::of(&def.command, def.cwd.as_deref(), project)
            .map_err(|e| fail(e.to_string()))?;
        if def.timeout_ms == Some(0) {
            return Err(fail("`timeoutMs` must be greater than 0".to_owned()));
        }
        if let Some(ms) = def.stop_grace_ms.filter(|ms| *ms > MAX_STOP_GRACE_MS) {
            return Err(fail(format!(
                "`stopGraceMs` is {ms}, more than the {MAX_STOP_GRACE_MS} it may be (a stop, and \
                 a server's shutdown, wait for it)"
            )));
        }
        Ok(Self {
            name: name.to_owned(),
            program: located.program,
            args: located.args,
            timeout: Duration::from_millis(def.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS)),
            env: def.env,
            cwd: located.cwd,
            max_output_bytes: def.max_output_bytes.unwrap_or(DEFAULT_MAX_OUTPUT_BYTES),
            approval: def.approval,
            stop_grace: def.stop_grace_ms.map_or(STOP_GRACE, Duration::from_millis),
        })
    }

    /// Runs one call outside a thread, where no secrets are known. Never fails: every problem
    /// is an error result naming the activity. The engine uses [`ProcessActivity::run_in`].
    pub async fn run(&self, input: &ActivityInput) -> ToolResult {
        self.run_in(input, &Redactor::default(), None, &AbortSignal::new())
            .await
    }

    /// Runs one call of a thread whose secrets `redactor` knows, with the thread's `state`
    /// offered to the program over its channel (see [`super::channel`]) and `abort` reaching it
    /// (SIGTERM to its process group, SIGKILL after its stop grace). Never fails: every problem
    /// is an error result naming the activity. What the program wrote is quoted in an error
    /// only after the secrets were taken out of it, and cut only after that (the result itself
    /// is redacted by the engine when it is stored).
    pub async fn run_in(
        &self,
        input: &ActivityInput,
        redactor: &Redactor,
        state: Option<&ThreadState>,
        abort: &AbortSignal,
    ) -> ToolResult {
        match self.try_run(input, redactor, state, abort).await {
            Ok(result) => result,
            // The parts quoted from the program are redacted already; the rest (a parse error
            // quoting its output, for example) is redacted here.
            Err(message) => {
                ToolResult::error(redactor.text(&format!("activity {}: {message}", self.name)))
            }
        }
    }

    /// The program as a command: its arguments and folder, only the variables its definition
    /// names, its standard streams piped, in a process group of its own, killed if dropped.
    fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .current_dir(&self.cwd)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        for name in &self.env {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        command
    }

    async fn try_run(
        &self,
        input: &ActivityInput,
        redactor: &Redactor,
        state: Option<&ThreadState>,
        abort: &AbortSignal,
    ) -> Result<ToolResult, String> {
        let payload =
            serde_json::to_vec(input).map_err(|e| format!("the call could not be encoded: {e}"))?;
        let mut command = self.command();
        let channel = match state {
            Some(state) => Some((hand_over_channel(&mut command)?, state.clone())),
            None => None,
        };
        let mut child = command
            .spawn()
            .map_err(|e| format!("could not start {}: {e}", self.program.display()))?;
        // The program has its end now; ours answers it while it runs.
        let served = async move {
            match channel {
                Some((ours, state)) => super::channel::serve(ours, state).await,
                None => std::future::pending().await,
            }
        };
        let pgid = child.id();
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("the program's standard streams could not be opened".to_owned());
        };
        let cap = self.max_output_bytes;
        let work = async move {
            // A program that exits without reading its input is not an error of ours.
            let feed = async move {
                let _ = stdin.write_all(&payload).await;
                let _ = stdin.shutdown().await;
            };
            let (_, out, err, status) = tokio::join!(
                feed,
                read_capped(stdout, cap),
                read_capped(stderr, cap),
                child.wait()
            );
            (out, err, status)
        };
        tokio::pin!(work);
        let serving = async {
            served.await;
            std::future::pending::<()>().await
        };
        let ended = tokio::select! {
            done = tokio::time::timeout(self.timeout, &mut work) => Ended::Done(done),
            () = stop_asked(abort) => Ended::Stopped,
            () = serving => unreachable!("the channel is served until the call ends"),
        };
        let (out, err, status) = match ended {
            Ended::Done(Ok(done)) => done,
            Ended::Done(Err(_)) => {
                if let Some(pgid) = pgid {
                    kill_group(pgid);
                }
                return Err(format!(
                    "timed out after {} ms; its process tree was killed",
                    self.timeout.as_millis()
                ));
            }
            Ended::Stopped => {
                if let Some(pgid) = pgid {
                    terminate_group(pgid);
                }
                let ended = tokio::time::timeout(self.stop_grace, &mut work)
                    .await
                    .is_ok();
                if let Some(pgid) = pgid {
                    kill_group(pgid);
                }
                return Err(format!(
                    "stopped: the run was asked to stop, so the program was sent SIGTERM{}",
                    if ended {
                        ""
                    } else {
                        " and, still running after the grace period, SIGKILL"
                    }
                ));
            }
        };
        // Whatever the program left running in its group goes with it.
        if let Some(pgid) = pgid {
            kill_group(pgid);
        }
        let status = status.map_err(|e| format!("could not wait for the program: {e}"))?;
        result_of(status, &out, &err, redactor, cap)
    }
}

/// How long a program asked to stop (SIGTERM) has before its process group is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// The longest `stopGraceMs` a definition may give: a stop, and a server's shutdown, wait for
/// it.
pub const MAX_STOP_GRACE_MS: u64 = 600_000;

enum Ended<T> {
    Done(Result<T, tokio::time::error::Elapsed>),
    Stopped,
}

/// What a program that ended with `status`, having written `out` and `err`, answered: its
/// `ToolResult`, or why there is none (a failed exit with the end of what it said, output cut at
/// `cap` bytes, output that is not a result).
fn result_of(
    status: std::process::ExitStatus,
    out: &Captured,
    err: &Captured,
    redactor: &Redactor,
    cap: usize,
) -> Result<ToolResult, String> {
    let stderr_tail = quoted_tail(err, redactor, 500);
    if !status.success() {
        use std::os::unix::process::ExitStatusExt;
        let how = match (status.code(), status.signal()) {
            (Some(code), _) => format!("exited with status {code}"),
            (None, Some(sig)) => format!("was killed by signal {sig}"),
            (None, None) => "ended abnormally".to_owned(),
        };
        return Err(if stderr_tail.is_empty() {
            how
        } else {
            format!("{how}: {stderr_tail}")
        });
    }
    if out.cut {
        return Err(format!(
            "its output passed the cap of {cap} bytes and was cut"
        ));
    }
    serde_json::from_slice::<ToolResult>(&out.bytes).map_err(|e| {
        format!(
            "its output is not a ToolResult ({e}); it printed: {}",
            quoted_tail(out, redactor, 200)
        )
    })
}

/// Completes when `abort` asks to interrupt; a graceful stop (a server shutting down) lets the
/// program finish.
async fn stop_asked(abort: &AbortSignal) {
    abort.interrupted().await
}

/// Makes a socket pair, sets the program up to find one end at [`STATE_FD`] (and says so in
/// its environment), and returns the other end.
fn hand_over_channel(command: &mut Command) -> Result<UnixStream, String> {
    let (ours, theirs) = std::os::unix::net::UnixStream::pair()
        .map_err(|e| format!("the ThreadState channel could not be opened: {e}"))?;
    ours.set_nonblocking(true)
        .map_err(|e| format!("the ThreadState channel could not be set up: {e}"))?;
    let ours = UnixStream::from_std(ours)
        .map_err(|e| format!("the ThreadState channel could not be set up: {e}"))?;
    let fd = theirs.as_raw_fd();
    command.env(STATE_FD_VAR, STATE_FD.to_string());
    // SAFETY: between fork and exec only async-signal-safe calls are made (dup2, fcntl), on
    // descriptors this process owns; `theirs` outlives the spawn (it is moved into the closure).
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(move || {
            let theirs = &theirs;
            if fd == STATE_FD {
                // Already in place: only the close-on-exec flag must go.
                if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(theirs.as_raw_fd(), STATE_FD) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(ours)
}
