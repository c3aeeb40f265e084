//! Running a thread: claiming it, running its steps (see [`super::runner`]) with the messages
//! kept from its last run, giving it up, and taking up work that arrived meanwhile.

use super::histories::History;
use super::outcome::{RunOutcome, StopReason, Waiting};
use super::ownership::{OwnerId, Ownership};
use super::runner::{Flow, Runner};
use super::{Runtime, RuntimeError};
use toolhost_core::tool::AbortSignal;
use toolhost_store::Write;

impl Runtime {
    /// Runs the thread until its turn ends (for a `dual_ai` agent: until its session ends).
    /// Safe to call again after a crash: it continues from what is stored.
    ///
    /// The run owns the thread while it runs (see [`Runtime::owner_of`]): when another live run
    /// owns it, nothing is read or changed and [`RuntimeError::ThreadBusy`] says who owns it.
    /// Work that arrives while the run ends (a queued message, a decision on the call it paused
    /// at) is taken up before it returns.
    pub async fn run(&self, thread_id: &str) -> Result<RunOutcome, RuntimeError> {
        let thread = self.services.db.thread(thread_id).await?;
        self.check_agent(&thread.agent)?;
        self.check_not_deferred(&thread).await?;
        let ownership = self.claim(thread_id).await?;
        let outcome = self.run_claimed(thread_id, ownership).await?;
        self.deliver_if_detached(&thread, &outcome).await?;
        Ok(outcome)
    }

    /// Like [`Runtime::run`], but waits while another run owns the thread, then runs it.
    pub async fn run_when_free(&self, thread_id: &str) -> Result<RunOutcome, RuntimeError> {
        let thread = self.services.db.thread(thread_id).await?;
        self.check_agent(&thread.agent)?;
        self.check_not_deferred(&thread).await?;
        let ownership = self.claim_when_free(thread_id).await?;
        let outcome = self.run_claimed(thread_id, ownership).await?;
        self.deliver_if_detached(&thread, &outcome).await?;
        Ok(outcome)
    }

    async fn run_claimed(
        &self,
        thread_id: &str,
        mut ownership: Ownership<'_>,
    ) -> Result<RunOutcome, RuntimeError> {
        loop {
            let outcome = self
                .run_with_children(thread_id, &ownership.owner, &ownership.abort)
                .await;
            if ownership.lost() {
                tracing::warn!(
                    thread = thread_id,
                    "the run lost the thread to another owner"
                );
            }
            // Released first, then looked at: whoever stores work after this look finds the
            // thread free and runs it; whoever stored it before is seen here. A stop that came
            // while the run ended is honoured: the thread is not taken again.
            let abort = ownership.abort.clone();
            ownership.release().await;
            let again = match &outcome {
                Ok(done) if !abort.is_aborted() => self.arrived_meanwhile(thread_id, done).await?,
                _ => false,
            };
            if !again {
                return outcome;
            }
            ownership = match self.claim(thread_id).await {
                Ok(next) => next,
                // Someone else took the thread and runs the new work.
                Err(RuntimeError::ThreadBusy { .. }) => return outcome,
                Err(e) => return Err(e),
            };
        }
    }

    /// Whether work for the thread arrived while its run ended: queued work after a finished
    /// turn, or the decision or variables a paused run waits for.
    async fn arrived_meanwhile(
        &self,
        thread_id: &str,
        outcome: &RunOutcome,
    ) -> Result<bool, RuntimeError> {
        Ok(match outcome {
            RunOutcome::Done(StopReason::Stopped) => false,
            RunOutcome::Done(_) => !self.services.db.queued(thread_id).await?.is_empty(),
            RunOutcome::Paused(Waiting::Approval(request)) => self
                .services
                .db
                .approvals(thread_id)
                .await?
                .iter()
                .any(|r| r.request.call_id == request.call_id && r.decision.is_some()),
            // Variables may have been stored before the run asked for them (while it ran):
            // the request is then answered by what is already there.
            RunOutcome::Paused(Waiting::Variables { request_id, names }) => {
                let answered = self
                    .services
                    .db
                    .variable_requests(thread_id)
                    .await?
                    .iter()
                    .any(|r| &r.id == request_id && r.answered_at.is_some());
                if !answered && self.variables().has_values(thread_id, names).await? {
                    self.services
                        .db
                        .apply(
                            thread_id,
                            vec![Write::AnswerVariables {
                                id: request_id.clone(),
                            }],
                        )
                        .await?;
                    return Ok(true);
                }
                answered
            }
        })
    }

    /// The step cycle, on a thread this run owns, with the thread's messages as kept from its
    /// last run and brought up to date (see the `histories` module); they are kept again when it
    /// ends well.
    pub(super) async fn run_owned(
        &self,
        thread_id: &str,
        owner: &OwnerId,
        abort: &AbortSignal,
    ) -> Result<RunOutcome, RuntimeError> {
        let mut history = self
            .process
            .histories
            .take(&self.services.db, thread_id)
            .await?;
        let outcome = self
            .run_owned_on(thread_id, owner, abort, &mut history)
            .await;
        if outcome.is_ok() {
            self.process.histories.keep(thread_id, history);
        }
        outcome
    }

    /// The step cycle over `history`, the thread's messages, which the runner keeps up to
    /// date with what it stores.
    async fn run_owned_on(
        &self,
        thread_id: &str,
        owner: &OwnerId,
        abort: &AbortSignal,
        history: &mut History,
    ) -> Result<RunOutcome, RuntimeError> {
        let runner = Runner::start(self, thread_id, owner, abort, history).await?;
        match runner.run().await? {
            Flow::Done(outcome) => Ok(*outcome),
            // What the sides offer changed: the run starts over from the store.
            Flow::Again | Flow::Next => Box::pin(self.run_owned(thread_id, owner, abort)).await,
        }
    }
}
