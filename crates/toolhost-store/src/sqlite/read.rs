//! Reads: threads, messages, the journal, values, the queue and events (the `Store` trait of the
//! SQLite backend; rows are decoded in `rows.rs`).

use super::{corrupt, db, exec, query_one, require_thread, SqliteStore};
use crate::error::{StoreError, StoreResult};
use crate::lease::{HeldLease, Lease, LeaseClaim};
use crate::model::*;
use crate::page::ThreadQuery;
use crate::path::FsPath;
use crate::token::{ApiToken, Credential};
use crate::Store;
use rusqlite::{params, OptionalExtension};
use serde_json::Value;

use super::rows::*;

impl Store for SqliteStore {
    fn create_thread(&self, new: NewThread) -> StoreResult<Thread> {
        let id = new.id.clone().unwrap_or_else(new_id);
        let told = id.clone();
        self.write_to(&told, move |tx| {
            if let Some(parent) = &new.parent {
                require_thread(tx, parent)?;
            }
            let now = now_millis();
            let thread = Thread {
                id,
                agent: new.agent,
                parent: new.parent,
                tags: new.tags,
                status: ThreadStatus::Idle,
                created_at: now,
                updated_at: now,
            };
            let tags = serde_json::to_string(&thread.tags).map_err(corrupt)?;
            exec(tx,
                "INSERT INTO threads (id, agent, parent, tags, status, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
                params![thread.id, thread.agent, thread.parent, tags, thread.status.as_str(), now],
            )
            .map_err(db)?;
            super::apply::apply_in(tx, &thread.id, new.writes, now)?;
            Ok(thread)
        })
    }

    fn claim(&self, thread: &str, claim: &LeaseClaim) -> StoreResult<Lease> {
        let (thread, claim) = (thread.to_owned(), claim.clone());
        self.write(move |tx| super::leases::claim(tx, &thread, &claim))
    }

    fn renew(&self, thread: &str, owner: &str, ttl_ms: Millis) -> StoreResult<Lease> {
        let (thread, owner) = (thread.to_owned(), owner.to_owned());
        self.write(move |tx| super::leases::renew(tx, &thread, &owner, ttl_ms))
    }

    fn release(&self, thread: &str, owner: &str) -> StoreResult<bool> {
        let (thread, owner) = (thread.to_owned(), owner.to_owned());
        self.write(move |tx| super::leases::release(tx, &thread, &owner))
    }

    fn request_stop(&self, thread: &str) -> StoreResult<bool> {
        let owned = thread.to_owned();
        self.write_to(thread, move |tx| super::leases::request_stop(tx, &owned))
    }

    fn create_token(&self, token: &ApiToken) -> StoreResult<()> {
        let token = token.clone();
        self.write(move |tx| super::tokens::create(tx, &token))
    }

    fn token(&self, id: &str) -> StoreResult<Option<ApiToken>> {
        super::tokens::find(&self.lock(), id)
    }

    fn tokens(&self) -> StoreResult<Vec<ApiToken>> {
        super::tokens::list(&self.lock())
    }

    fn revoke_token(&self, id: &str) -> StoreResult<bool> {
        let id = id.to_owned();
        self.write(move |tx| super::tokens::revoke(tx, &id))
    }

    fn credential(&self, name: &str) -> StoreResult<Option<Credential>> {
        super::tokens::credential(&self.lock(), name)
    }

    fn put_credential(
        &self,
        name: &str,
        value: &str,
        expected: Option<i64>,
    ) -> StoreResult<Option<i64>> {
        let (name, value) = (name.to_owned(), value.to_owned());
        self.write(move |tx| super::tokens::put_credential(tx, &name, &value, expected))
    }

    fn delete_credential(&self, name: &str) -> StoreResult<bool> {
        let name = name.to_owned();
        self.write(move |tx| super::tokens::delete_credential(tx, &name))
    }

    fn lease(&self, thread: &str) -> StoreResult<Option<Lease>> {
        super::leases::lease(&self.lock(), thread)
    }

