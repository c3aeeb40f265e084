//! The messages of recently run threads, kept in memory between runs, so that a run reads from
//! the store only what was stored since the last one: the cost of a step does not grow with the
//! thread (an MCP session's calls, a long chat).
//!
//! The store stays the truth. A kept history is taken by the run that owns the thread (or a
//! caller that only reads it), brought up to date with the messages stored after the last one
//! it holds, and checked against the store's [`MessageTally`] (how many messages, the sum of
//! their positions): a message removed, or one stored by another process that was missed, makes
//! the tally differ, and the thread is read whole instead. What is kept is given back after a
//! run that ended well; a run that failed gives nothing back. A caller that only reads a thread
//! (`Runtime::read_history`) reads through a kept history and gives it back, and keeps none it
//! did not find. At most [`MAX_KEPT`] threads and [`MAX_KEPT_MESSAGES`] messages in all are
//! kept; one more pushes out those given back longest ago.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use toolhost_store::{AsyncStore, Message, MessageTally, StoreResult};

/// The most threads whose messages are kept.
pub const MAX_KEPT: usize = 256;
/// The most messages kept in all.
pub const MAX_KEPT_MESSAGES: usize = 200_000;

/// A thread's messages in order, with what a run asks of them at every step kept up to date as
/// they grow: which calls have a result, and the tally the store is checked against.
#[derive(Debug, Default, Clone)]
pub(super) struct History {
    messages: Vec<Message>,
    answered: HashSet<String>,
    tally: MessageTally,
}

impl History {
    /// The history of these messages.
    fn of(messages: Vec<Message>) -> Self {
        let mut history = Self::default();
        history.extend(messages);
        history
    }

    /// The messages, in order.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The ids of the calls that have a result.
    pub fn answered(&self) -> &HashSet<String> {
        &self.answered
    }

    /// Appends a stored message.
    pub fn push(&mut self, m: Message) {
        if let Some(id) = &m.tool_call_id {
            self.answered.insert(id.clone());
        }
        self.tally.count += 1;
        self.tally.seq_sum += m.seq;
        self.messages.push(m);
    }

    fn extend(&mut self, messages: Vec<Message>) {
        self.messages.reserve(messages.len());
        for m in messages {
            self.push(m);
        }
    }

    fn len(&self) -> usize {
        self.messages.len()
    }
}

/// The kept histories (see the module's page).
#[derive(Debug, Default)]
pub(super) struct Histories {
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    /// Each thread's history, with when it was given back (a count of gifts).
    by_thread: HashMap<String, (u64, History)>,
    gifts: u64,
}

impl Histories {
    /// The thread's history, up to date: the kept one with what was stored since, or the
    /// thread read whole. Nothing of the thread stays kept until it is given back.
    pub(super) async fn take(&self, db: &AsyncStore, thread: &str) -> StoreResult<History> {
        match self.take_kept(db, thread).await? {
            Some(history) => Ok(history),
            None => Ok(History::of(db.messages(thread).await?)),
        }
    }

    /// The thread's kept history with what was stored since, if one is kept and it still
    /// agrees with the store; `None` otherwise. Nothing of the thread stays kept until it is
    /// given back.
    async fn take_kept(&self, db: &AsyncStore, thread: &str) -> StoreResult<Option<History>> {
        let kept = self
            .kept
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .by_thread
            .remove(thread);
        if let Some((_, mut history)) = kept {
            let last = history.messages.last().map_or(0, |m| m.seq);
            let id = thread.to_owned();
            let (newer, tally) = db
                .run_blocking(move |store| {
                    let newer = store.messages_after(&id, last)?;
                    Ok((newer, store.message_tally(&id)?))
                })
                .await?;
            let with_newer = MessageTally {
                count: history.tally.count + newer.len() as u64,
                seq_sum: history.tally.seq_sum + newer.iter().map(|m| m.seq).sum::<i64>(),
            };
            if tally == with_newer {
                history.extend(newer);
                return Ok(Some(history));
            }
        }
        Ok(None)
    }

