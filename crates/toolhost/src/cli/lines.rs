//! Reading one line of standard input (a message, a secret) under a size cap, so that a stream
//! without line breaks (`< /dev/zero`) ends in an error instead of filling memory.

use std::fmt;
use std::io::{self, BufRead, Read as _};

/// The longest line read from standard input, in bytes (without its line break).
pub const MAX_LINE_BYTES: u64 = 1024 * 1024;

/// Why a line could not be read.
#[derive(Debug)]
pub enum LineError {
    /// The line is longer than the cap.
    TooLong(u64),
    /// The line is not UTF-8 text.
    NotText,
    /// Reading failed.
    Io(io::Error),
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLong(cap) => write!(f, "the line is longer than {cap} bytes, the limit"),
            Self::NotText => f.write_str("the line is not UTF-8 text"),
            Self::Io(e) => write!(f, "{e}"),
        }
    }
}

/// Reads one line of at most `cap` bytes, without its line break; `None` at the end of input.
pub fn read_line(reader: &mut impl BufRead, cap: u64) -> Result<Option<String>, LineError> {
    let mut bytes = Vec::new();
    // Two bytes more than the cap leave room for the line break (`\r\n`) of a line of `cap`.
    let read = reader
        .take(cap.saturating_add(2))
        .read_until(b'\n', &mut bytes)
        .map_err(LineError::Io)?;
    if read == 0 {
        return Ok(None);
    }
    if bytes.last() == Some(&b'\n') {
        bytes.pop();
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
    }
    if bytes.len() as u64 > cap {
        return Err(LineError::TooLong(cap));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| LineError::NotText)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_up_to_the_cap_and_no_further() {
        let mut input = io::Cursor::new(b"abcd\r\nabcde\nxy".to_vec());
        assert_eq!(read_line(&mut input, 4).unwrap().as_deref(), Some("abcd"));
        assert!(matches!(
            read_line(&mut input, 4),
            Err(LineError::TooLong(4))
        ));
        let mut input = io::Cursor::new(b"xy".to_vec());
        assert_eq!(read_line(&mut input, 4).unwrap().as_deref(), Some("xy"));
        assert!(read_line(&mut input, 4).unwrap().is_none());
    }
}