    fn keep_leases(&self, held: &[HeldLease]) -> StoreResult<Vec<Option<Lease>>> {
        if held.iter().all(|h| h.ttl_ms.is_none()) {
            return super::leases::keep(&self.lock(), held);
        }
        let held = held.to_vec();
        self.write(move |tx| super::leases::keep(tx, &held))
    }

    fn thread(&self, id: &str) -> StoreResult<Thread> {
        let conn = self.lock();
        let row = query_one(&conn,
                "SELECT id, agent, parent, tags, status, created_at, updated_at FROM threads WHERE id = ?1",
                [id],
                thread_row,
            )
            .optional()
            .map_err(db)?
            .ok_or_else(|| StoreError::ThreadNotFound(id.to_owned()))?;
        decode_thread(row)
    }

    fn threads(&self, parent: Option<&str>) -> StoreResult<Vec<Thread>> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare_cached(
                "SELECT id, agent, parent, tags, status, created_at, updated_at FROM threads
                 WHERE ?1 IS NULL OR parent = ?1 ORDER BY created_at DESC, rowid DESC",
            )
            .map_err(db)?;
        let rows = stmt.query_map([parent], thread_row).map_err(db)?;
        rows.map(|r| r.map_err(db).and_then(decode_thread))
            .collect()
    }

    fn apply(&self, thread: &str, writes: Vec<Write>) -> StoreResult<Applied> {
        let owned = thread.to_owned();
        self.write_to(thread, move |tx| {
            super::apply::apply_in(tx, &owned, writes, now_millis())
        })
    }

    fn delete_thread(&self, id: &str) -> StoreResult<()> {
        let owned = id.to_owned();
        self.write_to(id, move |tx| super::delete::delete_thread(tx, &owned))
    }

    fn apply_nonblocking(
        &self,
        thread: &str,
        writes: Vec<Write>,
    ) -> Result<crate::PendingApply, Vec<Write>> {
        if self.in_place.is_some() && !self.runs_in_place() {
            // In memory and in use: the caller applies it where it may wait.
            return Err(writes);
        }
        let owned = thread.to_owned();
        Ok(Box::pin(self.write_to_async(thread, move |tx| {
            super::apply::apply_in(tx, &owned, writes, now_millis())
        })))
    }

    fn commits(
        &self,
    ) -> Option<tokio::sync::broadcast::Receiver<std::sync::Arc<crate::Committed>>> {
        // Only this process's own commits: another process writing to the same file is not
        // heard, and its followers find its writes when they poll.
        Some(self.told.commits.subscribe())
    }

    fn write_stats(&self) -> Option<crate::WriteStats> {
        Some(SqliteStore::write_stats(self))
    }

    fn runs_in_place(&self) -> bool {
        // Not while another call holds the connection: the caller would block on it. A
        // connection poisoned by a panic is still usable (see `lock_conn`).
        self.in_place.as_ref().is_some_and(|conn| {
            !matches!(conn.try_lock(), Err(std::sync::TryLockError::WouldBlock))
        })
    }

    fn messages(&self, thread: &str) -> StoreResult<Vec<Message>> {
        self.messages_after(thread, 0)
    }

    fn messages_after(&self, thread: &str, seq: i64) -> StoreResult<Vec<Message>> {
        let conn = self.lock();
        require_thread(&conn, thread)?;
        load_messages(
            &conn,
            "WHERE thread = ?1 AND seq > ?2 ORDER BY seq",
            &[&thread, &seq],
        )
    }

    fn message_tally(&self, thread: &str) -> StoreResult<MessageTally> {
        // Kept by triggers on the messages table (see the schema).
        let conn = self.lock();
        query_one(
            &conn,
            "SELECT message_count, message_seq_sum FROM threads WHERE id = ?1",
            [thread],
            |row| {
                Ok(MessageTally {
                    count: row.get::<_, i64>(0)?.max(0) as u64,
                    seq_sum: row.get(1)?,
                })
            },
        )
        .optional()
        .map_err(db)?
        .ok_or_else(|| StoreError::ThreadNotFound(thread.to_owned()))
    }

    fn calls(&self, thread: &str) -> StoreResult<Vec<CallRecord>> {
        let conn = self.lock();
        require_thread(&conn, thread)?;
        let sql = format!("SELECT {CALL_COLUMNS} FROM calls WHERE thread = ?1 ORDER BY position");
        let mut stmt = conn.prepare_cached(&sql).map_err(db)?;
        let rows = stmt.query_map([thread], call_row).map_err(db)?;
        rows.map(|r| r.map_err(db).and_then(decode_call)).collect()
    }

    fn call(&self, thread: &str, call_id: &str) -> StoreResult<Option<CallRecord>> {
        let conn = self.lock();
        require_thread(&conn, thread)?;
        let sql = format!("SELECT {CALL_COLUMNS} FROM calls WHERE thread = ?1 AND call_id = ?2");
        query_one(&conn, &sql, [thread, call_id], call_row)
            .optional()
            .map_err(db)?
            .map(decode_call)
            .transpose()
    }

    fn value(&self, thread: &str, key: &str) -> StoreResult<Option<Value>> {
        let conn = self.lock();
        require_thread(&conn, thread)?;
        let text: Option<String> = query_one(
            &conn,
            "SELECT value FROM kv WHERE thread = ?1 AND key = ?2",
            [thread, key],
            |r| r.get(0),
        )
        .optional()
        .map_err(db)?;
        text.map(|t| serde_json::from_str(&t).map_err(corrupt))
            .transpose()
    }

    fn values(&self, thread: &str) -> StoreResult<Vec<(String, Value)>> {
        let conn = self.lock();
        require_thread(&conn, thread)?;
        let mut stmt = conn
            .prepare_cached("SELECT key, value FROM kv WHERE thread = ?1 ORDER BY key")
            .map_err(db)?;
        let rows = stmt
            .query_map([thread], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(db)?;
        rows.map(|r| {
            let (k, v) = r.map_err(db)?;
            Ok((k, serde_json::from_str(&v).map_err(corrupt)?))
        })
        .collect()
    }

    fn queued(&self, thread: &str) -> StoreResult<Vec<Queued>> {
        let conn = self.lock();
        require_thread(&conn, thread)?;
        let mut stmt = conn
            .prepare_cached("SELECT seq, item FROM queue WHERE thread = ?1 ORDER BY seq")
            .map_err(db)?;
        let rows = stmt
            .query_map([thread], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(db)?;
        rows.map(|r| {
            let (seq, item) = r.map_err(db)?;
            Ok(Queued {
                seq,
                item: serde_json::from_str(&item).map_err(corrupt)?,
            })
        })
        .collect()
    }

    fn approvals(&self, thread: &str) -> StoreResult<Vec<ApprovalRecord>> {
        let conn = self.lock();
        require_thread(&conn, thread)?;
        super::gates::approvals(&conn, thread)
    }

    fn variables(&self, thread: &str) -> StoreResult<Vec<StoredVariable>> {
        let conn = self.lock();
        require_thread(&conn, thread)?;
        super::gates::variables(&conn, thread)
    }

    fn variable_requests(&self, thread: &str) -> StoreResult<Vec<VariableRequest>> {
        let conn = self.lock();
        require_thread(&conn, thread)?;
        super::gates::variable_requests(&conn, thread)
    }

    fn events(&self, thread: &str, after: i64) -> StoreResult<Vec<Event>> {
        let conn = self.lock();
        require_thread(&conn, thread)?;
        let mut stmt = conn
            .prepare_cached("SELECT thread, seq, kind, data, at FROM events WHERE thread = ?1 AND seq > ?2 ORDER BY seq")
            .map_err(db)?;
        let rows = stmt
            .query_map(params![thread, after], event_row)
            .map_err(db)?;
        rows.map(|r| decode_event(r.map_err(db)?).map(|(_, e)| e))
            .collect()
    }

    fn thread_page(&self, query: &ThreadQuery) -> StoreResult<Vec<Thread>> {
        super::pages::threads(&self.lock(), query)
    }

    fn threads_with_work(&self) -> StoreResult<Vec<String>> {
        super::work::threads_with_work(&self.lock())
    }

    fn threads_with_unowned_work(&self) -> StoreResult<Vec<String>> {
        super::work::threads_with_unowned_work(&self.lock())
    }

    fn offer_work(&self, thread: &str) -> StoreResult<()> {
        let thread = thread.to_owned();
        self.write(move |tx| super::work::offer(tx, &thread, crate::now_millis()))
    }

    fn take_offered_work(&self, limit: usize) -> StoreResult<Vec<String>> {
        self.write(move |tx| super::work::take(tx, limit))
    }

    fn message_page(&self, thread: &str, after: i64, limit: usize) -> StoreResult<Vec<Message>> {
        super::pages::messages(&self.lock(), thread, after, limit)
    }

    fn messages_since(&self, seq: i64, limit: usize) -> StoreResult<Vec<(String, Message)>> {
        let conn = self.lock();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        // Both queries read the one snapshot of this read transaction.
        let mut stmt = conn
            .prepare_cached("SELECT thread FROM messages WHERE seq > ?1 ORDER BY seq LIMIT ?2")
            .map_err(db)?;
        let threads: Vec<String> = stmt
            .query_map(params![seq, limit], |r| r.get(0))
            .map_err(db)?
            .collect::<Result<_, _>>()
            .map_err(db)?;
        let messages = load_messages(
            &conn,
            "WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            &[&seq, &limit],
        )?;
        Ok(threads.into_iter().zip(messages).collect())
    }

    fn events_since(&self, seq: i64, limit: usize) -> StoreResult<Vec<(String, Event)>> {
        let conn = self.lock();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut stmt = conn
            .prepare_cached(
                "SELECT thread, seq, kind, data, at FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            )
            .map_err(db)?;
        let rows = stmt.query_map(params![seq, limit], event_row).map_err(db)?;
        rows.map(|r| decode_event(r.map_err(db)?)).collect()
    }

    fn stat(&self, thread: &str, path: &FsPath) -> StoreResult<Option<FileStat>> {
        let conn = self.lock();
        require_thread(&conn, thread)?;
        super::files::stat(&conn, thread, path)
    }

    fn read_file(&self, thread: &str, path: &FsPath) -> StoreResult<Vec<u8>> {
        let mut out = Vec::new();
        self.stream_file(thread, path, &mut |chunk| out.extend_from_slice(chunk))?;
        Ok(out)
    }

    fn stream_file(
        &self,
        thread: &str,
        path: &FsPath,
        sink: &mut dyn FnMut(&[u8]),
    ) -> StoreResult<FileStat> {
        let conn = self.lock();
        require_thread(&conn, thread)?;
        super::files::stream(&conn, thread, path, sink)
    }

    fn file_chunk(
        &self,
        thread: &str,
        path: &FsPath,
        index: u64,
    ) -> StoreResult<(FileStat, Option<Vec<u8>>)> {
        let conn = self.lock();
        require_thread(&conn, thread)?;
        super::files::chunk(&conn, thread, path, index)
    }

    fn readdir(&self, thread: &str, path: &FsPath) -> StoreResult<Vec<FileStat>> {
        let conn = self.lock();
        require_thread(&conn, thread)?;
        super::files::readdir(&conn, thread, path)
    }

    fn find(&self, thread: &str, under: &FsPath, pattern: &str) -> StoreResult<Vec<FileStat>> {
        let conn = self.lock();
        require_thread(&conn, thread)?;
        super::files::find(&conn, thread, under, pattern)
    }

    fn grep(
        &self,
        thread: &str,
        under: &FsPath,
        needle: &str,
        limit: usize,
    ) -> StoreResult<Vec<GrepMatch>> {
        let conn = self.lock();
        require_thread(&conn, thread)?;
        super::files::grep(&conn, thread, under, needle, limit)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Committed, NewThread, SqliteStore, Store, Write};
    use std::sync::Arc;
    use tokio::sync::broadcast::{error::TryRecvError, Receiver};

    /// The threads named by the notices heard since the last call, in order (a thread once).
    fn told(commits: &mut Receiver<Arc<Committed>>) -> Vec<String> {
        let mut threads: Vec<String> = Vec::new();
        loop {
            match commits.try_recv() {
                Ok(notice) => {
                    for thread in notice.threads.clone().expect("a notice names its threads") {
                        if !threads.contains(&thread) {
                            threads.push(thread);
                        }
                    }
                }
                Err(TryRecvError::Empty) => return threads,
                Err(e) => panic!("the notices ended: {e}"),
            }
        }
    }

    fn value(key: &str) -> Write {
        Write::SetValue {
            key: key.into(),
            value: Some(serde_json::json!(1)),
        }
    }

    /// Each commit that changes threads is told, once it is durable, naming those threads; a
    /// write that changes no thread (a token, a lease's renewal) is not.
    fn tells_its_commits(store: &SqliteStore) {
        let mut commits = store.commits().expect("SQLite tells its own commits");
        let a = store.create_thread(NewThread::default()).unwrap().id;
        assert_eq!(told(&mut commits), vec![a.clone()], "a new thread");
        let b = store.create_thread(NewThread::default()).unwrap().id;
        assert_eq!(told(&mut commits), vec![b.clone()]);
        store.apply(&a, vec![value("k")]).unwrap();
        assert_eq!(told(&mut commits), vec![a.clone()], "a batch of writes");
        let token = crate::ApiToken {
            id: "t1".into(),
            name: "a token".into(),
            secret_hash: "00".into(),
            scopes: vec!["admin".into()],
            agents: None,
            created_at: 1,
            revoked_at: None,
            expires_at: None,
        };
        store.create_token(&token).unwrap();
        store.put_credential("c", "sealed", None).unwrap();
        assert_eq!(
            told(&mut commits),
            Vec::<String>::new(),
            "no thread changed"
        );
        store.request_stop(&b).unwrap();
        assert_eq!(told(&mut commits), vec![b.clone()], "a stop request");
        // A write that fails commits nothing, and is not told.
        assert!(store.apply("no-such-thread", vec![value("k")]).is_err());
        assert_eq!(told(&mut commits), Vec::<String>::new());
        // Writes to two threads at once (one group, or two): both are told.
        std::thread::scope(|s| {
            s.spawn(|| store.apply(&a, vec![value("x")]).unwrap());
            s.spawn(|| store.apply(&b, vec![value("y")]).unwrap());
        });
        let mut both = told(&mut commits);
        both.sort();
        let mut expected = vec![a.clone(), b.clone()];
        expected.sort();
        assert_eq!(both, expected);
        store.delete_thread(&a).unwrap();
        assert_eq!(told(&mut commits), vec![a], "a deletion");
    }

    #[test]
    fn a_file_store_tells_the_commits_of_its_process() {
        let dir = std::env::temp_dir().join(format!("toolhost-told-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        tells_its_commits(&SqliteStore::open(&dir.join("t.db")).unwrap());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_in_memory_store_tells_its_commits() {
        tells_its_commits(&SqliteStore::in_memory().unwrap());
    }

    #[test]
    fn an_in_memory_store_in_use_sends_its_callers_elsewhere() {
        let store = SqliteStore::in_memory().unwrap();
        let thread = store.create_thread(NewThread::default()).unwrap().id;
        assert!(store.runs_in_place());
        {
            let _held = super::super::lock_conn(&store.readers[0]);
            assert!(!store.runs_in_place());
            // The writes come back, for the caller to apply where it may wait.
            assert!(store.apply_nonblocking(&thread, Vec::new()).is_err());
        }
        assert!(store.runs_in_place());
        // A panic while the connection was held leaves it usable, and so free.
        let conn = store.readers[0].clone();
        let _ = std::thread::spawn(move || {
            let _held = conn.lock().unwrap();
            panic!("a call panicked");
        })
        .join();
        assert!(store.readers[0].is_poisoned());
        assert!(store.runs_in_place());
        assert!(store.apply_nonblocking(&thread, Vec::new()).is_ok());
        // File stores hand their calls to the writer and the blocking pool.
        let dir = std::env::temp_dir().join(format!("toolhost-in-place-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(!SqliteStore::open(&dir.join("t.db"))
            .unwrap()
            .runs_in_place());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
