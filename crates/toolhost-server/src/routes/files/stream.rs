//! A stored file as a response body, chunk by chunk.
//!
//! Each chunk (at most [`CHUNK_SIZE`] bytes) is read on its own, with the file's stat, in a
//! short read ([`Store::file_chunk`]), when the client is ready for it: a download holds no
//! store connection between chunks and about one chunk of memory, however slowly its client
//! reads and whatever the file's size, and a range starts at the chunk that holds its first
//! byte.
//!
//! The headers are written from a `stat` made before the first read. Every chunk's stat must
//! still describe that file; if the file changed in between, or a read failed, the body ends in
//! an error, so a client sees a broken transfer, never a complete-looking one.

use axum::body::{Body, Bytes};
use futures_util::stream;
use std::ops::Range;
use toolhost_store::path::FsPath;
use toolhost_store::{AsyncStore, FileStat, CHUNK_SIZE};

type Piece = Result<Bytes, std::io::Error>;

/// Where a download is.
struct Download {
    db: AsyncStore,
    thread: String,
    path: FsPath,
    expected: FileStat,
    range: Range<u64>,
    /// The next chunk to read.
    index: u64,
    done: bool,
}

/// The bytes `range` of the file at `path` of `thread`, which `expected` describes.
pub(super) fn body(
    db: AsyncStore,
    thread: String,
    path: FsPath,
    expected: FileStat,
    range: Range<u64>,
) -> Body {
    let download = Download {
        index: range.start / CHUNK_SIZE as u64,
        done: range.is_empty(),
        db,
        thread,
        path,
        expected,
        range,
    };
    Body::from_stream(stream::unfold(download, |mut d| async move {
        let piece = d.next().await?;
        Some((piece, d))
    }))
}

impl Download {
    async fn next(&mut self) -> Option<Piece> {
        if self.done {
            return None;
        }
        let (thread, path, index) = (self.thread.clone(), self.path.clone(), self.index);
        let read = self
            .db
            .run_blocking(move |s| s.file_chunk(&thread, &path, index))
            .await;
        let fail = |done: &mut bool, why: String| {
            *done = true;
            Some(Err(std::io::Error::other(why)))
        };
        let bytes = match read {
            Ok((stat, _)) if !same_file(&stat, &self.expected) => {
                return fail(
                    &mut self.done,
                    format!("{} changed while it was being sent", self.path),
                )
            }
            Ok((_, Some(bytes))) => bytes,
            Ok((_, None)) => {
                return fail(
                    &mut self.done,
                    format!("{} ended before its stored size", self.path),
                )
            }
            Err(e) => {
                tracing::warn!(thread = %self.thread, path = %self.path, error = %e, "a download failed");
                return fail(&mut self.done, e.to_string());
            }
        };
        let start = index * CHUNK_SIZE as u64;
        let end = start + bytes.len() as u64;
        let (from, to) = (self.range.start.max(start), self.range.end.min(end));
        self.index += 1;
        self.done = end >= self.range.end;
        if from >= to {
            return fail(
                &mut self.done,
                format!("{} is not stored in whole chunks", self.path),
            );
        }
        Some(Ok(Bytes::copy_from_slice(
            &bytes[(from - start) as usize..(to - start) as usize],
        )))
    }
}

/// Whether two stats describe the same version of a file.
fn same_file(a: &FileStat, b: &FileStat) -> bool {
    a.size == b.size && a.modified_at == b.modified_at && a.mime_type == b.mime_type
}
