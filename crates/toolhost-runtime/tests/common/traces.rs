//! What a secret looks like to someone reading a database file byte by byte, and the check that
//! none of it is there.

use base64::Engine as _;
use std::path::{Path, PathBuf};

/// The secret the tests give their threads (24 bytes: long enough for every encoded form).
pub const SECRET: &str = "sk-live-Q7fX9mZ2pL4wR8tY";

/// Every trace of the secret a reader of the file could use: the secret and each 6-byte piece
/// of it, its hex in both cases, its URL-encoding, and the characters of its base64 encoding
/// that depend on its bytes alone, at each offset and in both alphabets.
pub fn traces() -> Vec<(String, Vec<u8>)> {
    let raw = SECRET.as_bytes();
    let mut out = vec![("the secret".to_owned(), raw.to_vec())];
    for piece in raw.windows(6) {
        out.push((
            format!("the piece {:?}", String::from_utf8_lossy(piece)),
            piece.to_vec(),
        ));
    }
    let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    out.push(("hex".into(), hex.clone().into_bytes()));
    out.push(("HEX".into(), hex.to_uppercase().into_bytes()));
    let url: String = raw.iter().map(|b| format!("%{b:02X}")).collect();
    out.push(("URL-encoded".into(), url.into_bytes()));
    for engine in [
        base64::engine::general_purpose::STANDARD_NO_PAD,
        base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ] {
        for offset in 0..3usize {
            let mut stream = vec![0u8; offset];
            stream.extend_from_slice(raw);
            stream.extend_from_slice(&[0, 0]);
            let encoded = engine.encode(&stream).into_bytes();
            let core = &encoded[(8 * offset).div_ceil(6)..8 * (offset + raw.len()) / 6];
            out.push((format!("base64 at offset {offset}"), core.to_vec()));
        }
    }
    out
}

/// Fails when the database file, its write-ahead log or its shared-memory file holds a trace.
pub fn assert_no_trace_in_files(db: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let path = PathBuf::from(format!("{}{suffix}", db.display()));
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        for (what, trace) in traces() {
            assert!(
                !bytes.windows(trace.len()).any(|w| w == trace),
                "{what} is in {}",
                path.display()
            );
        }
    }
}
