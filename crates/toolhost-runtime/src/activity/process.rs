//! Process activities: a program run once per call, JSON in on standard input, a `ToolResult`
//! out on standard output.
//!
//! A definition (`agents/activities/NAME.json`):
//! ```json
//! {"command": ["python3", "activities/weather.py"], "timeoutMs": 10000,
//!  "env": ["PATH", "WEATHER_URL"], "cwd": "."}
//! ```
//! `command` is the program and its arguments as a list, never a shell string. `env` names the
//! variables of toolhost's own environment the program may see; it sees no others. `cwd` is a
//! folder inside the project. The program starts in its own process group so that a timeout
//! kills everything it started.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::{Component, Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use toolhost_core::ToolResult;

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

/// What a program receives on standard input for one call.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
        let Some((program, args)) = def.command.split_first() else {
            return Err(fail(
                "`command` must list the program and its arguments".to_owned(),
            ));
        };
        if program.trim().is_empty() {
            return Err(fail(
                "`command` starts with an empty program name".to_owned(),
            ));
        }
        let cwd_rel = def.cwd.as_deref().unwrap_or(".");
        let cwd_path = Path::new(cwd_rel);
        if cwd_path.is_absolute()
            || cwd_path
                .components()
                .any(|c| matches!(c, Component::ParentDir))
        {
            return Err(fail(format!(
                "`cwd` {cwd_rel:?} must be a folder inside the project"
            )));
        }
        let program_path = Path::new(program);
        // A bare name is looked up on PATH; a path with a separator is relative to the project.
        let program = if program_path.components().count() > 1 && !program_path.is_absolute() {
            project.join(program_path)
        } else {
            program_path.to_owned()
        };
        if def.timeout_ms == Some(0) {
            return Err(fail("`timeoutMs` must be greater than 0".to_owned()));
        }
        Ok(Self {
            name: name.to_owned(),
            program,
            args: args.to_vec(),
            timeout: Duration::from_millis(def.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS)),
            env: def.env,
            cwd: project.join(cwd_path),
            max_output_bytes: def.max_output_bytes.unwrap_or(DEFAULT_MAX_OUTPUT_BYTES),
            approval: def.approval,
        })
    }

    /// Runs one call. Never fails: every problem is an error result naming the activity.
    pub async fn run(&self, input: &ActivityInput) -> ToolResult {
        match self.try_run(input).await {
            Ok(result) => result,
            Err(message) => ToolResult::error(format!("activity {}: {message}", self.name)),
        }
    }

    async fn try_run(&self, input: &ActivityInput) -> Result<ToolResult, String> {
        let payload =
            serde_json::to_vec(input).map_err(|e| format!("the call could not be encoded: {e}"))?;
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
        let mut child = command
            .spawn()
            .map_err(|e| format!("could not start {}: {e}", self.program.display()))?;
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
        let (out, err, status) = match tokio::time::timeout(self.timeout, work).await {
            Ok(done) => done,
            Err(_) => {
                if let Some(pgid) = pgid {
                    kill_group(pgid);
                }
                return Err(format!(
                    "timed out after {} ms; its process tree was killed",
                    self.timeout.as_millis()
                ));
            }
        };
        // Whatever the program left running in its group goes with it.
        if let Some(pgid) = pgid {
            kill_group(pgid);
        }
        let status = status.map_err(|e| format!("could not wait for the program: {e}"))?;
        let stderr_tail = tail(&String::from_utf8_lossy(&err.bytes), 500);
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
                tail(&String::from_utf8_lossy(&out.bytes), 200)
            )
        })
    }
}

struct Captured {
    bytes: Vec<u8>,
    cut: bool,
}

/// Reads a stream to its end, keeping at most `cap` bytes (the rest is read and dropped, so the
/// program never blocks on a full pipe).
async fn read_capped(mut stream: impl AsyncRead + Unpin, cap: usize) -> Captured {
    let mut bytes = Vec::new();
    let mut cut = false;
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = cap.saturating_sub(bytes.len());
                if n > room {
                    cut = true;
                }
                bytes.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    Captured { bytes, cut }
}

#[allow(unsafe_code)] // one libc::kill, explained at the call
fn kill_group(pgid: u32) {
    // A group id that does not fit a pid_t is not one this process started; negating a wrapped
    // value would signal some other process instead.
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill(2) with a negative pid signals the process group; it touches no memory.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

fn tail(text: &str, max: usize) -> String {
    let text = text.trim();
    let count = text.chars().count();
    if count <= max {
        text.to_owned()
    } else {
        let skip = count - max;
        format!("…{}", text.chars().skip(skip).collect::<String>())
    }
}
