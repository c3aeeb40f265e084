//! What the engine does with a running program's streams: output read to its end under a cap,
//! and the quoted tail of it for an error message (redacted first).

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
