//! Why the engine could not do what it was asked, and the wording of names and owners in
//! its messages.

use super::ownership::owner_process;
use crate::project::{FileProblem, ProjectError};
use toolhost_providers::ModelError;
use toolhost_store::StoreError;

/// Why the engine could not do what it was asked. Tool failures are never among these: they
/// become error results the model sees.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The project could not be read.
    #[error(transparent)]
    Project(#[from] ProjectError),
    /// No agent has this name.
    #[error(
        "there is no agent named \"{name}\" in agents/agents/ (the agents there: {})",
        name_list(known)
    )]
    UnknownAgent {
        /// The name asked for.
        name: String,
        /// The agents the project has, sorted.
        known: Vec<String>,
    },
    /// A model definition cannot be used.
    #[error("model \"{name}\": {reason}")]
    Model {
        /// The model definition.
        name: String,
        /// Why.
        reason: String,
    },
    /// Definitions the agent reaches are missing or did not load; nothing was run or stored.
    #[error("agent \"{agent}\" cannot run: {}", describe_problems(problems))]
    Unsound {
        /// The agent.
        agent: String,
        /// Each file and what is wrong with it.
        problems: Vec<FileProblem>,
    },
    /// Variables the agent or its prompts require have no value.
    #[error("agent \"{agent}\" needs values for {}: give them when the thread is created", names.join(", "))]
    MissingVariables {
        /// The agent.
        agent: String,
        /// The missing variables (names only).
        names: Vec<String>,
    },
    /// Values were given for variables no definition of the project declares (a typo, or a
    /// name no tool reads); nothing was stored.
    #[error("no tool, prompt or agent of this project declares {}; it declares {}", quoted(names), if declared.is_empty() { "no variables".to_owned() } else { quoted(declared) })]
    UndeclaredVariables {
        /// The names given that nothing declares (cut to 80 characters each when shown).
        names: Vec<String>,
        /// The names the project declares.
        declared: Vec<String>,
    },
    /// A secret could not be sealed or opened.
    #[error(transparent)]
    Secret(#[from] crate::variables::secrets::SecretError),
    /// The model failed to answer.
    #[error("the model failed: {0}")]
    ModelFailed(#[from] ModelError),
    /// Every answer the model gave within its attempt bound was malformed (see AN-8); none was
    /// stored and none of their calls ran.
    #[error("model {model} answered with malformed output {attempts} time(s) in a row, so the run stopped and the thread is marked failed: {reason}")]
    MalformedAnswer {
        /// The model.
        model: String,
        /// How many answers were refused.
        attempts: u32,
        /// What was wrong with the last one.
        reason: String,
    },
    /// Middleware raised an error (spec 003: middleware errors surface as run errors): the run
    /// stopped and the thread is marked failed. The message is redacted of the thread's
    /// secrets.
    #[error("middleware failed in {stage}{}: {message}; the run stopped and the thread is marked failed", tool.as_ref().map(|t| format!(" for tool \"{t}\"")).unwrap_or_default())]
    Middleware {
        /// The callback that failed (`completion_request`, `tool_input`, ...).
        stage: &'static str,
        /// The tool, for tool middleware.
        tool: Option<String>,
        /// What it said.
        message: String,
    },
    /// Evaluating a tool's approval policy raised an error (its `when`, `reason` or
    /// `rejectMessage`): the run stopped and the thread is marked failed. The message is
    /// redacted of the thread's secrets.
    #[error("the approval policy of tool \"{tool}\" failed in its {part}: {message}; the run stopped and the thread is marked failed")]
    ApprovalPolicy {
        /// The tool.
        tool: String,
        /// `when`, `reason` or `rejectMessage`.
        part: &'static str,
        /// What it said.
        message: String,
    },
    /// A hook before a call cancelled the run (catalogue AN-11): the call did not run, and the
    /// thread can be resumed.
    #[error("a hook cancelled the run at a call of tool \"{tool}\": {reason}")]
    Cancelled {
        /// The tool.
        tool: String,
        /// The hook's reason.
        reason: String,
    },
    /// A hook after a failed call ended the run (catalogue AN-13); the failure is stored as the
    /// call's result and the thread is marked failed.
    #[error("a hook ended the run after a call of tool \"{tool}\" failed: {reason}")]
    EndedByHook {
        /// The tool.
        tool: String,
        /// The hook's reason.
        reason: String,
    },
    /// Another run owns the thread; nothing of it was read or changed. What was given with the
    /// request (a queued message, a decision, variables) is stored and the owner picks it up.
    #[error("thread {thread} is running elsewhere: {}", describe_owner(lease))]
    ThreadBusy {
        /// The thread.
        thread: String,
        /// Who owns it.
        lease: toolhost_store::Lease,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Names as a reader wants them in an error: sorted, comma-separated, or "none".
pub fn name_list<S: AsRef<str>>(names: &[S]) -> String {
    let mut names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
    names.sort_unstable();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

/// "run R (process P on host H) since T", for the messages people read.
pub fn describe_owner(lease: &toolhost_store::Lease) -> String {
    let since = toolhost_store::display_millis(lease.since);
    let who = match owner_process(&lease.owner) {
        Some((place, pid)) => {
            let host = place.split('/').next().unwrap_or(place);
            format!("run {} (process {pid} on host {host})", lease.owner)
        }
        None => format!("run {}", lease.owner),
    };
    if lease.expires_at <= toolhost_store::now_millis() {
        let expired = toolhost_store::display_millis(lease.expires_at);
        return format!("{who} owned it since {since}; its lease expired at {expired}, so the next run takes it over");
    }
    format!("{who} owns it since {since}")
}

/// Names as a person reads them in an error: quoted, each cut to 80 characters, at most ten.
fn quoted(names: &[String]) -> String {
    let mut shown: Vec<String> = names
        .iter()
        .take(10)
        .map(|n| match n.char_indices().nth(80) {
            Some((cut, _)) => format!("\"{}…\"", &n[..cut]),
            None => format!("\"{n}\""),
        })
        .collect();
    if names.len() > 10 {
        shown.push(format!("and {} more", names.len() - 10));
    }
    shown.join(", ")
}

/// One line per problem, for the error people read.
fn describe_problems(problems: &[FileProblem]) -> String {
    let lines: Vec<String> = problems.iter().map(|p| format!("\n  {p}")).collect();
    format!("its definitions are not sound:{}", lines.concat())
}
