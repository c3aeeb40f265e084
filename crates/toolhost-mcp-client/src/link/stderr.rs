//! What a server writes to standard error: read to its end, its last lines kept.

use super::{lock, STDERR_LINES_KEPT};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

/// The longest line of standard error kept, in bytes.
const STDERR_LINE_BYTES: usize = 500;

/// Reads a server's stderr to its end as bytes, keeping its last lines (as text, invalid
/// UTF-8 replaced): whatever the server writes, the pipe stays open until it closes it, so the
/// server never fails on a write to it. A line longer than is kept is read through and cut.
pub(super) async fn read_stderr(
    stderr: impl tokio::io::AsyncRead + Unpin,
    kept: Arc<Mutex<VecDeque<String>>>,
) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        // At most one byte past the kept length is held; the rest of a long line is skipped.
        match (&mut reader)
            .take(STDERR_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.last() != Some(&b'\n') && line.len() > STDERR_LINE_BYTES {
            let mut rest = Vec::new();
            loop {
                rest.clear();
                match (&mut reader)
                    .take(64 << 10)
                    .read_until(b'\n', &mut rest)
                    .await
                {
                    Ok(0) | Err(_) => break,
                    Ok(_) if rest.last() == Some(&b'\n') => break,
                    Ok(_) => {}
                }
            }
        }
        while matches!(line.last(), Some(b'\n' | b'\r')) {
            line.pop();
        }
        push_line(&kept, String::from_utf8_lossy(&line).into_owned());
    }
}

pub(crate) fn push_line(kept: &Mutex<VecDeque<String>>, mut line: String) {
    if line.len() > STDERR_LINE_BYTES {
        let mut end = STDERR_LINE_BYTES;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        line.truncate(end);
        line.push('…');
    }
    let mut kept = lock(kept);
    if kept.len() == STDERR_LINES_KEPT {
        kept.pop_front();
    }
    kept.push_back(line);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stderr_is_read_to_its_end_whatever_its_bytes() {
        let kept = Arc::new(Mutex::new(VecDeque::new()));
        let mut bytes = b"first\n\xff\xfe not text\n".to_vec();
        bytes.extend_from_slice(&vec![b'x'; 100_000]);
        bytes.extend_from_slice(b"\nlast words\n");
        read_stderr(&bytes[..], kept.clone()).await;
        let kept: Vec<String> = lock(&kept).iter().cloned().collect();
        assert_eq!(kept.len(), 4, "{kept:?}");
        assert_eq!(kept[0], "first");
        assert_eq!(kept[1], "\u{fffd}\u{fffd} not text");
        assert!(kept[2].starts_with("xxx") && kept[2].ends_with('…'));
        assert!(kept[2].len() <= STDERR_LINE_BYTES + '…'.len_utf8());
        assert_eq!(kept[3], "last words");
    }
}
