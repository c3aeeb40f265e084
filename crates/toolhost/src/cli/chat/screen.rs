//! Writing the conversation to standard output: streamed text may stop mid-line, so whatever
//! prints a whole line first ends the line in progress.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the last thing written left the cursor mid-line.
static MID_LINE: AtomicBool = AtomicBool::new(false);

/// Writes streamed text as it is, at once.
pub(super) fn text(text: &str) {
    if text.is_empty() {
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    MID_LINE.store(!text.ends_with('\n'), Ordering::Relaxed);
}

/// Writes one whole line, on a line of its own.
pub(super) fn line(text: &str) {
    end_line();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

/// Ends the line in progress, if any.
pub(super) fn end_line() {
    if MID_LINE.swap(false, Ordering::Relaxed) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out);
        let _ = out.flush();
    }
}

/// The terminal echoed `^C` where the cursor was: what follows starts on a new line.
pub(super) fn after_interrupt() {
    MID_LINE.store(true, Ordering::Relaxed);
}
