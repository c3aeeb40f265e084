//! Stopping a thread's run: at once (a person's stop, which interrupts a running program or
//! `runCode` run) or gracefully (a server shutting down, which lets the operation under way
//! finish and be stored). Either way nothing new starts and the model is not asked again.

use super::Runtime;

impl Runtime {
    /// Asks the run of `thread_id` that this runtime runs to stop after the operation under way,
    /// letting a running program or `runCode` run finish (a server shutting down); returns
    /// whether this runtime runs it. A later [`Runtime::stop`] still interrupts it.
    pub fn stop_gracefully(&self, thread_id: &str) -> bool {
        self.stop_after_operation(thread_id, false)
    }

    /// Like [`Runtime::stop_gracefully`], and the run hands the thread on as it stops: its turn
    /// is left `running`, work that any process of the store takes up (a server's start, a
    /// node's sweep), instead of `idle` until someone runs it. For a node that stops while
    /// other nodes share its store. Returns whether this runtime runs the thread.
    pub fn hand_back(&self, thread_id: &str) -> bool {
        self.stop_after_operation(thread_id, true)
    }

    fn stop_after_operation(&self, thread_id: &str, hand_back: bool) -> bool {
        let running = self
            .process
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let Some(entry) = running.get(thread_id) else {
            return false;
        };
        if hand_back {
            entry
                .hand_back
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        entry.signal.abort_gracefully();
        true
    }

    /// Whether the run of `thread_id` in this process hands the thread on as it stops.
    pub(super) fn hands_back(&self, thread_id: &str) -> bool {
        self.process
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(thread_id)
            .is_some_and(|entry| {
                entry.hand_back.load(std::sync::atomic::Ordering::SeqCst)
                    && !entry.signal.is_interrupted()
            })
    }

    /// Asks the run that owns a thread to stop, wherever it runs: a run in this process sees
    /// its abort signal at once, a run elsewhere at its next look at the store (within a
    /// quarter of a second). It stops after the operation under way (a model request or a tool
    /// call, which sees the raised signal): once the calls under way have their results the
    /// model is not asked again, and an answer that arrives after the stop is kept only when it
    /// makes no calls (one with calls is dropped, with a `reply_discarded` event, and asked for
    /// again when the thread is resumed). A running program (a process activity) or `runCode`
    /// run is interrupted: the program's process group gets SIGTERM, then SIGKILL after a grace
    /// period, the sandbox run is terminated, and the call ends with an error saying so
    /// ([`Runtime::stop_gracefully`] lets them finish). Returns whether a live run owned the
    /// thread.
    pub async fn stop(&self, thread_id: &str) -> bool {
        {
            let running = self
                .process
                .running
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if let Some(entry) = running.get(thread_id) {
                entry.signal.abort();
                return true;
            }
        }
        match self.services.db.request_stop(thread_id).await {
            Ok(owned) => owned,
            Err(e) => {
                tracing::warn!(thread = thread_id, error = %e, "the stop request was not stored");
                false
            }
        }
    }
}
