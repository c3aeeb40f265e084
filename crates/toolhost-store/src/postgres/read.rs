//! The `Store` trait of the PostgreSQL backend: writes go to the writer's next group, reads to
//! a reader connection, each in one snapshot.

use super::apply::{apply_in, load_messages};
use super::conn::col;
use super::threads::{thread_row, THREAD_COLUMNS};
use super::{corrupt, files, gates, leases, require_thread, threads, tokens, work, PostgresStore};
use crate::error::{StoreError, StoreResult};
use crate::lease::{HeldLease, Lease, LeaseClaim};
use crate::model::*;
use crate::page::ThreadQuery;
use crate::path::FsPath;
use crate::rows::{decode_call, decode_event, decode_thread, CALL_COLUMNS};
use crate::token::{ApiToken, Credential};
use crate::Store;
use postgres::Row;
use serde_json::Value;

fn event_row(row: &Row) -> StoreResult<(String, Event)> {
    decode_event((
        col(row, 0)?,
        col(row, 1)?,
        col(row, 2)?,
        col(row, 3)?,
        col(row, 4)?,
    ))
}

fn call_row(row: &Row) -> StoreResult<CallRecord> {
    decode_call((
        col(row, 0)?,
        col(row, 1)?,
        col(row, 2)?,
        col(row, 3)?,
        col(row, 4)?,
        col(row, 5)?,
        col(row, 6)?,
        col(row, 7)?,
    ))
}

impl Store for PostgresStore {
    fn create_thread(&self, new: NewThread) -> StoreResult<Thread> {
        self.write(move |tx, now| threads::create(tx, new, now))
    }

    fn claim(&self, thread: &str, claim: &LeaseClaim) -> StoreResult<Lease> {
        let (thread, claim) = (thread.to_owned(), claim.clone());
        self.write(move |tx, now| leases::claim(tx, &thread, &claim, now))
    }

    fn renew(&self, thread: &str, owner: &str, ttl_ms: Millis) -> StoreResult<Lease> {
        let (thread, owner) = (thread.to_owned(), owner.to_owned());
        self.write(move |tx, now| leases::renew(tx, &thread, &owner, ttl_ms, now))
    }

    fn release(&self, thread: &str, owner: &str) -> StoreResult<bool> {
        let (thread, owner) = (thread.to_owned(), owner.to_owned());
        self.write(move |tx, _| leases::release(tx, &thread, &owner))
    }

    fn lease(&self, thread: &str) -> StoreResult<Option<Lease>> {
        let thread = thread.to_owned();
        self.read_one(move |conn| leases::lease(conn, &thread))
    }

    fn keep_leases(&self, held: &[HeldLease]) -> StoreResult<Vec<Option<Lease>>> {
        let held = held.to_vec();
        if held.iter().all(|h| h.ttl_ms.is_none()) {
            return self.read_one(move |conn| leases::keep(conn, &held, None));
        }
        self.write(move |tx, now| leases::keep(tx, &held, Some(now)))
    }

    fn request_stop(&self, thread: &str) -> StoreResult<bool> {
        let thread = thread.to_owned();
        self.write(move |tx, now| leases::request_stop(tx, &thread, now))
    }

    fn thread(&self, id: &str) -> StoreResult<Thread> {
        let id = id.to_owned();
        self.read_one(move |conn| {
            let row = conn
                .opt(
                    &format!("SELECT {THREAD_COLUMNS} FROM threads WHERE id = $1"),
                    &[&id],
                )?
                .ok_or_else(|| StoreError::ThreadNotFound(id.clone()))?;
            decode_thread(thread_row(&row)?)
        })
    }

    fn threads(&self, parent: Option<&str>) -> StoreResult<Vec<Thread>> {
        let parent = parent.map(str::to_owned);
        self.read_one(move |conn| {
            conn.rows(
                &format!(
                    "SELECT {THREAD_COLUMNS} FROM threads
                     WHERE $1::text IS NULL OR parent = $1 ORDER BY created_at DESC, ord DESC"
                ),
                &[&parent],
            )?
            .iter()
            .map(|row| decode_thread(thread_row(row)?))
            .collect()
        })
    }

    fn apply(&self, thread: &str, writes: Vec<Write>) -> StoreResult<Applied> {
        let thread = thread.to_owned();
        self.write(move |tx, now| apply_in(tx, &thread, writes, now))
    }

