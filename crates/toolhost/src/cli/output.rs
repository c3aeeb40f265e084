//! Printing for the command line: readable by default, JSON for scripts, errors as one sentence
//! plus the cause.

use std::io::Write;
use std::process::ExitCode;

/// Exit code for "checked and found invalid".
pub const INVALID: u8 = 1;
/// Exit code for a bad file, an unknown name or a usage error.
pub const BAD_INPUT: u8 = 2;
/// Exit code for a run that paused, waiting for a person.
pub const PAUSED: u8 = 3;
/// Exit code for a thread that another run owns: nothing of it was run here.
pub const BUSY: u8 = 4;

/// Prints an error as one sentence and its cause on standard error.
pub fn error(sentence: &str, cause: Option<&dyn std::fmt::Display>) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "error: {sentence}");
    if let Some(cause) = cause {
        let _ = writeln!(err, "  cause: {cause}");
    }
}

/// Prints a warning or note on standard error.
pub fn note(kind: &str, text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{kind}: {text}");
}

/// Prints a JSON value, pretty, on standard output.
pub fn json(value: &serde_json::Value) {
    let text =
        serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("\"unprintable: {e}\""));
    let _ = writeln!(std::io::stdout().lock(), "{text}");
}

/// Exits with `code`.
pub fn exit(code: u8) -> ExitCode {
    ExitCode::from(code)
}
