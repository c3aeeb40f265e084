//! The thread file system: folders and chunked files.

use super::{db, exec, query_one};
use crate::error::{StoreError, StoreResult};
use crate::model::{FileStat, GrepMatch, Millis};
use crate::path::FsPath;
use crate::search;
use crate::CHUNK_SIZE;
use rusqlite::{params, Connection, OptionalExtension, Row};

const STAT_COLUMNS: &str = "path, is_folder, size, mime_type, modified_at";

fn stat_row(r: &Row<'_>) -> rusqlite::Result<FileStat> {
    Ok(FileStat {
        path: r.get(0)?,
        is_folder: r.get(1)?,
        size: r.get::<_, i64>(2)? as u64,
        mime_type: r.get(3)?,
        modified_at: r.get(4)?,
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

pub(super) fn stat(
    conn: &Connection,
    thread: &str,
    path: &FsPath,
) -> StoreResult<Option<FileStat>> {
    if path.is_root() {
        return Ok(Some(root_stat()));
    }
    query_one(
        conn,
        &format!("SELECT {STAT_COLUMNS} FROM files WHERE thread = ?1 AND path = ?2"),
        params![thread, path.as_str()],
        stat_row,
    )
    .optional()
    .map_err(db)
}

/// Creates the folders above `path` that are missing; fails if one of them is a file.
fn ensure_parents(conn: &Connection, thread: &str, path: &FsPath, now: Millis) -> StoreResult<()> {
    for dir in path.ancestors() {
        make_folder(conn, thread, &dir, now)?;
    }
    Ok(())
}

fn make_folder(conn: &Connection, thread: &str, dir: &FsPath, now: Millis) -> StoreResult<()> {
    match stat(conn, thread, dir)? {
        Some(s) if s.is_folder => Ok(()),
        Some(_) => Err(StoreError::NotAFolder(dir.to_string())),
        None => {
            exec(conn,
                "INSERT INTO files (thread, path, parent, is_folder, size, modified_at) VALUES (?1, ?2, ?3, 1, 0, ?4)",
                params![thread, dir.as_str(), dir.parent().as_str(), now],
            )
            .map_err(db)?;
            Ok(())
        }
    }
}

pub(super) fn write(
    conn: &Connection,
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
    exec(
        conn,
        "DELETE FROM file_chunks WHERE thread = ?1 AND path = ?2",
        params![thread, path.as_str()],
    )
    .map_err(db)?;
    {
        let mut insert = conn
            .prepare_cached(
                "INSERT INTO file_chunks (thread, path, idx, bytes) VALUES (?1, ?2, ?3, ?4)",
            )
            .map_err(db)?;
        for (idx, chunk) in bytes.chunks(CHUNK_SIZE).enumerate() {
            insert
                .execute(params![thread, path.as_str(), idx as i64, chunk])
                .map_err(db)?;
        }
    }
    exec(conn,
        "INSERT INTO files (thread, path, parent, is_folder, size, mime_type, message_id, modified_at)
         VALUES (?1, ?2, ?3, 0, ?4, ?5, ?6, ?7)
         ON CONFLICT (thread, path) DO UPDATE SET size = excluded.size, mime_type = excluded.mime_type,
             message_id = excluded.message_id, modified_at = excluded.modified_at",
        params![thread, path.as_str(), path.parent().as_str(), bytes.len() as i64, mime_type, message_id, now],
    )
    .map_err(db)?;
    Ok(())
}

fn require_file(conn: &Connection, thread: &str, path: &FsPath) -> StoreResult<FileStat> {
    match stat(conn, thread, path)? {
        None => Err(StoreError::FileNotFound(path.to_string())),
        Some(s) if s.is_folder => Err(StoreError::IsAFolder(path.to_string())),
        Some(s) => Ok(s),
    }
}

pub(super) fn unlink(conn: &Connection, thread: &str, path: &FsPath) -> StoreResult<()> {
    require_file(conn, thread, path)?;
    exec(
        conn,
        "DELETE FROM file_chunks WHERE thread = ?1 AND path = ?2",
        params![thread, path.as_str()],
    )
    .map_err(db)?;
    exec(
        conn,
        "DELETE FROM files WHERE thread = ?1 AND path = ?2",
        params![thread, path.as_str()],
    )
    .map_err(db)?;
    Ok(())
}

pub(super) fn mkdir(
    conn: &Connection,
    thread: &str,
    path: &FsPath,
    now: Millis,
) -> StoreResult<()> {
    if path.is_root() {
        return Ok(());
    }
    ensure_parents(conn, thread, path, now)?;
    make_folder(conn, thread, path, now)
}

pub(super) fn rmdir(conn: &Connection, thread: &str, path: &FsPath) -> StoreResult<()> {
    if path.is_root() {
        return Err(StoreError::Root);
    }
    match stat(conn, thread, path)? {
        None => return Err(StoreError::FileNotFound(path.to_string())),
        Some(s) if !s.is_folder => return Err(StoreError::NotAFolder(path.to_string())),
        Some(_) => {}
    }
    let children: i64 = query_one(
        conn,
        "SELECT COUNT(*) FROM files WHERE thread = ?1 AND parent = ?2",
        params![thread, path.as_str()],
        |r| r.get(0),
    )
    .map_err(db)?;
    if children > 0 {
        return Err(StoreError::FolderNotEmpty(path.to_string()));
    }
    exec(
        conn,
        "DELETE FROM files WHERE thread = ?1 AND path = ?2",
        params![thread, path.as_str()],
    )
    .map_err(db)?;
    Ok(())
}

/// Streams a file's chunks in order. The connection is held for the whole read, so every chunk
/// comes from the same state of the database; the sizes are checked against the entry.
pub(super) fn stream(
    conn: &Connection,
    thread: &str,
    path: &FsPath,
    sink: &mut dyn FnMut(&[u8]),
) -> StoreResult<FileStat> {
    let stat = require_file(conn, thread, path)?;
    let mut stmt = conn
        .prepare_cached(
            "SELECT bytes FROM file_chunks WHERE thread = ?1 AND path = ?2 ORDER BY idx",
        )
        .map_err(db)?;
    let mut rows = stmt.query(params![thread, path.as_str()]).map_err(db)?;
    let mut total = 0u64;
    while let Some(row) = rows.next().map_err(db)? {
        let bytes = row
            .get_ref(0)
            .map_err(db)?
            .as_blob()
            .map_err(|e| db(e.into()))?;
        total += bytes.len() as u64;
        sink(bytes);
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
    conn: &Connection,
    thread: &str,
    path: &FsPath,
    index: u64,
) -> StoreResult<(FileStat, Option<Vec<u8>>)> {
    let stat = require_file(conn, thread, path)?;
    let Ok(index) = i64::try_from(index) else {
        return Ok((stat, None));
    };
    let bytes = query_one(
        conn,
        "SELECT bytes FROM file_chunks WHERE thread = ?1 AND path = ?2 AND idx = ?3",
        params![thread, path.as_str(), index],
        |r| r.get::<_, Vec<u8>>(0),
    )
    .optional()
    .map_err(db)?;
    Ok((stat, bytes))
}

pub(super) fn readdir(
    conn: &Connection,
    thread: &str,
    path: &FsPath,
) -> StoreResult<Vec<FileStat>> {
    match stat(conn, thread, path)? {
        None => return Err(StoreError::FileNotFound(path.to_string())),
        Some(s) if !s.is_folder => return Err(StoreError::NotAFolder(path.to_string())),
        Some(_) => {}
    }
    let mut stmt = conn
        .prepare_cached(&format!("SELECT {STAT_COLUMNS} FROM files WHERE thread = ?1 AND parent = ?2 AND path != '/' ORDER BY path"))
        .map_err(db)?;
    let rows = stmt
        .query_map(params![thread, path.as_str()], stat_row)
        .map_err(db)?;
    rows.collect::<Result<_, _>>().map_err(db)
}

fn under(conn: &Connection, thread: &str, dir: &FsPath) -> StoreResult<Vec<FileStat>> {
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {STAT_COLUMNS} FROM files WHERE thread = ?1 ORDER BY path"
        ))
        .map_err(db)?;
    let rows = stmt.query_map(params![thread], stat_row).map_err(db)?;
    let all: Vec<FileStat> = rows.collect::<Result<_, _>>().map_err(db)?;
    Ok(all
        .into_iter()
        .filter(|s| search::strictly_under(s, dir))
        .collect())
}

pub(super) fn find(
    conn: &Connection,
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
    conn: &Connection,
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
