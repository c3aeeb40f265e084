//! Threads: created with their first writes, deleted with their subtree, listed a page at a
//! time, and found when they have work no run is doing.

use super::conn::{col, Conn};
use super::{corrupt, leases, require_thread};
use crate::error::{StoreError, StoreResult};
use crate::model::*;
use crate::page::ThreadQuery;
use crate::rows::{decode_thread, ThreadRow};
use crate::rules::{threads_with_unowned_work_sql, threads_with_work_sql, THREAD_TABLES};
use postgres::types::ToSql;
use postgres::Row;

pub(super) const THREAD_COLUMNS: &str = "id, agent, parent, tags, status, created_at, updated_at";

/// A thread row as selected with [`THREAD_COLUMNS`].
pub(super) fn thread_row(row: &Row) -> StoreResult<ThreadRow> {
    Ok((
        col(row, 0)?,
        col(row, 1)?,
        col(row, 2)?,
        col(row, 3)?,
        col(row, 4)?,
        col(row, 5)?,
        col(row, 6)?,
    ))
}

pub(super) fn create(tx: &mut Conn, new: NewThread, now: Millis) -> StoreResult<Thread> {
    if let Some(parent) = &new.parent {
        require_thread(tx, parent)?;
    }
    let thread = Thread {
        id: new.id.unwrap_or_else(new_id),
        agent: new.agent,
        parent: new.parent,
        tags: new.tags,
        status: ThreadStatus::Idle,
        created_at: now,
        updated_at: now,
    };
    let tags = serde_json::to_string(&thread.tags).map_err(corrupt)?;
    tx.exec(
        "INSERT INTO threads (id, agent, parent, tags, status, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $6)",
        &[
            &thread.id,
            &thread.agent,
            &thread.parent,
            &tags,
            &thread.status.as_str(),
            &now,
        ],
    )?;
    super::apply::apply_in(tx, &thread.id, new.writes, now)?;
    Ok(thread)
}

/// Deletes the thread and its subtree, or nothing while a live run owns any of them; inside
/// the writer's transaction, so no run can claim one between the check and the deletion.
pub(super) fn delete(tx: &mut Conn, thread: &str, now: Millis) -> StoreResult<()> {
    require_thread(tx, thread)?;
    let subtree = subtree(tx, thread)?;
    for id in &subtree {
        if let Some(lease) = leases::lease(tx, id)? {
            // An expired lease is a run that died: nothing runs the thread any more.
            if lease.expires_at > now {
                return Err(StoreError::ThreadOwned {
                    thread: id.clone(),
                    lease,
                });
            }
        }
    }
    // Children before their parents: a thread's row goes after every row that refers to it.
    for id in subtree.iter().rev() {
        tx.touch(id);
        for table in THREAD_TABLES {
            tx.exec(&format!("DELETE FROM {table} WHERE thread = $1"), &[id])?;
        }
        tx.exec("DELETE FROM threads WHERE id = $1", &[id])?;
    }
    Ok(())
}

/// The thread and its descendants, each after its parent.
fn subtree(tx: &mut Conn, thread: &str) -> StoreResult<Vec<String>> {
    let mut all = vec![thread.to_owned()];
    let mut next = 0;
    while next < all.len() {
        let parent = all[next].clone();
        for row in tx.rows(
            "SELECT id FROM threads WHERE parent = $1 ORDER BY created_at, ord",
            &[&parent],
        )? {
            all.push(col(&row, 0)?);
        }
        next += 1;
    }
    Ok(all)
}

/// One page of threads, newest first (the order of [`crate::Store::threads`]).
pub(super) fn page(conn: &mut Conn, query: &ThreadQuery) -> StoreResult<Vec<Thread>> {
    let mut sql = format!("SELECT {THREAD_COLUMNS} FROM threads WHERE true");
    let mut args: Vec<Box<dyn ToSql + Sync>> = Vec::new();
    let mut arg = |sql: &mut String, value: Box<dyn ToSql + Sync>| {
        args.push(value);
        sql.push_str(&format!("${}", args.len()));
    };
    if let Some(agents) = &query.agents {
        if agents.is_empty() {
            return Ok(Vec::new());
        }
        sql.push_str(" AND agent = ANY(");
        // An array's text is not rewritten where it is bound (see `text`): here, first.
        let held: Vec<String> = agents
            .iter()
            .map(|a| super::text::holdable_text(a).into_owned())
            .collect();
        arg(&mut sql, Box::new(held));
        sql.push(')');
    }
    if let Some(status) = query.status {
        sql.push_str(" AND status = ");
        arg(&mut sql, Box::new(status.as_str().to_owned()));
    }
    if let Some(parent) = &query.parent {
        sql.push_str(" AND parent = ");
        arg(&mut sql, Box::new(parent.clone()));
    }
    if let Some(after) = &query.after {
        let row = conn
            .opt(
                "SELECT created_at, ord FROM threads WHERE id = $1",
                &[after],
            )?
            .ok_or_else(|| StoreError::ThreadNotFound(after.clone()))?;
        let (created_at, ord): (i64, i64) = (col(&row, 0)?, col(&row, 1)?);
        sql.push_str(" AND (created_at, ord) < (");
        arg(&mut sql, Box::new(created_at));
        sql.push_str(", ");
        arg(&mut sql, Box::new(ord));
        sql.push(')');
    }
    sql.push_str(" ORDER BY created_at DESC, ord DESC LIMIT ");
    arg(
        &mut sql,
        Box::new(i64::try_from(query.limit).unwrap_or(i64::MAX)),
    );
    conn.rows_dynamic(&sql, &args)?
        .iter()
        .map(|row| decode_thread(thread_row(row)?))
        .collect()
}

/// Threads whose work no run may be doing, oldest first (see
/// [`crate::Store::threads_with_work`]).
pub(super) fn with_work(conn: &mut Conn) -> StoreResult<Vec<String>> {
    conn.rows(&threads_with_work_sql("ord"), &[])?
        .iter()
        .map(|row| col(row, 0))
        .collect()
}

/// Those no lease live on the database's clock holds.
pub(super) fn with_unowned_work(conn: &mut Conn) -> StoreResult<Vec<String>> {
    conn.rows(&threads_with_unowned_work_sql("ord", super::DB_NOW), &[])?
        .iter()
        .map(|row| col(row, 0))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::THREAD_TABLES;
    use crate::conformance::fresh_database::FreshDatabase;

    #[test]
    fn every_table_with_a_thread_column_is_emptied_by_a_deletion() {
        let database = FreshDatabase::new();
        drop(database.store());
        let mut tables: Vec<String> = database
            .client()
            .query(
                "SELECT table_name::text FROM information_schema.columns
                 WHERE table_schema = 'public' AND column_name = 'thread'",
                &[],
            )
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        tables.sort();
        let mut covered: Vec<String> = THREAD_TABLES.iter().map(|t| t.to_string()).collect();
        covered.sort();
        assert_eq!(tables, covered, "a table with a `thread` column is missing");
    }
}
