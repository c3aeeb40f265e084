//! Results handed to whoever waits for a call, as values.
//!
//! A caller that made a call and runs its thread (an MCP client's call) says so first
//! ([`Runtime::expect_result`]); the run that stores the call's result hands it over as it
//! commits it, so the caller gets the very message stored, without reading the thread back. The
//! store stays the source of truth: a result stored elsewhere (another process's run, or before
//! the caller said it waits) is not handed over, and the caller reads it from the thread.

use super::Runtime;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;
use toolhost_store::Message;

/// A call: its thread and its id.
type CallKey = (String, String);

/// Who waits for the result of which call.
#[derive(Default, Clone)]
pub(super) struct CallResults {
    waiting: Arc<Mutex<Waiting>>,
    /// How many wait (changed under the lock), so that a commit with no one waiting takes no
    /// lock.
    count: Arc<AtomicUsize>,
}

#[derive(Default)]
struct Waiting {
    /// The number of the next wait: a wait removes only its own entry, not a later wait's
    /// for the same call.
    next: u64,
    senders: HashMap<CallKey, (u64, oneshot::Sender<Message>)>,
}

impl CallResults {
    /// Hands the result messages among `stored` (just committed to `thread_id`) to whoever
    /// waits for them.
    pub(super) fn deliver(&self, thread_id: &str, stored: &[Message]) {
        if self.count.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut waiting = self.lock();
        for message in stored {
            let Some(call_id) = &message.tool_call_id else {
                continue;
            };
            let key = (thread_id.to_owned(), call_id.clone());
            if let Some((_, sender)) = waiting.senders.remove(&key) {
                self.count.fetch_sub(1, Ordering::AcqRel);
                // The caller may have stopped waiting: the message stays stored all the same.
                let _ = sender.send(message.clone());
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        // A map of senders is sound whatever a panicking holder left in it.
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The result of one call, once a run of this runtime stores it ([`Runtime::expect_result`]).
/// Dropping it stops the waiting.
pub struct ExpectedResult {
    key: CallKey,
    number: u64,
    receiver: oneshot::Receiver<Message>,
    results: CallResults,
}

impl ExpectedResult {
    /// The call's result message, if a run of this runtime stored it since the wait began.
    pub fn take(&mut self) -> Option<Message> {
        self.receiver.try_recv().ok()
    }
}

impl Drop for ExpectedResult {
    fn drop(&mut self) {
        let mut waiting = self.results.lock();
        if waiting
            .senders
            .get(&self.key)
            .is_some_and(|(number, _)| *number == self.number)
        {
            waiting.senders.remove(&self.key);
            self.results.count.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Runtime {
    /// Waits for the result of call `call_id` of thread `thread_id` as a value: a run of this
    /// runtime that stores it hands it over. Say so before running the thread; a result stored
    /// before, or by another process, is read from the thread instead
    /// ([`Runtime::call_result`]).
    pub fn expect_result(&self, thread_id: &str, call_id: &str) -> ExpectedResult {
        let (sender, receiver) = oneshot::channel();
        let key = (thread_id.to_owned(), call_id.to_owned());
        let mut waiting = self.process.call_results.lock();
        waiting.next += 1;
        let number = waiting.next;
        // A later wait for the same call takes its place: the earlier one reads the thread.
        let replaced = waiting.senders.insert(key.clone(), (number, sender));
        if replaced.is_none() {
            self.process
                .call_results
                .count
                .fetch_add(1, Ordering::AcqRel);
        }
        drop(waiting);
        ExpectedResult {
            key,
            number,
            receiver,
            results: self.process.call_results.clone(),
        }
    }
}
