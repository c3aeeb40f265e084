//! The thread file system: folders and chunked files.

use super::conn::{col, Conn};
use crate::error::{StoreError, StoreResult};
use crate::model::{FileStat, GrepMatch, Millis};
use crate::path::FsPath;
use crate::{search, CHUNK_SIZE};
use postgres::Row;

const STAT_COLUMNS: &str = "path, is_folder, size, mime_type, modified_at";

fn stat_row(row: &Row) -> StoreResult<FileStat> {
    let size: i64 = col(row, 2)?;
    Ok(FileStat {
        path: col(row, 0)?,
        is_folder: col(row, 1)?,
        size: u64::try_from(size).unwrap_or(0),
        mime_type: col(row, 3)?,
        modified_at: col(row, 4)?,
    })
}

fn root_stat() -> FileStat {
    FileStat {
        path: "/".to_owned(),
        is_folder: true,
        size: 0,
        mime_type: None,
        modified_at: 0,
    }
}

pub(super) fn stat(conn: &mut Conn, thread: &str, path: &FsPath) -> StoreResult<Option<FileStat>> {
    if path.is_root() {
        return Ok(Some(root_stat()));
    }
    conn.opt(
        &format!("SELECT {STAT_COLUMNS} FROM files WHERE thread = $1 AND path = $2"),
        &[&thread, &path.as_str()],
    )?
    .map(|row| stat_row(&row))
    .transpose()
}

/// Creates the folders above `path` that are missing; fails if one of them is a file.
fn ensure_parents(conn: &mut Conn, thread: &str, path: &FsPath, now: Millis) -> StoreResult<()> {
    for dir in path.ancestors() {
        make_folder(conn, thread, &dir, now)?;
    }
    Ok(())
}

fn make_folder(conn: &mut Conn, thread: &str, dir: &FsPath, now: Millis) -> StoreResult<()> {
    match stat(conn, thread, dir)? {
        Some(s) if s.is_folder => Ok(()),
        Some(_) => Err(StoreError::NotAFolder(dir.to_string())),
        None => {
            conn.exec(
                "INSERT INTO files (thread, path, parent, is_folder, size, modified_at)
                 VALUES ($1, $2, $3, true, 0, $4)",
                &[&thread, &dir.as_str(), &dir.parent().as_str(), &now],
            )?;
            Ok(())
        }
    }
}

pub(super) fn write(
    conn: &mut Conn,
    thread: &str,
    path: &FsPath,
    bytes: &[u8],
    mime_type: Option<&str>,
    message_id: Option<&str>,
    now: Millis,
) -> StoreResult<()> {
    if path.is_root() {
        return Err(StoreError::Root);
    }
    ensure_parents(conn, thread, path, now)?;
    if stat(conn, thread, path)?.is_some_and(|s| s.is_folder) {
        return Err(StoreError::IsAFolder(path.to_string()));
    }
    conn.exec(
        "DELETE FROM file_chunks WHERE thread = $1 AND path = $2",
        &[&thread, &path.as_str()],
    )?;
    for (idx, chunk) in bytes.chunks(CHUNK_SIZE).enumerate() {
        conn.exec(
            "INSERT INTO file_chunks (thread, path, idx, bytes) VALUES ($1, $2, $3, $4)",
            &[&thread, &path.as_str(), &(idx as i64), &chunk],
        )?;
    }
    conn.exec(
        "INSERT INTO files (thread, path, parent, is_folder, size, mime_type, message_id, modified_at)
         VALUES ($1, $2, $3, false, $4, $5, $6, $7)
         ON CONFLICT (thread, path) DO UPDATE SET size = excluded.size,
             mime_type = excluded.mime_type, message_id = excluded.message_id,
             modified_at = excluded.modified_at",
        &[
            &thread,
            &path.as_str(),
            &path.parent().as_str(),
            &(bytes.len() as i64),
            &mime_type,
            &message_id,
            &now,
        ],
    )?;
    Ok(())
}

fn require_file(conn: &mut Conn, thread: &str, path: &FsPath) -> StoreResult<FileStat> {
    match stat(conn, thread, path)? {
        None => Err(StoreError::FileNotFound(path.to_string())),
        Some(s) if s.is_folder => Err(StoreError::IsAFolder(path.to_string())),
        Some(s) => Ok(s),
    }
}

pub(super) fn unlink(conn: &mut Conn, thread: &str, path: &FsPath) -> StoreResult<()> {
    require_file(conn, thread, path)?;
    conn.exec(
        "DELETE FROM file_chunks WHERE thread = $1 AND path = $2",
        &[&thread, &path.as_str()],
    )?;
    conn.exec(
        "DELETE FROM files WHERE thread = $1 AND path = $2",
        &[&thread, &path.as_str()],
    )?;
    Ok(())
}

pub(super) fn mkdir(conn: &mut Conn, thread: &str, path: &FsPath, now: Millis) -> StoreResult<()> {
    if path.is_root() {
        return Ok(());
    }
    ensure_parents(conn, thread, path, now)?;
    make_folder(conn, thread, path, now)
}

