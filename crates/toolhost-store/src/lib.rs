//! # toolhost-store: durable storage
//!
//! The [`Store`] trait and its backends. SQLite ([`SqliteStore`]) is the embedded default;
//! PostgreSQL (`PostgresStore`, feature `postgres`), for many nodes on one database, implements
//! the same trait and passes the same conformance suite unchanged (the `conformance` module,
//! behind the feature of that name).
//!
//! ## Contract
//! - **Batches are atomic and durable.** [`Store::apply`] writes a list of [`Write`]s in one
//!   transaction: when it returns `Ok`, all of them survive a crash or power loss (SQLite runs in
//!   WAL mode with `synchronous=FULL`); when it returns `Err`, none of them happened. The runtime
//!   groups a step's writes (the assistant message, the call journal, results, dequeued work)
//!   into as few batches as the durability contract allows.
//! - **History is append-only and ordered.** Messages, queued items and events get strictly
//!   increasing positions (`seq`) in append order; appending never rewrites earlier rows.
//! - **The call journal:** a call's intent is recorded before it runs; its result is stored as a
//!   tool message in the same transaction that marks the call completed, so a result never
//!   exists without its journal entry, and a completed call is never completed twice.
//! - **Files are confined and whole.** Paths are normalised by [`path::normalize`]; `..`,
//!   control characters and backslashes are refused with an error naming the path. Files over
//!   [`CHUNK_SIZE`] bytes are stored in chunks and read back whole (or streamed chunk by chunk)
//!   from one consistent snapshot; a read never returns part of a file.
//! - **Schema versions:** migrations run on open; a database from a newer toolhost is refused
//!   with [`StoreError::SchemaTooNew`] and left untouched.
//! - **A thread has at most one owner** ([`lease`]): [`Store::claim`] is a compare-and-set in
//!   one transaction; a batch that starts with [`Write::CheckOwner`] is written only while its run
//!   still owns the thread. Lease times are the store's clock (SQLite: the local clock;
//!   PostgreSQL: the database server's).
//! - **Positions follow commits**, across every process (and node) that shares the store: a
//!   reader that saw position N never later finds a new row below N.
//! - **Opening is safe from many processes at once:** migrations run under the database's own
//!   write lock and are idempotent.
//! - Methods block on I/O. Async callers run them on a blocking thread ([`AsyncStore`] does),
//!   except on a store that waits for nothing ([`Store::runs_in_place`]: in memory).
//! - **Writes that arrive together may share one commit** (one writer thread per store, group
//!   commit); each batch still succeeds or fails alone.
//! - **Text may hold U+0000** (a program's output, a model's answer). PostgreSQL's text cannot:
//!   it keeps U+FFFD in its place, and binds lookups the same way, so what was written is found
//!   again; JSON is kept exactly on both backends.
//! - **Work may be offered to any node with room** ([`Store::offer_work`]): an offer is a hint
//!   beside the stored work, taken once; the work itself is what [`Store::threads_with_work`]
//!   finds.

mod async_store;
mod commits;
#[cfg(feature = "conformance")]
pub mod conformance;
#[cfg(feature = "postgres")]
pub mod copy;
pub mod digest;
mod error;
pub mod lease;
mod meta;
mod model;
pub mod page;
pub mod path;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
mod reply;
mod rows;
mod rules;
mod search;
pub mod secrets;
mod sqlite;
pub mod token;

pub use async_store::{AsyncStore, PendingApply};
pub use commits::{Committed, ThreadChanges};
pub use error::{StoreError, StoreResult};
pub use lease::{HeldLease, Lease, LeaseClaim};
pub use meta::{
    ArgumentRepair, ArgumentsEditor, EventKind, HookOutcome, MessageMeta, RanWith, Side,
};
pub use model::*;
pub use page::ThreadQuery;
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
pub use sqlite::{SqliteStore, WriteStats, SCHEMA_VERSION};
pub use token::{ApiToken, Credential};

/// Files larger than this many bytes are stored in chunks of this size (1.75 MB).
pub const CHUNK_SIZE: usize = 1_750_000;

use path::FsPath;
use serde_json::Value;

