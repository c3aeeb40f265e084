//! The messages of recently run threads, kept in memory between runs, so that a run reads from
//! the store only what was stored since the last one: the cost of a step does not grow with the
//! thread (an MCP session's calls, a long chat).
//!
//! The store stays the truth. A kept history is taken by the run that owns the thread (or a
//! caller that only reads it), brought up to date with the messages stored after the last one
//! it holds, and checked against the store's [`MessageTally`] (how many messages, the sum of
//! their positions): a message removed, or one stored by another process that was missed, makes
//! the tally differ, and the thread is read whole instead. What is kept is given back after a
//! run that ended well; a run that failed gives nothing back. At most [`MAX_KEPT`] threads and
//! [`MAX_KEPT_MESSAGES`] messages in all are kept; one more pushes out others.

use std::collections::HashMap;
use std::sync::Mutex;
use toolhost_store::{AsyncStore, Message, MessageTally, StoreResult};

/// The most threads whose messages are kept.
pub const MAX_KEPT: usize = 256;
/// The most messages kept, all threads together.
pub const MAX_KEPT_MESSAGES: usize = 200_000;

/// Kept histories, by thread id.
#[derive(Debug, Default)]
pub(super) struct Histories {
    kept: Mutex<HashMap<String, Vec<Message>>>,
}

impl Histories {
    /// The thread's messages, in order: what is kept brought up to date, or all of them read.
    /// Nothing stays kept for the thread until it is given back with [`Histories::keep`].
    pub(super) async fn take(&self, db: &AsyncStore, thread: &str) -> StoreResult<Vec<Message>> {
        let kept = self
            .kept
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(thread);
        if let Some(mut messages) = kept {
            let last = messages.last().map_or(0, |m| m.seq);
            let (id, expected) = (thread.to_owned(), MessageTally::of(&messages));
            let (newer, tally) = db
                .run_blocking(move |store| {
                    let newer = store.messages_after(&id, last)?;
                    Ok((newer, store.message_tally(&id)?))
                })
                .await?;
            let with_newer = MessageTally {
                count: expected.count + newer.len() as u64,
                seq_sum: expected.seq_sum + newer.iter().map(|m| m.seq).sum::<i64>(),
            };
            if tally == with_newer {
                messages.extend(newer);
                return Ok(messages);
            }
        }
        db.messages(thread).await
    }

    /// Keeps `messages` as the thread's history, as stored.
    pub(super) fn keep(&self, thread: &str, messages: Vec<Message>) {
        if messages.len() > MAX_KEPT_MESSAGES {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.remove(thread);
        let mut held: usize = kept.values().map(Vec::len).sum();
        while kept.len() >= MAX_KEPT || held + messages.len() > MAX_KEPT_MESSAGES {
            let Some(other) = kept.keys().next().cloned() else {
                break;
            };
            held -= kept.remove(&other).map_or(0, |m| m.len());
        }
        kept.insert(thread.to_owned(), messages);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use toolhost_store::{NewMessage, NewThread, Role, SqliteStore, Store, Write};

    fn said(text: &str) -> Write {
        Write::AppendMessage(NewMessage {
            role: Some(Role::User),
            content: Some(text.into()),
            ..NewMessage::default()
        })
    }

    fn texts(messages: &[Message]) -> Vec<&str> {
        messages
            .iter()
            .map(|m| m.content.as_deref().unwrap_or_default())
            .collect()
    }

    #[tokio::test]
    async fn a_kept_history_is_brought_up_to_date_and_read_whole_when_one_was_removed() {
        let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
        let db = AsyncStore::new(store.clone());
        let thread = store
            .create_thread(NewThread {
                agent: "a".into(),
                ..NewThread::default()
            })
            .unwrap()
            .id;
        store
            .apply(&thread, vec![said("one"), said("two")])
            .unwrap();
        let histories = Histories::default();
        let first = histories.take(&db, &thread).await.unwrap();
        assert_eq!(texts(&first), ["one", "two"]);
        histories.keep(&thread, first);

        // Stored since (by anyone): read after the last kept message.
        store.apply(&thread, vec![said("three")]).unwrap();
        let second = histories.take(&db, &thread).await.unwrap();
        assert_eq!(texts(&second), ["one", "two", "three"]);
        // Taken: nothing is kept until it is given back.
        assert!(histories.kept.lock().unwrap().is_empty());
        let removed = second[0].id.clone();
        histories.keep(&thread, second);

        // A message removed by someone else: the tally differs, the thread is read whole.
        store
            .apply(&thread, vec![Write::DeleteMessage(removed), said("four")])
            .unwrap();
        let third = histories.take(&db, &thread).await.unwrap();
        assert_eq!(texts(&third), ["two", "three", "four"]);

        // A kept history that missed a message (kept without it): read whole too.
        let mut missing = third.clone();
        missing.remove(1);
        histories.keep(&thread, missing);
        let fourth = histories.take(&db, &thread).await.unwrap();
        assert_eq!(texts(&fourth), ["two", "three", "four"]);
    }
}
