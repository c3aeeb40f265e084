//! What a run is given ([`RunCode`], [`Execute`]) and what it gives back ([`RunResult`]), in
//! the field names of `state.runCode` (camelCase on the wire).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// One run: an ES module's source, the modules it may import, its globals, and which export to
/// call with which arguments. Deserializes from the spec's options shape
/// (`{ imports, globals, execute: { fn, args } }` beside `source`); any other field is refused
/// by name, never dropped (`args` belongs in `execute`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunCode {
    /// The ES module to run (the main module).
    pub source: String,
    /// Modules the code may import, by the exact specifier it imports them with, mapped to their
    /// source text. Any other specifier is refused.
    #[serde(default)]
    pub imports: BTreeMap<String, String>,
    /// JSON values set as properties of the module's global object before it runs.
    #[serde(default)]
    pub globals: Map<String, Value>,
    /// The export to call and its arguments (default: `default` with no arguments).
    #[serde(default)]
    pub execute: Execute,
}

/// Which export of the main module a run calls, and with what (SA-8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Execute {
    /// The export's name; `default` unless said otherwise.
    #[serde(rename = "fn", default = "default_fn")]
    pub fn_name: String,
    /// The JSON arguments it is called with, in order.
    #[serde(default)]
    pub args: Vec<Value>,
}

fn default_fn() -> String {
    "default".to_owned()
}

impl Default for Execute {
    fn default() -> Self {
        Execute {
            fn_name: default_fn(),
            args: Vec::new(),
        }
    }
}

/// The outcome of a run (SA-9): `{status: "success", result, logs, durationMs}` or
/// `{status: "error", error: {name, message, stack}, logs, durationMs}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum RunResult {
    /// The called export returned (or its promise fulfilled) a JSON value.
    Success {
        /// The returned value; `undefined` becomes `null`.
        result: Value,
        /// What the code wrote to `console`, in order.
        logs: Vec<LogEntry>,
        /// Milliseconds from the start of the run to its result.
        #[serde(rename = "durationMs")]
        duration_ms: f64,
    },
    /// The code threw, a promise was rejected and not handled, a limit was hit, the caller
    /// terminated the run, or the result was not JSON.
    Error {
        /// What went wrong.
        error: RunError,
        /// What the code wrote to `console` before it stopped, in order.
        logs: Vec<LogEntry>,
        /// Milliseconds from the start of the run to its result.
        #[serde(rename = "durationMs")]
        duration_ms: f64,
    },
}

impl RunResult {
    /// The same result with its error, if it is one, cut (see [`RunError::cut`]).
    pub(crate) fn with_error_cut(self) -> Self {
        match self {
            RunResult::Error {
                error,
                logs,
                duration_ms,
            } => RunResult::Error {
                error: error.cut(),
                logs,
                duration_ms,
            },
            success => success,
        }
    }

    /// The logs of either outcome.
    pub fn logs(&self) -> &[LogEntry] {
        match self {
            RunResult::Success { logs, .. } | RunResult::Error { logs, .. } => logs,
        }
    }

    /// The error of an error outcome.
    pub fn error(&self) -> Option<&RunError> {
        match self {
            RunResult::Error { error, .. } => Some(error),
            RunResult::Success { .. } => None,
        }
    }

    /// The result of a success outcome.
    pub fn result(&self) -> Option<&Value> {
        match self {
            RunResult::Success { result, .. } => Some(result),
            RunResult::Error { .. } => None,
        }
    }

    /// Milliseconds from the start of the run to its result.
    pub fn duration_ms(&self) -> f64 {
        match self {
            RunResult::Success { duration_ms, .. } | RunResult::Error { duration_ms, .. } => {
                *duration_ms
            }
        }
    }
}

/// Why a run failed. JavaScript errors keep their own `name` (`TypeError`, `SyntaxError`, ...);
/// the sandbox's own stops use the names in [`RunError`]'s constants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunError {
    /// The error's class name.
    pub name: String,
    /// What happened, for a person or a model to act on.
    pub message: String,
    /// The JavaScript stack where it happened, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
}