    /// Keeps the thread's history, as taken and grown, for its next run.
    pub(super) fn keep(&self, thread: &str, history: History) {
        if history.len() > MAX_KEPT_MESSAGES {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.by_thread.remove(thread);
        let mut held: usize = kept.by_thread.values().map(|(_, h)| h.len()).sum();
        while kept.by_thread.len() >= MAX_KEPT || held + history.len() > MAX_KEPT_MESSAGES {
            // The one given back longest ago: a thread that keeps running stays kept.
            let oldest = kept
                .by_thread
                .iter()
                .min_by_key(|(_, (given, _))| *given)
                .map(|(id, _)| id.clone());
            let Some(oldest) = oldest else { break };
            held -= kept.by_thread.remove(&oldest).map_or(0, |(_, h)| h.len());
        }
        kept.gifts += 1;
        let given = kept.gifts;
        kept.by_thread.insert(thread.to_owned(), (given, history));
    }
}

impl super::Runtime {
    /// What `read` makes of `thread`'s messages. After a run of this process ended well (it
    /// gave its history back), this reads only what was stored since and the tally, and gives
    /// the history back again; otherwise it reads the thread and keeps nothing (a thread this
    /// process does not run, or one a run holds now, takes no room from those it runs). A
    /// caller that waits for a run's result (a parent, an agent's tool) builds it from here.
    pub(super) async fn read_history<T>(
        &self,
        thread: &str,
        read: impl FnOnce(&[Message]) -> T,
    ) -> StoreResult<T> {
        let histories = &self.process.histories;
        match histories.take_kept(&self.services.db, thread).await? {
            Some(history) => {
                let made = read(history.messages());
                histories.keep(thread, history);
                Ok(made)
            }
            None => Ok(read(&self.services.db.messages(thread).await?)),
        }
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

    /// An in-memory store with one empty thread.
    fn a_thread() -> (Arc<dyn Store>, AsyncStore, String) {
        let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
        let thread = store
            .create_thread(NewThread {
                agent: "a".into(),
                ..NewThread::default()
            })
            .unwrap()
            .id;
        (store.clone(), AsyncStore::new(store), thread)
    }

    fn texts(messages: &[Message]) -> Vec<&str> {
        messages
            .iter()
            .map(|m| m.content.as_deref().unwrap_or_default())
            .collect()
    }

    #[tokio::test]
    async fn a_kept_history_is_brought_up_to_date_and_read_whole_when_one_was_removed() {
        let (store, db, thread) = a_thread();
        store
            .apply(&thread, vec![said("one"), said("two")])
            .unwrap();
        let histories = Histories::default();
        let first = histories.take(&db, &thread).await.unwrap();
        assert_eq!(texts(first.messages()), ["one", "two"]);
        histories.keep(&thread, first);

        // Stored since (by anyone): read after the last kept message.
        store.apply(&thread, vec![said("three")]).unwrap();
        let second = histories.take(&db, &thread).await.unwrap();
        assert_eq!(texts(second.messages()), ["one", "two", "three"]);
        // Taken: nothing is kept until it is given back.
        assert!(histories.kept.lock().unwrap().by_thread.is_empty());
        let removed = second.messages()[0].id.clone();
        histories.keep(&thread, second);

        // A message removed by someone else: the tally differs, the thread is read whole.
        store
            .apply(&thread, vec![Write::DeleteMessage(removed), said("four")])
            .unwrap();
        let third = histories.take(&db, &thread).await.unwrap();
        assert_eq!(texts(third.messages()), ["two", "three", "four"]);

        // A kept history that missed a message (kept without it): read whole too.
        let mut without = third.messages().to_vec();
        without.remove(1);
        histories.keep(&thread, History::of(without));
        let fourth = histories.take(&db, &thread).await.unwrap();
        assert_eq!(texts(fourth.messages()), ["two", "three", "four"]);
        assert_eq!(fourth.tally, MessageTally::of(fourth.messages()));
    }

    #[tokio::test]
    async fn only_a_kept_history_is_taken_for_a_reader() {
        let (store, db, thread) = a_thread();
        store.apply(&thread, vec![said("one")]).unwrap();
        let histories = Histories::default();
        // Not kept: a reader gets nothing from here, and nothing is kept for it.
        assert!(histories.take_kept(&db, &thread).await.unwrap().is_none());
        assert!(histories.kept.lock().unwrap().by_thread.is_empty());
        // Kept by a run: a reader takes it, up to date.
        histories.keep(&thread, histories.take(&db, &thread).await.unwrap());
        store.apply(&thread, vec![said("two")]).unwrap();
        let taken = histories.take_kept(&db, &thread).await.unwrap().unwrap();
        assert_eq!(texts(taken.messages()), ["one", "two"]);
    }

    #[test]
    fn a_history_knows_which_calls_have_a_result_as_it_grows() {
        let message = |seq: i64, result_of: Option<&str>| Message {
            id: format!("m{seq}"),
            seq,
            role: Role::Tool,
            content: None,
            name: None,
            tool_calls: Vec::new(),
            tool_call_id: result_of.map(str::to_owned),
            created_at: 0,
            parent_id: None,
            depth: 0,
            silent: false,
            metadata: Default::default(),
            status: None,
        };
        let mut history = History::of(vec![message(1, None), message(2, Some("c1"))]);
        history.push(message(5, Some("c2")));
        let answered: Vec<&str> = {
            let mut ids: Vec<&str> = history.answered().iter().map(String::as_str).collect();
            ids.sort_unstable();
            ids
        };
        assert_eq!(answered, ["c1", "c2"]);
        assert_eq!(
            history.tally,
            MessageTally {
                count: 3,
                seq_sum: 8
            }
        );
    }

    #[test]
    fn the_history_given_back_longest_ago_is_pushed_out_first() {
        let histories = Histories::default();
        for n in 0..MAX_KEPT {
            histories.keep(&format!("t{n}"), History::default());
        }
        // t0 runs again: given back last, it stays; t1 is now the oldest.
        histories.keep("t0", History::default());
        histories.keep("new", History::default());
        let kept = histories.kept.lock().unwrap();
        assert_eq!(kept.by_thread.len(), MAX_KEPT);
        assert!(kept.by_thread.contains_key("t0") && kept.by_thread.contains_key("new"));
        assert!(!kept.by_thread.contains_key("t1"));
    }
}
