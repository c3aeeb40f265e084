//! Deleting a thread with its subtree (its child threads, theirs, and so on): every row of each,
//! in the one transaction the writer runs it in, or nothing when a live run owns any of them.

use super::{db, exec, leases, require_thread};
use crate::error::{StoreError, StoreResult};
use crate::model::now_millis;
use crate::rules::THREAD_TABLES;
use rusqlite::Connection;

/// Runs inside the writer's transaction, so the checks and the deletion are one step: a run
/// cannot claim a thread of the subtree between them.
pub(super) fn delete_thread(tx: &Connection, thread: &str) -> StoreResult<()> {
    require_thread(tx, thread)?;
    let subtree = subtree(tx, thread)?;
    for id in &subtree {
        if let Some(lease) = leases::lease(tx, id)? {
            // An expired lease is a run that died: nothing runs the thread any more.
            if lease.expires_at > now_millis() {
                return Err(StoreError::ThreadOwned {
                    thread: id.clone(),
                    lease,
                });
            }
        }
    }
    // Children before their parents: a thread's row goes after every row that refers to it.
    for id in subtree.iter().rev() {
        for table in THREAD_TABLES {
            exec(tx, &format!("DELETE FROM {table} WHERE thread = ?1"), [id]).map_err(db)?;
        }
        exec(tx, "DELETE FROM threads WHERE id = ?1", [id]).map_err(db)?;
    }
    Ok(())
}

/// The thread and its descendants, each after its parent.
fn subtree(tx: &Connection, thread: &str) -> StoreResult<Vec<String>> {
    let mut stmt = tx
        .prepare_cached("SELECT id FROM threads WHERE parent = ?1 ORDER BY created_at, rowid")
        .map_err(db)?;
    let mut all = vec![thread.to_owned()];
    let mut next = 0;
    while next < all.len() {
        let rows = stmt.query_map([&all[next]], |r| r.get(0)).map_err(db)?;
        let children: Vec<String> = rows.collect::<Result<_, _>>().map_err(db)?;
        all.extend(children);
        next += 1;
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use crate::path::normalize;
    use crate::rules::THREAD_TABLES;
    use crate::*;

    /// The tables of the schema that have a `thread` column.
    fn tables_with_a_thread_column(conn: &rusqlite::Connection) -> Vec<String> {
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap();
        let tables: Vec<String> = stmt
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        tables
            .into_iter()
            .filter(|t| {
                let mut cols = conn
                    .prepare(&format!("SELECT name FROM pragma_table_info('{t}')"))
                    .unwrap();
                let names: Vec<String> = cols
                    .query_map([], |r| r.get(0))
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                names.iter().any(|n| n == "thread")
            })
            .collect()
    }

    #[test]
    fn every_table_of_a_thread_is_emptied_of_it() {
        let store = SqliteStore::in_memory().unwrap();
        let mut covered: Vec<String> = THREAD_TABLES.iter().map(|t| t.to_string()).collect();
        covered.sort();
        assert_eq!(
            tables_with_a_thread_column(&store.lock()),
            covered,
            "a table with a `thread` column is missing from THREAD_TABLES"
        );
        let t = store
            .create_thread(NewThread {
                agent: "a".into(),
                ..NewThread::default()
            })
            .unwrap()
            .id;
        store
            .apply(
                &t,
                vec![
                    Write::SetValue {
                        key: "k".into(),
                        value: Some(serde_json::json!(1)),
                    },
                    Write::WriteFile {
                        path: normalize("/a/b.bin").unwrap(),
                        bytes: vec![7; CHUNK_SIZE + 1],
                        mime_type: None,
                        message_id: None,
                    },
                ],
            )
            .unwrap();
        store.delete_thread(&t).unwrap();
        let conn = store.lock();
        for table in THREAD_TABLES {
            let left: i64 = conn
                .query_row(
                    &format!("SELECT COUNT(*) FROM {table} WHERE thread = ?1"),
                    [&t],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(left, 0, "{table} still holds rows of the deleted thread");
        }
        let threads: i64 = conn
            .query_row("SELECT COUNT(*) FROM threads", [], |r| r.get(0))
            .unwrap();
        assert_eq!(threads, 0);
    }
}
