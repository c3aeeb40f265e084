//! Printing for the command line: readable by default, JSON for scripts, errors as one sentence
//! plus the cause.
//!
//! Everything printed on standard output goes through [`outln!`], [`out_text`] or [`json`].
//! When the reader of a pipe has gone (`toolhost threads list | head -1`), the command ends at
//! once and quietly, the way `cat` or `git` end: killed by `SIGPIPE`, which a shell shows as
//! status 141 and does not report. Any other failure to write standard output (a full disk)
//! is reported on standard error and exits 1. Standard error itself is best effort: a closed
//! standard error loses the message, never the command.

use std::fmt;
use std::io::{self, Write};
use std::process::ExitCode;

/// Prints one line on standard output, like `println!`, but a closed pipe ends the process
/// quietly instead of panicking (see the module page).
macro_rules! outln {
    () => {
        $crate::cli::output::out_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::cli::output::out_line(format_args!($($arg)*))
    };
}
pub(crate) use outln;

/// Prints one line on standard error, like `eprintln!`, but never fails the command.
macro_rules! errln {
    () => {
        $crate::cli::output::err_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::cli::output::err_line(format_args!($($arg)*))
    };
}
pub(crate) use errln;

/// Writes `args` and a line break on standard output (use [`outln!`]).
pub fn out_line(args: fmt::Arguments<'_>) {
    let mut out = io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.write_all(b"\n")) {
        stdout_failed(&e);
    }
}

/// Writes `text` on standard output as it is and shows it at once (streamed text).
pub fn out_text(text: &str) {
    let mut out = io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        stdout_failed(&e);
    }
}

/// Writes `args` and a line break on standard error (use [`errln!`]); a failure is ignored.
pub fn err_line(args: fmt::Arguments<'_>) {
    let mut err = io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|()| err.write_all(b"\n"));
}

/// Standard output could not be written: a closed pipe ends the process as `SIGPIPE` ends
/// other Unix tools; anything else is reported and exits 1.
fn stdout_failed(e: &io::Error) -> ! {
    if e.kind() == io::ErrorKind::BrokenPipe {
        end_by_sigpipe();
    }
    error("standard output could not be written.", Some(e));
    std::process::exit(i32::from(INVALID))
}

/// Ends the process by `SIGPIPE`, which Rust programs ignore by default; 141 (128 + 13, what a
/// shell shows for it) where there is no such signal.
#[allow(unsafe_code)] // signal and raise, explained at the block
fn end_by_sigpipe() -> ! {
    #[cfg(unix)]
    // SAFETY: restoring the default action of SIGPIPE and raising it in this thread; neither
    // call touches memory, and the default action ends the process.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    std::process::exit(141)
}

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
    outln!("{text}");
}

/// Exits with `code`.
pub fn exit(code: u8) -> ExitCode {
    ExitCode::from(code)
}
