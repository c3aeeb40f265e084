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
//! [`MAX_KEPT_MESSAGES`] messages in all are kept; one more pushes out those given back
//! longest ago.

use std::collections::HashMap;
use std::sync::Mutex;
use toolhost_store::{AsyncStore, Message, MessageTally, StoreResult};

/// The most threads whose messages are kept.
pub const MAX_KEPT: usize = 256;
/// The most messages kept, all threads together.
pub const MAX_KEPT_MESSAGES: usize = 200_000;

/// Kept histories, by thread id, each with when it was given back (a count of gifts).
#[derive(Debug, Default)]
pub(super) struct Histories {
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    by_thread: HashMap<String, (u64, Vec<Message>)>,
    gifts: u64,
}

impl Histories {
    /// The thread's messages, in order: what is kept brought up to date, or all of them read.
    /// Nothing stays kept for the thread until it is given back with [`Histories::keep`].
    pub(super) async fn take(&self, db: &AsyncStore, thread: &str) -> StoreResult<Vec<Message>> {
        let kept = self
            .kept
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .by_thread
            .remove(thread);
        if let Some((_, mut messages)) = kept {
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
        kept.by_thread.remove(thread);
        let mut held: usize = kept.by_thread.values().map(|(_, m)| m.len()).sum();
        while kept.by_thread.len() >= MAX_KEPT || held + messages.len() > MAX_KEPT_MESSAGES {
            // The one given back longest ago: a thread that keeps running stays kept.
            let oldest = kept
                .by_thread
                .iter()
                .min_by_key(|(_, (given, _))| *given)
                .map(|(id, _)| id.clone());
            let Some(oldest) = oldest else { break };
            held -= kept.by_thread.remove(&oldest).map_or(0, |(_, m)| m.len());
        }
        kept.gifts += 1;
        let given = kept.gifts;
        kept.by_thread.insert(thread.to_owned(), (given, messages));
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
        assert!(histories.kept.lock().unwrap().by_thread.is_empty());
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

    #[test]
    fn the_history_given_back_longest_ago_is_pushed_out_first() {
        let histories = Histories::default();
        for n in 0..MAX_KEPT {
            histories.keep(&format!("t{n}"), Vec::new());
        }
        // t0 runs again: given back last, it stays; t1 is now the oldest.
        histories.keep("t0", Vec::new());
        histories.keep("new", Vec::new());
        let kept = histories.kept.lock().unwrap();
        assert_eq!(kept.by_thread.len(), MAX_KEPT);
        assert!(kept.by_thread.contains_key("t0") && kept.by_thread.contains_key("new"));
        assert!(!kept.by_thread.contains_key("t1"));
    }
}