pub(super) fn rmdir(conn: &mut Conn, thread: &str, path: &FsPath) -> StoreResult<()> {
    if path.is_root() {
        return Err(StoreError::Root);
    }
    match stat(conn, thread, path)? {
        None => return Err(StoreError::FileNotFound(path.to_string())),
        Some(s) if !s.is_folder => return Err(StoreError::NotAFolder(path.to_string())),
        Some(_) => {}
    }
    let children: i64 = col(
        &conn.one(
            "SELECT COUNT(*) FROM files WHERE thread = $1 AND parent = $2",
            &[&thread, &path.as_str()],
        )?,
        0,
    )?;
    if children > 0 {
        return Err(StoreError::FolderNotEmpty(path.to_string()));
    }
    conn.exec(
        "DELETE FROM files WHERE thread = $1 AND path = $2",
        &[&thread, &path.as_str()],
    )?;
    Ok(())
}

/// Streams a file's chunks in order, within the caller's snapshot; the sizes are checked
/// against the entry. Chunks are fetched one at a time, so a large file is never held whole.
pub(super) fn stream(
    conn: &mut Conn,
    thread: &str,
    path: &FsPath,
    sink: &mut dyn FnMut(&[u8]),
) -> StoreResult<FileStat> {
    let stat = require_file(conn, thread, path)?;
    let mut total = 0u64;
    let mut index = 0i64;
    while let Some(row) = conn.opt(
        "SELECT bytes FROM file_chunks WHERE thread = $1 AND path = $2 AND idx = $3",
        &[&thread, &path.as_str(), &index],
    )? {
        let bytes: &[u8] = col(&row, 0)?;
        total += bytes.len() as u64;
        sink(bytes);
        index += 1;
    }
    if total != stat.size {
        return Err(super::corrupt(format!(
            "{path}: {total} bytes stored, {} expected",
            stat.size
        )));
    }
    Ok(stat)
}

/// A file's stat and its chunk `index`, if it has one.
pub(super) fn chunk(
    conn: &mut Conn,
    thread: &str,
    path: &FsPath,
    index: u64,
) -> StoreResult<(FileStat, Option<Vec<u8>>)> {
    let stat = require_file(conn, thread, path)?;
    let Ok(index) = i64::try_from(index) else {
        return Ok((stat, None));
    };
    let bytes = conn
        .opt(
            "SELECT bytes FROM file_chunks WHERE thread = $1 AND path = $2 AND idx = $3",
            &[&thread, &path.as_str(), &index],
        )?
        .map(|row| col::<Vec<u8>>(&row, 0))
        .transpose()?;
    Ok((stat, bytes))
}

pub(super) fn readdir(conn: &mut Conn, thread: &str, path: &FsPath) -> StoreResult<Vec<FileStat>> {
    match stat(conn, thread, path)? {
        None => return Err(StoreError::FileNotFound(path.to_string())),
        Some(s) if !s.is_folder => return Err(StoreError::NotAFolder(path.to_string())),
        Some(_) => {}
    }
    conn.rows(
        &format!(
            "SELECT {STAT_COLUMNS} FROM files WHERE thread = $1 AND parent = $2 AND path <> '/'
             ORDER BY path COLLATE \"C\""
        ),
        &[&thread, &path.as_str()],
    )?
    .iter()
    .map(stat_row)
    .collect()
}

fn under(conn: &mut Conn, thread: &str, dir: &FsPath) -> StoreResult<Vec<FileStat>> {
    let all = conn.rows(
        &format!("SELECT {STAT_COLUMNS} FROM files WHERE thread = $1 ORDER BY path COLLATE \"C\""),
        &[&thread],
    )?;
    let mut found = Vec::new();
    for row in &all {
        let entry = stat_row(row)?;
        if search::strictly_under(&entry, dir) {
            found.push(entry);
        }
    }
    Ok(found)
}

pub(super) fn find(
    conn: &mut Conn,
    thread: &str,
    dir: &FsPath,
    pattern: &str,
) -> StoreResult<Vec<FileStat>> {
    Ok(under(conn, thread, dir)?
        .into_iter()
        .filter(|s| search::name_matches(s, pattern))
        .collect())
}

pub(super) fn grep(
    conn: &mut Conn,
    thread: &str,
    dir: &FsPath,
    needle: &str,
    limit: usize,
) -> StoreResult<Vec<GrepMatch>> {
    let mut out = Vec::new();
    for entry in under(conn, thread, dir)? {
        if !search::worth_reading(&entry, out.len(), limit) {
            continue;
        }
        let path = crate::path::normalize(&entry.path)?;
        let mut bytes = Vec::new();
        stream(conn, thread, &path, &mut |c| bytes.extend_from_slice(c))?;
        search::grep_file(&entry.path, bytes, needle, limit, &mut out);
    }
    Ok(out)
}