/// Durable storage for threads. Every method is safe to call from many threads at once.
pub trait Store: Send + Sync {
    /// Creates a thread with status `idle` (and a new random id unless `new.id` names one),
    /// applying `new.writes` in the same transaction.
    fn create_thread(&self, new: NewThread) -> StoreResult<Thread>;

    /// Makes `claim.owner` the thread's owner until `ttl_ms` from now: when nobody owns it, when
    /// the claimant owns it already (a renewal), when the lease expired, or when its owner is
    /// the one `claim.replacing` names. Otherwise fails with [`StoreError::ThreadOwned`], saying
    /// who owns it, and changes nothing.
    fn claim(&self, thread: &str, claim: &LeaseClaim) -> StoreResult<Lease>;

    /// Extends `owner`'s lease to `ttl_ms` from now; [`StoreError::LeaseLost`] when `owner` no
    /// longer holds it. The lease returned says whether a stop was requested.
    fn renew(&self, thread: &str, owner: &str, ttl_ms: Millis) -> StoreResult<Lease>;

    /// Gives up `owner`'s lease; returns whether `owner` held it (a no-op otherwise).
    fn release(&self, thread: &str, owner: &str) -> StoreResult<bool>;

    /// Who owns the thread, if anyone (an expired lease is returned as it is).
    fn lease(&self, thread: &str) -> StoreResult<Option<Lease>>;

    /// Keeps many leases of one process at once: renews each one whose `ttl_ms` is set (to that
    /// long from now) and reads the others, in one round trip and at most one commit. For each,
    /// in order: the lease when its `owner` still holds it (saying whether a stop was
    /// requested), `None` when the owner lost it. One run's lease is [`Store::renew`]; this is
    /// for a process that runs many threads, so that keeping them costs one call per tick.
    fn keep_leases(&self, held: &[HeldLease]) -> StoreResult<Vec<Option<Lease>>> {
        held.iter()
            .map(|h| match h.ttl_ms {
                Some(ttl) => match self.renew(&h.thread, &h.owner, ttl) {
                    Ok(lease) => Ok(Some(lease)),
                    Err(StoreError::LeaseLost { .. }) => Ok(None),
                    Err(e) => Err(e),
                },
                None => Ok(self.lease(&h.thread)?.filter(|l| l.owner == h.owner)),
            })
            .collect()
    }

    /// Asks the thread's owner to stop; returns whether a lease that has not expired exists.
    fn request_stop(&self, thread: &str) -> StoreResult<bool>;

    /// The thread with this id.
    fn thread(&self, id: &str) -> StoreResult<Thread>;

    /// All threads, newest first; with `parent`, only that thread's children.
    fn threads(&self, parent: Option<&str>) -> StoreResult<Vec<Thread>>;

    /// Applies `writes` to `thread` atomically and durably, in order.
    fn apply(&self, thread: &str, writes: Vec<Write>) -> StoreResult<Applied>;

    /// Deletes the thread and its subtree (its child threads, theirs, and so on), each with
    /// everything of it (messages, tool results, the call journal, approvals, variables and
    /// their requests, queued work, events, values, files and their chunks, its lease), in one
    /// transaction. Refused, changing nothing, while a lease that has not expired is held on
    /// any thread of the subtree ([`StoreError::ThreadOwned`] names that thread: a live run is
    /// never deleted under itself).
    fn delete_thread(&self, id: &str) -> StoreResult<()>;

    /// Starts [`Store::apply`] without blocking the calling thread, for a backend whose writes
    /// can be awaited (SQLite hands them to its writer thread); the future resolves once the
    /// batch is durable. A backend that cannot gives the writes back, and [`AsyncStore`] then
    /// runs `apply` on a blocking thread.
    fn apply_nonblocking(
        &self,
        thread: &str,
        writes: Vec<Write>,
    ) -> Result<PendingApply, Vec<Write>> {
        let _ = thread;
        Err(writes)
    }

    /// The commits that wrote to threads, each with the threads it wrote to: on PostgreSQL
    /// those of every node of the same database (this process's own included, by
    /// `LISTEN/NOTIFY`), on SQLite those of this process (another process writing to the same
    /// file is not heard); `None` for a backend that cannot tell. A follower of what is stored
    /// waits on it instead of polling, and polls only for what it cannot hear (slowly); a
    /// notice says "read again", and what is stored says what changed. A receiver that falls
    /// behind should read everything it follows again.
    fn commits(&self) -> Option<tokio::sync::broadcast::Receiver<std::sync::Arc<Committed>>> {
        None
    }