    fn delete_thread(&self, id: &str) -> StoreResult<()> {
        let id = id.to_owned();
        self.write(move |tx, now| threads::delete(tx, &id, now))
    }

    fn apply_nonblocking(
        &self,
        thread: &str,
        writes: Vec<Write>,
    ) -> Result<crate::PendingApply, Vec<Write>> {
        let thread = thread.to_owned();
        Ok(Box::pin(self.write_async(move |tx, now| {
            apply_in(tx, &thread, writes, now)
        })))
    }

    fn write_stats(&self) -> Option<crate::WriteStats> {
        Some(PostgresStore::write_stats(self))
    }

    fn commits(
        &self,
    ) -> Option<tokio::sync::broadcast::Receiver<std::sync::Arc<crate::Committed>>> {
        Some(self.commits.subscribe())
    }

    fn create_token(&self, token: &ApiToken) -> StoreResult<()> {
        let token = token.clone();
        self.write(move |tx, _| tokens::create(tx, &token))
    }

    fn token(&self, id: &str) -> StoreResult<Option<ApiToken>> {
        let id = id.to_owned();
        self.read_one(move |conn| tokens::find(conn, &id))
    }

    fn tokens(&self) -> StoreResult<Vec<ApiToken>> {
        self.read_one(tokens::list)
    }

    fn revoke_token(&self, id: &str) -> StoreResult<bool> {
        let id = id.to_owned();
        self.write(move |tx, now| tokens::revoke(tx, &id, now))
    }

    fn credential(&self, name: &str) -> StoreResult<Option<Credential>> {
        let name = name.to_owned();
        self.read_one(move |conn| tokens::credential(conn, &name))
    }

    fn put_credential(
        &self,
        name: &str,
        value: &str,
        expected: Option<i64>,
    ) -> StoreResult<Option<i64>> {
        let (name, value) = (name.to_owned(), value.to_owned());
        self.write(move |tx, now| tokens::put_credential(tx, &name, &value, expected, now))
    }

    fn delete_credential(&self, name: &str) -> StoreResult<bool> {
        let name = name.to_owned();
        self.write(move |tx, now| tokens::delete_credential(tx, &name, now))
    }

    fn messages(&self, thread: &str) -> StoreResult<Vec<Message>> {
        self.messages_after(thread, 0)
    }

    fn thread_page(&self, query: &ThreadQuery) -> StoreResult<Vec<Thread>> {
        let query = query.clone();
        self.read(move |conn| threads::page(conn, &query))
    }

    fn threads_with_work(&self) -> StoreResult<Vec<String>> {
        self.read_one(threads::with_work)
    }

    fn threads_with_unowned_work(&self) -> StoreResult<Vec<String>> {
        self.read_one(threads::with_unowned_work)
    }

    fn offer_work(&self, thread: &str) -> StoreResult<()> {
        let thread = thread.to_owned();
        self.write(move |tx, now| work::offer(tx, &thread, now))
    }

    fn take_offered_work(&self, limit: usize) -> StoreResult<Vec<String>> {
        // Outside the writer and its cluster lock: taking hands out no position and decides
        // nothing another write depends on, and SKIP LOCKED keeps takers apart.
        self.write_on_reader(move |conn| work::take(conn, limit))
    }

    fn work_offers(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        Some(self.offers.subscribe())
    }

    fn message_page(&self, thread: &str, after: i64, limit: usize) -> StoreResult<Vec<Message>> {
        let thread = thread.to_owned();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(move |conn| {
            require_thread(conn, &thread)?;
            load_messages(
                conn,
                "WHERE thread = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                &[&thread, &after, &limit],
            )
        })
    }

    fn messages_after(&self, thread: &str, seq: i64) -> StoreResult<Vec<Message>> {
        let thread = thread.to_owned();
        self.read(move |conn| {
            require_thread(conn, &thread)?;
            load_messages(
                conn,
                "WHERE thread = $1 AND seq > $2 ORDER BY seq",
                &[&thread, &seq],
            )
        })
    }

    fn message_tally(&self, thread: &str) -> StoreResult<MessageTally> {
        // Kept by a trigger on the messages table (see the schema).
        let thread = thread.to_owned();
        self.read_one(move |conn| {
            let row = conn
                .opt(
                    "SELECT message_count, message_seq_sum FROM threads WHERE id = $1",
                    &[&thread],
                )?
                .ok_or_else(|| StoreError::ThreadNotFound(thread.clone()))?;
            Ok(MessageTally {
                count: col::<i64>(&row, 0)?.max(0) as u64,
                seq_sum: col(&row, 1)?,
            })
        })
    }

