//! What the engine does with a running program's streams and process group: output read to
//! its end under a cap, the quoted tail of it for an error message (redacted first), and
//! signals sent to the whole group.

use crate::variables::Redactor;
use tokio::io::{AsyncRead, AsyncReadExt};

pub(super) struct Captured {
    pub bytes: Vec<u8>,
    pub cut: bool,
}

/// Reads a stream to its end, keeping at most `cap` bytes (the rest is read and dropped, so the
/// program never blocks on a full pipe).
pub(super) async fn read_capped(mut stream: impl AsyncRead + Unpin, cap: usize) -> Captured {
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

/// Kills the process group `pgid` (SIGKILL).
pub(crate) fn kill_group(pgid: u32) {
    signal_group(pgid, libc::SIGKILL);
}

/// Asks the process group `pgid` to end (SIGTERM).
pub(crate) fn terminate_group(pgid: u32) {
    signal_group(pgid, libc::SIGTERM);
}

#[allow(unsafe_code)] // one libc::kill, explained at the call
fn signal_group(pgid: u32, signal: libc::c_int) {
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
        libc::kill(-pgid, signal);
    }
}

/// The last `max` characters of what a program wrote, for an error message: redacted first,
/// cut second. A capture that stopped at its cap loses an end that could begin a secret, which
/// the cap may have cut in two.
pub(super) fn quoted_tail(captured: &Captured, redactor: &Redactor, max: usize) -> String {
    let text = String::from_utf8_lossy(&captured.bytes);
    let text = if captured.cut {
        redactor.whole_part(&text)
    } else {
        &text
    };
    redactor.tail(text.trim(), max)
}