    /// How many writes the store applied and in how many commits, for a backend that counts
    /// them (SQLite does); `None` for one that does not.
    fn write_stats(&self) -> Option<WriteStats> {
        None
    }

    /// Whether a call made now would finish in microseconds on the caller's thread, waiting for
    /// no disk, network, other process or other call (an in-memory store that no other call is
    /// using): [`AsyncStore`] then makes the call in place instead of handing it to another
    /// thread and back, which would cost more than the call itself. A hint: the answer may be
    /// stale by the time the call is made.
    fn runs_in_place(&self) -> bool {
        false
    }

    /// Stores a new API token; [`StoreError::TokenExists`] when its id is taken.
    fn create_token(&self, token: &ApiToken) -> StoreResult<()>;

    /// The token with this id, revoked or not.
    fn token(&self, id: &str) -> StoreResult<Option<ApiToken>>;

    /// Every token, oldest first.
    fn tokens(&self) -> StoreResult<Vec<ApiToken>>;

    /// Revokes a token; `false` when there is none with this id or it was revoked before.
    fn revoke_token(&self, id: &str) -> StoreResult<bool>;

    /// The project's credential `name` (its value as its writer sealed it, and its version),
    /// if one is stored.
    fn credential(&self, name: &str) -> StoreResult<Option<Credential>>;

    /// Stores `value` as credential `name` if its stored version is still `expected` (`None`:
    /// none is stored); the new version, or `None`, changing nothing, when another write came
    /// first. Versions only grow, a removal included: a writer that read a credential before
    /// it was removed (and perhaps stored again) can never write over it.
    fn put_credential(
        &self,
        name: &str,
        value: &str,
        expected: Option<i64>,
    ) -> StoreResult<Option<i64>>;

    /// Removes credential `name` (its version still grows); `false` when there was none.
    fn delete_credential(&self, name: &str) -> StoreResult<bool>;

    /// The thread's messages in order.
    fn messages(&self, thread: &str) -> StoreResult<Vec<Message>>;

    /// One page of threads, newest first, as `query` asks ([`StoreError::ThreadNotFound`] when
    /// its `after` names no thread).
    fn thread_page(&self, query: &ThreadQuery) -> StoreResult<Vec<Thread>>;

    /// The ids of the threads that have work no run may be doing, oldest first: those
    /// `running` (their run may have died with its process); those with queued messages or
    /// tools, whatever their status (`idle`, `done` or `failed`: work accepted just before a
    /// crash), except `paused` ones that still wait for a person (their queue is taken up with
    /// the decision); `paused` ones whose every approval is decided and every variable request
    /// answered (the answer was stored, its run never happened); and idle ones whose last
    /// message is a person's that nothing answered. One query over the work itself, whatever
    /// the number of threads: what a server takes up when it starts.
    fn threads_with_work(&self) -> StoreResult<Vec<String>>;

    /// Those of [`Store::threads_with_work`] that no lease live on the store's clock holds:
    /// what a node may take up now (a dead node's threads once their leases expired), in the
    /// same one query.
    fn threads_with_unowned_work(&self) -> StoreResult<Vec<String>>;

    /// Offers the work stored for `thread` to whichever node has room for it: a node that
    /// stored work it has no room to run leaves an offer here. An offer is a hint, not the work
    /// (that is stored with the thread, and [`Store::threads_with_work`] finds it whatever
    /// becomes of the offer); offering a thread that is on offer already changes nothing. Nodes
    /// that listen (see [`Store::work_offers`]) hear of it as it commits.
    fn offer_work(&self, thread: &str) -> StoreResult<()>;

    /// Takes up to `limit` threads on offer, the oldest offers first, and removes their
    /// offers: the taker runs them. Two nodes taking at once never take the same thread, and
    /// neither waits for the other.
    fn take_offered_work(&self, limit: usize) -> StoreResult<Vec<String>>;