    fn calls(&self, thread: &str) -> StoreResult<Vec<CallRecord>> {
        let thread = thread.to_owned();
        self.read(move |conn| {
            require_thread(conn, &thread)?;
            conn.rows(
                &format!("SELECT {CALL_COLUMNS} FROM calls WHERE thread = $1 ORDER BY position"),
                &[&thread],
            )?
            .iter()
            .map(call_row)
            .collect()
        })
    }

    fn call(&self, thread: &str, call_id: &str) -> StoreResult<Option<CallRecord>> {
        let (thread, call_id) = (thread.to_owned(), call_id.to_owned());
        self.read(move |conn| {
            require_thread(conn, &thread)?;
            conn.opt(
                &format!("SELECT {CALL_COLUMNS} FROM calls WHERE thread = $1 AND call_id = $2"),
                &[&thread, &call_id],
            )?
            .map(|row| call_row(&row))
            .transpose()
        })
    }

    fn value(&self, thread: &str, key: &str) -> StoreResult<Option<Value>> {
        let (thread, key) = (thread.to_owned(), key.to_owned());
        self.read(move |conn| {
            require_thread(conn, &thread)?;
            conn.opt(
                "SELECT value FROM kv WHERE thread = $1 AND key = $2",
                &[&thread, &key],
            )?
            .map(|row| serde_json::from_str(&col::<String>(&row, 0)?).map_err(corrupt))
            .transpose()
        })
    }

    fn values(&self, thread: &str) -> StoreResult<Vec<(String, Value)>> {
        let thread = thread.to_owned();
        self.read(move |conn| {
            require_thread(conn, &thread)?;
            conn.rows(
                "SELECT key, value FROM kv WHERE thread = $1 ORDER BY key COLLATE \"C\"",
                &[&thread],
            )?
            .iter()
            .map(|row| {
                let value: String = col(row, 1)?;
                Ok((col(row, 0)?, serde_json::from_str(&value).map_err(corrupt)?))
            })
            .collect()
        })
    }

    fn queued(&self, thread: &str) -> StoreResult<Vec<Queued>> {
        let thread = thread.to_owned();
        self.read(move |conn| {
            require_thread(conn, &thread)?;
            conn.rows(
                "SELECT seq, item FROM queue WHERE thread = $1 ORDER BY seq",
                &[&thread],
            )?
            .iter()
            .map(|row| {
                let item: String = col(row, 1)?;
                Ok(Queued {
                    seq: col(row, 0)?,
                    item: serde_json::from_str(&item).map_err(corrupt)?,
                })
            })
            .collect()
        })
    }

    fn approvals(&self, thread: &str) -> StoreResult<Vec<ApprovalRecord>> {
        let thread = thread.to_owned();
        self.read(move |conn| {
            require_thread(conn, &thread)?;
            gates::approvals(conn, &thread)
        })
    }

    fn variables(&self, thread: &str) -> StoreResult<Vec<StoredVariable>> {
        let thread = thread.to_owned();
        self.read(move |conn| {
            require_thread(conn, &thread)?;
            gates::variables(conn, &thread)
        })
    }

    fn variable_requests(&self, thread: &str) -> StoreResult<Vec<VariableRequest>> {
        let thread = thread.to_owned();
        self.read(move |conn| {
            require_thread(conn, &thread)?;
            gates::variable_requests(conn, &thread)
        })
    }

