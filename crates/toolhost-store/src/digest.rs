//! A thread's digest: how many records of each kind it holds and one hash over all of them,
//! read through the [`Store`] trait, so that two stores of any backends can be compared (a copy
//! checked against its source).

use crate::error::StoreResult;
use crate::path::normalize;
use crate::Store;

/// What one thread holds, counted and hashed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadDigest {
    /// The thread's id.
    pub thread: String,
    /// Its messages.
    pub messages: usize,
    /// Its call journal's entries.
    pub calls: usize,
    /// Its events.
    pub events: usize,
    /// Its files and folders.
    pub files: usize,
    /// Its values, queued items, approvals, variables and variable requests, together.
    pub other: usize,
    /// FNV-1a over everything above (each record as the store returns it, files with their
    /// bytes), in the store's order; U+0000 in text counts as U+FFFD.
    pub hash: u64,
}

/// FNV-1a, 64 bits: stable across builds and platforms, which a digest printed for a person to
/// compare must be.
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }

    fn add(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
        // A separator, so that ("ab", "c") and ("a", "bc") differ.
        self.0 ^= 0xff;
        self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
    }

    /// Hashes `record` as its debug form shows it, U+0000 (shown `\0`) counted as U+FFFD,
    /// which is what a PostgreSQL store keeps in its place.
    fn record(&mut self, record: &impl std::fmt::Debug) {
        self.add(format!("{record:?}").replace("\\0", "\u{FFFD}").as_bytes());
    }
}

/// The digest of thread `id` in `store`.
pub fn thread_digest(store: &dyn Store, id: &str) -> StoreResult<ThreadDigest> {
    let mut hash = Fnv::new();
    hash.record(&store.thread(id)?);
    let messages = store.messages(id)?;
    messages.iter().for_each(|m| hash.record(m));
    let calls = store.calls(id)?;
    calls.iter().for_each(|c| hash.record(c));
    let events = store.events(id, 0)?;
    events.iter().for_each(|e| hash.record(e));
    let mut other = 0;
    for value in store.values(id)? {
        hash.record(&value);
        other += 1;
    }
    for queued in store.queued(id)? {
        hash.record(&queued);
        other += 1;
    }
    for approval in store.approvals(id)? {
        hash.record(&approval);
        other += 1;
    }
    for variable in store.variables(id)? {
        hash.record(&variable);
        other += 1;
    }
    for request in store.variable_requests(id)? {
        hash.record(&request);
        other += 1;
    }
    let root = normalize("/")?;
    let entries = store.find(id, &root, "*")?;
    for entry in &entries {
        hash.record(entry);
        if !entry.is_folder {
            let bytes = store.read_file(id, &normalize(&entry.path)?)?;
            hash.add(&bytes);
        }
    }
    Ok(ThreadDigest {
        thread: id.to_owned(),
        messages: messages.len(),
        calls: calls.len(),
        events: events.len(),
        files: entries.len(),
        other,
        hash: hash.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NewMessage, NewThread, Role, SqliteStore, Write};

    #[test]
    fn a_digest_changes_with_any_record_and_only_then() {
        let store = SqliteStore::in_memory().unwrap();
        let id = store.create_thread(NewThread::default()).unwrap().id;
        let first = thread_digest(&store, &id).unwrap();
        assert_eq!(first, thread_digest(&store, &id).unwrap());
        store
            .apply(
                &id,
                vec![Write::AppendMessage(NewMessage {
                    role: Some(Role::User),
                    content: Some("hi".into()),
                    ..NewMessage::default()
                })],
            )
            .unwrap();
        let second = thread_digest(&store, &id).unwrap();
        assert_eq!(second.messages, 1);
        assert_ne!(first.hash, second.hash);
    }
}