    /// A count that grows whenever a node of the same database offers work, for a backend that
    /// can tell (PostgreSQL, by `LISTEN/NOTIFY`); `None` for one that cannot (a node then finds
    /// offers when it looks: as a run of its own ends, or at its next sweep).
    fn work_offers(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }

    /// At most `limit` of the thread's messages after position `after`, in order.
    fn message_page(&self, thread: &str, after: i64, limit: usize) -> StoreResult<Vec<Message>>;

    /// The thread's messages after position `seq`, in order.
    fn messages_after(&self, thread: &str, seq: i64) -> StoreResult<Vec<Message>>;

    /// How many messages the thread holds and the sum of their positions: what a reader that
    /// keeps a thread's messages between reads compares with what it kept, to tell that one was
    /// removed or missed without reading them all.
    fn message_tally(&self, thread: &str) -> StoreResult<MessageTally> {
        let messages = self.messages(thread)?;
        Ok(MessageTally::of(&messages))
    }

    /// The thread's call journal, in intent order.
    fn calls(&self, thread: &str) -> StoreResult<Vec<CallRecord>>;

    /// One call's journal entry.
    fn call(&self, thread: &str, call_id: &str) -> StoreResult<Option<CallRecord>>;

    /// A durable value.
    fn value(&self, thread: &str, key: &str) -> StoreResult<Option<Value>>;

    /// All durable values, by key.
    fn values(&self, thread: &str) -> StoreResult<Vec<(String, Value)>>;

    /// The queued work, in order.
    fn queued(&self, thread: &str) -> StoreResult<Vec<Queued>>;

    /// The thread's approval requests and decisions, in request order.
    fn approvals(&self, thread: &str) -> StoreResult<Vec<ApprovalRecord>>;

    /// The thread's variables, by name (secrets sealed, as stored).
    fn variables(&self, thread: &str) -> StoreResult<Vec<StoredVariable>>;

    /// The thread's variable requests, in request order.
    fn variable_requests(&self, thread: &str) -> StoreResult<Vec<VariableRequest>>;

    /// The messages of every thread after position `seq`, in order, at most `limit`, each with
    /// its thread's id: for followers of all threads.
    fn messages_since(&self, seq: i64, limit: usize) -> StoreResult<Vec<(String, Message)>>;

    /// The events of every thread after position `seq`, in order, at most `limit`, each with its
    /// thread's id.
    fn events_since(&self, seq: i64, limit: usize) -> StoreResult<Vec<(String, Event)>>;

    /// The events after position `after`, in order.
    fn events(&self, thread: &str, after: i64) -> StoreResult<Vec<Event>>;

    /// What is at `path`, if anything (the root is always a folder).
    fn stat(&self, thread: &str, path: &FsPath) -> StoreResult<Option<FileStat>>;

    /// A whole file.
    fn read_file(&self, thread: &str, path: &FsPath) -> StoreResult<Vec<u8>>;

    /// A file chunk by chunk, from one snapshot; `sink` sees every chunk in order.
    fn stream_file(
        &self,
        thread: &str,
        path: &FsPath,
        sink: &mut dyn FnMut(&[u8]),
    ) -> StoreResult<FileStat>;

    /// The file's stat and its chunk `index` (the bytes from `index * CHUNK_SIZE` to the next
    /// chunk), read together from one snapshot; `None` past the last chunk. A reader that sends
    /// a large file a chunk at a time holds no read open between chunks, and compares each
    /// stat with the first to know the file did not change under it.
    fn file_chunk(
        &self,
        thread: &str,
        path: &FsPath,
        index: u64,
    ) -> StoreResult<(FileStat, Option<Vec<u8>>)>;

    /// The entries directly inside a folder, by name.
    fn readdir(&self, thread: &str, path: &FsPath) -> StoreResult<Vec<FileStat>>;

    /// Entries under `under` whose name matches `pattern` (`*` any run, `?` one character).
    fn find(&self, thread: &str, under: &FsPath, pattern: &str) -> StoreResult<Vec<FileStat>>;

    /// Lines containing `needle` in the text files under `under`, at most `limit` of them.
    fn grep(
        &self,
        thread: &str,
        under: &FsPath,
        needle: &str,
        limit: usize,
    ) -> StoreResult<Vec<GrepMatch>>;
}