    fn messages_since(&self, seq: i64, limit: usize) -> StoreResult<Vec<(String, Message)>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read_one(move |conn| {
            let sql = format!(
                "SELECT thread, {} FROM messages WHERE seq > $1 ORDER BY seq LIMIT $2",
                crate::rows::MESSAGE_COLUMNS
            );
            conn.rows(&sql, &[&seq, &limit])?
                .iter()
                .map(|row| {
                    let thread: String = col(row, 0)?;
                    let message = super::apply::message_row_at(row, 1)?;
                    Ok((thread, crate::rows::decode_message(message)?))
                })
                .collect()
        })
    }

    fn events_since(&self, seq: i64, limit: usize) -> StoreResult<Vec<(String, Event)>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read_one(move |conn| {
            conn.rows(
                "SELECT thread, seq, kind, data, at FROM events WHERE seq > $1 ORDER BY seq LIMIT $2",
                &[&seq, &limit],
            )?
            .iter()
            .map(event_row)
            .collect()
        })
    }

    fn events(&self, thread: &str, after: i64) -> StoreResult<Vec<Event>> {
        let thread = thread.to_owned();
        self.read(move |conn| {
            require_thread(conn, &thread)?;
            conn.rows(
                "SELECT thread, seq, kind, data, at FROM events WHERE thread = $1 AND seq > $2
                 ORDER BY seq",
                &[&thread, &after],
            )?
            .iter()
            .map(|row| event_row(row).map(|(_, e)| e))
            .collect()
        })
    }

    fn stat(&self, thread: &str, path: &FsPath) -> StoreResult<Option<FileStat>> {
        let (thread, path) = (thread.to_owned(), path.clone());
        self.read(move |conn| {
            require_thread(conn, &thread)?;
            files::stat(conn, &thread, &path)
        })
    }

    fn read_file(&self, thread: &str, path: &FsPath) -> StoreResult<Vec<u8>> {
        let (thread, path) = (thread.to_owned(), path.clone());
        self.read(move |conn| {
            require_thread(conn, &thread)?;
            let mut out = Vec::new();
            files::stream(conn, &thread, &path, &mut |chunk| {
                out.extend_from_slice(chunk)
            })?;
            Ok(out)
        })
    }

    fn stream_file(
        &self,
        thread: &str,
        path: &FsPath,
        sink: &mut dyn FnMut(&[u8]),
    ) -> StoreResult<FileStat> {
        // The sink is the caller's and stays on its thread: the chunks come over a channel from
        // the reader's one snapshot, at most a few at a time.
        let (thread, path) = (thread.to_owned(), path.clone());
        let (chunks, arriving) = std::sync::mpsc::sync_channel::<Vec<u8>>(2);
        let reads = self.reads.clone().ok_or_else(super::gone)?;
        let (reply, outcome) = std::sync::mpsc::sync_channel(1);
        let mut sent = false;
        let job: super::ReadJob = Box::new(move |conn, last_try| {
            let result = match conn {
                Ok(conn) => {
                    let result = super::snapshot(conn, |conn| {
                        require_thread(conn, &thread)?;
                        files::stream(conn, &thread, &path, &mut |chunk| {
                            sent = true;
                            let _ = chunks.send(chunk.to_vec());
                        })
                    });
                    // Once a chunk went out the read is not begun again: it would send it twice.
                    if result.is_err() && conn.is_closed() && !last_try && !sent {
                        return false;
                    }
                    result
                }
                Err(e) => Err(e),
            };
            let _ = reply.send(result);
            true
        });
        reads.send(job).map_err(|_| super::gone())?;
        for chunk in arriving {
            sink(&chunk);
        }
        outcome.recv().map_err(|_| super::gone())?
    }

    fn file_chunk(
        &self,
        thread: &str,
        path: &FsPath,
        index: u64,
    ) -> StoreResult<(FileStat, Option<Vec<u8>>)> {
        let (thread, path) = (thread.to_owned(), path.clone());
        self.read(move |conn| {
            require_thread(conn, &thread)?;
            files::chunk(conn, &thread, &path, index)
        })
    }

    fn readdir(&self, thread: &str, path: &FsPath) -> StoreResult<Vec<FileStat>> {
        let (thread, path) = (thread.to_owned(), path.clone());
        self.read(move |conn| {
            require_thread(conn, &thread)?;
            files::readdir(conn, &thread, &path)
        })
    }

    fn find(&self, thread: &str, under: &FsPath, pattern: &str) -> StoreResult<Vec<FileStat>> {
        let (thread, under, pattern) = (thread.to_owned(), under.clone(), pattern.to_owned());
        self.read(move |conn| {
            require_thread(conn, &thread)?;
            files::find(conn, &thread, &under, &pattern)
        })
    }

    fn grep(
        &self,
        thread: &str,
        under: &FsPath,
        needle: &str,
        limit: usize,
    ) -> StoreResult<Vec<GrepMatch>> {
        let (thread, under, needle) = (thread.to_owned(), under.clone(), needle.to_owned());
        self.read(move |conn| {
            require_thread(conn, &thread)?;
            files::grep(conn, &thread, &under, &needle, limit)
        })
    }
}
