//! Why an operation a tool asked of its thread (through its [`super::ThreadState`]) was refused
//! or failed. Its text is what the tool is told (a JavaScript tool gets it as a thrown `Error`),
//! in one sentence that names the operation.

use super::AskKind;
use toolhost_store::StoreError;

/// Why a tool's request of its thread did not go through.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// `setEnv` was given a name that is not a variable name.
    #[error(
        "setEnv: {0:?} is not a variable name (letters, digits and _, not starting with a digit)"
    )]
    NotAVariableName(String),
    /// `forceTurn` on a thread with one side.
    #[error("forceTurn needs a dual_ai thread: this thread has one side")]
    OneSide,
    /// `notifyParent` on a thread that is not a sub-agent.
    #[error("notifyParent: thread {0} is not a sub-agent (it has no parent)")]
    NoParent(String),
    /// The store failed while the operation `op` ran.
    #[error("{op}: {source}")]
    Store {
        /// The operation (`notifyParent`, ...).
        op: &'static str,
        /// What the store said.
        source: StoreError,
    },
    /// The project lets tools reach no host at all.
    #[error("fetch is not available to this tool: the project allows no host ([fetch] hosts in toolhost.toml)")]
    NoFetch,
    /// `fetch` was given a URL it cannot take (why, naming the URL).
    #[error("fetch: {0}")]
    BadUrl(String),
    /// `fetch`'s body is not base64.
    #[error("fetch: the body is not base64: {0}")]
    BodyNotBase64(base64::DecodeError),
    /// The project does not let tools reach this host.
    #[error("fetch: {host} is not a host tools may reach; the project allows {allowed}")]
    HostNotAllowed {
        /// The host asked for.
        host: String,
        /// The hosts the project allows, listed (`none` when it allows none).
        allowed: String,
    },
    /// The fetch failed: the request could not be made, got no answer, or not all of it.
    #[error("fetch: {0}")]
    Fetch(#[from] toolhost_providers::fetch::FetchError),
    /// Nobody can answer a question of this kind while this call runs.
    #[error("{}", nobody_answers(*.0))]
    NobodyAnswers(AskKind),
    /// The call was stopped while it waited for an answer.
    #[error("the call was stopped while it waited for the answer")]
    StoppedWhileAsking,
    /// Whoever was asked refused or failed, in their words.
    #[error("{0}")]
    NotAnswered(String),
}

/// Why nobody can answer `kind` while a call runs, in one sentence.
fn nobody_answers(kind: AskKind) -> &'static str {
    match kind {
        AskKind::Elicit => "no person can be asked while this call runs: a tool asks a person only in a call an MCP client made, whose client can answer elicitation",
        AskKind::Sample => "no model can be asked while this call runs: a tool asks for a completion only in a call an MCP client made, whose client can answer sampling",
        AskKind::Roots => "no caller's roots can be asked for while this call runs: a tool asks for them only in a call an MCP client made, whose client declared roots",
    }
}
