//! The signal that asks a running call to stop, which a task can check or await.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// A flag a caller raises to ask a running tool to stop; tools check it between steps, or
/// await it ([`AbortSignal::aborted`], [`AbortSignal::interrupted`]) beside what they wait for.
///
/// It is raised in one of two ways: [`AbortSignal::abort`] (stop now: a person's stop; what
/// runs outside the process, such as a program or a `runCode` run, is interrupted) or
/// [`AbortSignal::abort_gracefully`] (stop after the operation under way: a server shutting
/// down lets a running program finish). [`AbortSignal::is_aborted`] is true for both.
#[derive(Debug, Clone, Default)]
pub struct AbortSignal(Arc<Signal>);

#[derive(Debug, Default)]
struct Signal {
    level: AtomicU8,
    /// Who awaits the signal, woken when it is raised: one waker per waiting [`Raised`], which
    /// takes its own away when it is dropped.
    waiting: Mutex<Waiting>,
}

#[derive(Debug, Default)]
struct Waiting {
    next: u64,
    wakers: HashMap<u64, Waker>,
}

/// Not raised.
const CLEAR: u8 = 0;
/// Raised: stop after the operation under way.
const GRACEFUL: u8 = 1;
/// Raised: stop now, interrupting the operation under way.
const NOW: u8 = 2;

impl AbortSignal {
    /// A signal that is not raised.
    pub fn new() -> Self {
        Self::default()
    }

    /// Raises the signal for every clone: stop now.
    pub fn abort(&self) {
        self.0.level.store(NOW, Ordering::SeqCst);
        self.wake_all();
    }

    /// Raises the signal for every clone, asking only that nothing new starts: the operation
    /// under way may finish. A later [`AbortSignal::abort`] still interrupts it.
    pub fn abort_gracefully(&self) {
        let _ = self
            .0
            .level
            .compare_exchange(CLEAR, GRACEFUL, Ordering::SeqCst, Ordering::SeqCst);
        self.wake_all();
    }

    /// Whether the signal has been raised (either way).
    pub fn is_aborted(&self) -> bool {
        self.0.level.load(Ordering::SeqCst) != CLEAR
    }

    /// Whether the signal asks to interrupt the operation under way ([`AbortSignal::abort`]).
    pub fn is_interrupted(&self) -> bool {
        self.0.level.load(Ordering::SeqCst) == NOW
    }

    /// Completes once the signal is raised, either way (at once if it is).
    pub fn aborted(&self) -> Raised<'_> {
        Raised {
            signal: self,
            level: GRACEFUL,
            slot: None,
        }
    }

    /// Completes once the signal asks to interrupt (at once if it does).
    pub fn interrupted(&self) -> Raised<'_> {
        Raised {
            signal: self,
            level: NOW,
            slot: None,
        }
    }

    fn wake_all(&self) {
        let wakers = std::mem::take(&mut self.waiting().wakers);
        for waker in wakers.into_values() {
            waker.wake();
        }
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, Waiting> {
        // A waker list is sound whatever a panicking holder left in it.
        self.0.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Waits for an [`AbortSignal`] to reach a level ([`AbortSignal::aborted`],
/// [`AbortSignal::interrupted`]).
#[derive(Debug)]
pub struct Raised<'a> {
    signal: &'a AbortSignal,
    level: u8,
    /// Its place among the signal's wakers, once it waits.
    slot: Option<u64>,
}

impl Future for Raised<'_> {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        let reached = || this.signal.0.level.load(Ordering::SeqCst) >= this.level;
        if reached() {
            return Poll::Ready(());
        }
        let mut waiting = this.signal.waiting();
        // Looked at again under the lock: a raise between the first look and here has already
        // taken the wakers, and would never wake one put there now.
        if reached() {
            return Poll::Ready(());
        }
        let slot = *this.slot.get_or_insert_with(|| {
            waiting.next += 1;
            waiting.next
        });
        match waiting.wakers.get_mut(&slot) {
            Some(kept) if kept.will_wake(cx.waker()) => {}
            Some(kept) => kept.clone_from(cx.waker()),
            None => {
                waiting.wakers.insert(slot, cx.waker().clone());
            }
        }
        Poll::Pending
    }
}

impl Drop for Raised<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            self.signal.waiting().wakers.remove(&slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raised_signal_wakes_whoever_awaits_it_at_the_level_it_waits_for() {
        let signal = AbortSignal::new();
        let gracefully = signal.clone();
        let waiter = std::thread::spawn(move || {
            futures_executor::block_on(gracefully.aborted());
            gracefully.is_aborted()
        });
        // Raised once the waiter waits, so that it is the raise that wakes it.
        while signal.waiting().wakers.is_empty() {
            std::thread::yield_now();
        }
        signal.abort_gracefully();
        assert!(waiter.join().unwrap());
        assert!(!signal.is_interrupted());

        let interrupt = signal.clone();
        let waiter = std::thread::spawn(move || {
            futures_executor::block_on(interrupt.interrupted());
            interrupt.is_interrupted()
        });
        while signal.waiting().wakers.is_empty() {
            std::thread::yield_now();
        }
        signal.abort();
        assert!(waiter.join().unwrap());
        // Already raised: completes at once.
        futures_executor::block_on(signal.interrupted());
    }

    #[test]
    fn a_waiter_is_kept_once_however_often_it_is_polled_and_forgotten_when_dropped() {
        struct Task;
        impl std::task::Wake for Task {
            fn wake(self: Arc<Self>) {}
        }
        let signal = AbortSignal::new();
        let waker = Waker::from(Arc::new(Task));
        let mut cx = Context::from_waker(&waker);
        {
            let mut raised = std::pin::pin!(signal.aborted());
            for _ in 0..100 {
                assert!(raised.as_mut().poll(&mut cx).is_pending());
            }
            assert_eq!(signal.waiting().wakers.len(), 1);
        }
        // Waits that end without the signal (a call that finished) leave nothing behind.
        for _ in 0..100 {
            let mut raised = std::pin::pin!(signal.aborted());
            assert!(raised.as_mut().poll(&mut cx).is_pending());
        }
        assert!(signal.waiting().wakers.is_empty());
        let mut raised = std::pin::pin!(signal.aborted());
        assert!(raised.as_mut().poll(&mut cx).is_pending());
        signal.abort();
        assert!(signal.waiting().wakers.is_empty());
        assert!(raised.as_mut().poll(&mut cx).is_ready());
    }
}
