//! A stored file as a response body, chunk by chunk.
//!
//! The store reads a file chunk by chunk from one snapshot ([`Store::stream_file`]) on a
//! blocking thread; each chunk (at most [`toolhost_store::CHUNK_SIZE`] bytes) is cut to the
//! range asked for and handed to the body through a channel of one, so a download holds about
//! two chunks in memory, whatever the file's size. The read holds one of the store's read
//! connections until the file is sent, so a client that takes longer than [`SLOW_READER`] to
//! take one chunk is dropped rather than waited for.
//!
//! The headers are written from a `stat` made before the read. The last piece is held back
//! until the read has ended and its snapshot is known to be the file those headers describe;
//! if the file changed in between, or the read failed, the body ends in an error, so a client
//! sees a broken transfer, never a complete-looking one.

use axum::body::{Body, Bytes};
use futures_util::stream;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use toolhost_store::path::FsPath;
use toolhost_store::{FileStat, Store};

/// How long a download waits for its client to take the next chunk.
const SLOW_READER: Duration = Duration::from_secs(30);

type Piece = Result<Bytes, std::io::Error>;

/// The bytes `range` of the file at `path` of `thread`, which `expected` describes.
pub(super) fn body(
    store: Arc<dyn Store>,
    thread: String,
    path: FsPath,
    expected: FileStat,
    range: Range<u64>,
) -> Body {
    let (pieces, taken) = mpsc::channel::<Piece>(1);
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let send = |piece: Piece| -> bool {
            runtime
                .block_on(tokio::time::timeout(SLOW_READER, pieces.send(piece)))
                .is_ok_and(|sent| sent.is_ok())
        };
        let mut offset = 0u64;
        let mut held: Option<Bytes> = None;
        let mut gone = false;
        let read = store.stream_file(&thread, &path, &mut |chunk: &[u8]| {
            let start = offset;
            offset += chunk.len() as u64;
            let (from, to) = (range.start.max(start), range.end.min(offset));
            if gone || from >= to {
                return;
            }
            let piece =
                Bytes::copy_from_slice(&chunk[(from - start) as usize..(to - start) as usize]);
            if let Some(previous) = held.replace(piece) {
                gone = !send(Ok(previous));
            }
        });
        if gone {
            return;
        }
        let last = match read {
            Ok(read) if same_file(&read, &expected) => held.map(Ok),
            Ok(_) => Some(Err(std::io::Error::other(format!(
                "{path} changed while it was being sent"
            )))),
            Err(e) => {
                tracing::warn!(%thread, %path, error = %e, "a download failed");
                Some(Err(std::io::Error::other(e.to_string())))
            }
        };
        if let Some(last) = last {
            send(last);
        }
    });
    Body::from_stream(stream::unfold(taken, |mut taken| async move {
        taken.recv().await.map(|piece| (piece, taken))
    }))
}

/// Whether two stats describe the same version of a file.
fn same_file(a: &FileStat, b: &FileStat) -> bool {
    a.size == b.size && a.modified_at == b.modified_at && a.mime_type == b.mime_type
}
