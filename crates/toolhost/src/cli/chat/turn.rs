//! One turn of the chat: the thread runs here while its answer and calls are shown, Ctrl-C
//! stops it (a second Ctrl-C leaves), and a thread that another process runs is waited for.

use super::screen;
use super::watch::{mark_boundary, Watch};
use std::cell::Cell;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::signal::unix::Signal;
use toolhost_runtime::engine::{describe_owner, Delivery, RunOutcome, Runtime, RuntimeError};

/// How often a thread that another process runs is tried again.
const TRY_AGAIN_EVERY: Duration = Duration::from_millis(200);

/// How a turn begins.
pub(super) enum Start {
    /// With the person's message.
    Send(String),
    /// Where the thread is (after a decision, or given variables).
    Run,
}

/// How a turn ended.
pub(super) enum Ended {
    /// The run ended; `stop_asked` says whether Ctrl-C asked it to stop.
    Ran {
        outcome: Box<Result<RunOutcome, RuntimeError>>,
        stop_asked: bool,
    },
    /// Ctrl-C while another process ran the thread: this one stopped waiting for it.
    StoppedWaiting,
    /// A second Ctrl-C: the person leaves, the run was cut off.
    Left,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Running,
    Waiting,
}

/// Runs a turn of `thread`, showing it through `watch`, until it ends or the person leaves.
pub(super) async fn run(
    runtime: &Runtime,
    thread: &str,
    start: Start,
    interrupts: &mut Signal,
    watch: &mut Watch,
) -> Ended {
    forget_earlier(interrupts);
    let mut events = runtime.subscribe();
    let phase = Cell::new(Phase::Running);
    let boundary = watch.begin();
    let mut stop_asked = false;
    let ended = {
        let work = work(runtime, thread, start, &phase, &boundary);
        let follow = watch.follow(&mut events);
        tokio::pin!(work, follow);
        loop {
            tokio::select! {
                biased;
                outcome = &mut work => break Ended::Ran { outcome: Box::new(outcome), stop_asked },
                Some(()) = interrupts.recv() => {
                    screen::after_interrupt();
                    if phase.get() == Phase::Waiting {
                        break Ended::StoppedWaiting;
                    }
                    if stop_asked {
                        break Ended::Left;
                    }
                    stop_asked = true;
                    runtime.stop(thread).await;
                    screen::line("  stopping: a running tool program is interrupted and the model is not asked again (Ctrl-C again leaves)");
                }
                () = &mut follow => {}
            }
        }
    };
    watch.finish(&mut events);
    ended
}

/// Sends or runs, and waits while another process owns the thread. The phase says which: a
/// run's claim is decided before its first await, so a Ctrl-C never falls between the two.
async fn work(
    runtime: &Runtime,
    thread: &str,
    start: Start,
    phase: &Cell<Phase>,
    boundary: &Cell<i64>,
) -> Result<RunOutcome, RuntimeError> {
    let store = runtime.store().as_ref();
    mark_boundary(store, thread, boundary);
    let (lease, what) = match start {
        Start::Send(message) => match runtime.send(thread, &message).await? {
            Delivery::Ran(outcome) => return Ok(outcome),
            Delivery::Queued(lease) => (lease, "your message is stored and that run takes it"),
        },
        Start::Run => match runtime.run(thread).await {
            Err(RuntimeError::ThreadBusy { lease, .. }) => {
                (lease, "what you gave is stored for it")
            }
            other => return other,
        },
    };
    screen::line(&format!(
        "  another process runs this thread: {}; {what}. Waiting until it is free (Ctrl-C stops waiting)…",
        describe_owner(&lease)
    ));
    loop {
        phase.set(Phase::Waiting);
        tokio::time::sleep(TRY_AGAIN_EVERY).await;
        phase.set(Phase::Running);
        mark_boundary(store, thread, boundary);
        match runtime.run(thread).await {
            Err(RuntimeError::ThreadBusy { .. }) => {}
            other => return other,
        }
    }
}

/// Drops interrupts that arrived between turns (none come from the keyboard then, since the
/// line editor reads Ctrl-C as a key), so they do not stop the turn that starts now.
fn forget_earlier(interrupts: &mut Signal) {
    let mut cx = Context::from_waker(Waker::noop());
    while let Poll::Ready(Some(())) = interrupts.poll_recv(&mut cx) {}
}
