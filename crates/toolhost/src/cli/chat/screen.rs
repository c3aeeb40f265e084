//! Writing the conversation to standard output: streamed text may stop mid-line, so whatever
//! prints a whole line first ends the line in progress.

use crate::cli::output::out_text;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the last thing written left the cursor mid-line.
static MID_LINE: AtomicBool = AtomicBool::new(false);

/// Writes streamed text as it is, at once.
pub(super) fn text(text: &str) {
    if text.is_empty() {
        return;
    }
    out_text(text);
    MID_LINE.store(!text.ends_with('\n'), Ordering::Relaxed);
}

/// Writes one whole line, on a line of its own.
pub(super) fn line(text: &str) {
    end_line();
    out_text(&format!("{text}\n"));
}

/// Ends the line in progress, if any.
pub(super) fn end_line() {
    if MID_LINE.swap(false, Ordering::Relaxed) {
        out_text("\n");
    }
}

/// The terminal echoed `^C` where the cursor was: what follows starts on a new line.
pub(super) fn after_interrupt() {
    MID_LINE.store(true, Ordering::Relaxed);
}