impl RunError {
    /// The run passed its deadline ([`crate::SandboxLimits::deadline`]).
    pub const DEADLINE: &'static str = "DeadlineError";
    /// The caller terminated the run.
    pub const TERMINATED: &'static str = "TerminatedError";
    /// The run went over its memory cap ([`crate::SandboxLimits::memory_bytes`]).
    pub const MEMORY: &'static str = "MemoryLimitError";
    /// The run went over its stack cap ([`crate::SandboxLimits::max_stack_bytes`]).
    pub const STACK: &'static str = "StackLimitError";
    /// The result was larger than [`crate::SandboxLimits::max_result_bytes`].
    pub const RESULT_SIZE: &'static str = "ResultLimitError";
    /// The result cannot be expressed as JSON.
    pub const NOT_JSON: &'static str = "ResultNotJsonError";
    /// A promise was rejected and nothing handled the rejection.
    pub const UNHANDLED_REJECTION: &'static str = "UnhandledRejectionError";
    /// The called export's promise can never settle (nothing is left to run).
    pub const NEVER_SETTLED: &'static str = "NeverSettledError";
    /// The main module has no callable export of the requested name.
    pub const NO_EXPORT: &'static str = "ExportNotFoundError";
    /// The sandbox itself failed (its thread stopped without a result, or QuickJS could not
    /// start).
    pub const SANDBOX: &'static str = "SandboxError";

    pub(crate) fn new(name: &str, message: impl Into<String>) -> Self {
        RunError {
            name: name.to_owned(),
            message: message.into(),
            stack: None,
        }
    }

    /// The most bytes of an error's name kept.
    pub const MAX_NAME_BYTES: usize = 256;
    /// The most bytes of an error's message, and of its stack, kept.
    pub const MAX_TEXT_BYTES: usize = 64 << 10;

    /// The same error with its name, message and stack cut to [`Self::MAX_NAME_BYTES`] and
    /// [`Self::MAX_TEXT_BYTES`] (marked with `…`): the code chooses them, and an error of
    /// megabytes would travel to the caller, be stored and shown to a model whole.
    pub(crate) fn cut(mut self) -> Self {
        cut_text(&mut self.name, Self::MAX_NAME_BYTES);
        cut_text(&mut self.message, Self::MAX_TEXT_BYTES);
        if let Some(stack) = &mut self.stack {
            cut_text(stack, Self::MAX_TEXT_BYTES);
        }
        self
    }
}

/// Cuts `text` to at most `max` bytes (on a character boundary), marking the cut with `…`.
fn cut_text(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push('…');
}

/// One `console` call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogEntry {
    /// Which `console` method wrote it.
    pub level: LogLevel,
    /// Its arguments, formatted and joined by spaces.
    pub message: String,
}

/// The `console` method of a [`LogEntry`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// `console.log`
    Log,
    /// `console.debug`
    Debug,
    /// `console.info`
    Info,
    /// `console.warn`; also the sandbox's own note that logs were cut.
    Warn,
    /// `console.error`
    Error,
}

impl LogLevel {
    /// The method's name: `log`, `debug`, `info`, `warn` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Log => "log",
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_option_that_is_not_one_is_refused_by_name() {
        let refused =
            serde_json::from_value::<RunCode>(serde_json::json!({"source": "x", "args": [2, 3]}))
                .unwrap_err();
        assert!(
            refused.to_string().contains("unknown field `args`"),
            "{refused}"
        );
        let refused = serde_json::from_value::<RunCode>(
            serde_json::json!({"source": "x", "execute": {"fn": "f", "arg": [1]}}),
        )
        .unwrap_err();
        assert!(
            refused.to_string().contains("unknown field `arg`"),
            "{refused}"
        );
    }
}
