//! Thread ownership in the engine: a run claims its thread in the store before it reads or
//! writes anything, has its lease kept while it runs (by the runtime's one
//! [`super::lease_keeper`]), fences every batch it writes with [`Write::CheckOwner`], and gives
//! the thread up when it ends. A stop request stored by another process reaches the owner
//! through the keeper's looks.
//!
//! An owner id is `HOST:PID:NONCE`, so that a claimant on the same host can see that the owner's
//! process is gone and take the thread over at once instead of waiting for the lease to expire.

use super::{Runtime, RuntimeError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use toolhost_core::tool::AbortSignal;
use toolhost_store::{Lease, LeaseClaim, StoreError, Write};

/// How long a lease lasts unless renewed, when nothing else is configured: long enough that a
/// renewal every third of it survives a slow disk, short enough that a dead owner on another
/// machine holds a thread for seconds, not minutes.
/// It is longer than the store's busy timeout (5 s), so a renewal that waits behind another
/// process's write still lands while the lease holds.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(15);

/// The id of one run: the host and process it runs in, and a random part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerId(String);

impl OwnerId {
    /// A new id for a run in this process.
    pub fn new() -> Self {
        let nonce = toolhost_store::random_id();
        Self(format!(
            "{}:{}:{}",
            this_host(),
            std::process::id(),
            &nonce[..8]
        ))
    }

    /// The id as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for OwnerId {
    fn default() -> Self {
        Self::new()
    }
}

/// The host and process an owner id names, when it names them.
pub fn owner_process(owner: &str) -> Option<(&str, u32)> {
    let mut parts = owner.rsplitn(3, ':');
    let _nonce = parts.next()?;
    let pid = parts.next()?.parse().ok()?;
    Some((parts.next()?, pid))
}

/// Where process ids mean the same thing as here: the host name, the boot (ids are reused
/// after a reboot) and the process-id namespace (containers with one host name each have their
/// own ids). Two owners whose places differ never judge each other's processes.
///
/// Computed once: the place of a process does not change while it runs.
fn this_host() -> &'static str {
    static PLACE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PLACE.get_or_init(read_place)
}

/// Whether `place` can tell this process's neighbours from strangers. Only where the system
/// names its boot and its process-id namespace (Linux' `/proc`) does an equal place prove that
/// a process id means the same process; elsewhere (macOS, the BSDs) two machines could share a
/// host name, so dead owners are left to their lease's expiry.
fn place_is_verifiable(place: &str) -> bool {
    let mut parts = place.split('/');
    let (_name, boot, pid_ns) = (parts.next(), parts.next(), parts.next());
    matches!((boot, pid_ns), (Some(b), Some(n)) if !b.is_empty() && !n.is_empty())
}

fn read_place() -> String {
    let read = |path: &str| crate::files::read_text(std::path::Path::new(path), 4096).ok();
    let name = read("/proc/sys/kernel/hostname")
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    let boot = read("/proc/sys/kernel/random/boot_id")
        .map(|b| b.trim().chars().take(8).collect::<String>())
        .unwrap_or_default();
    let pid_ns = std::fs::read_link("/proc/self/ns/pid")
        .ok()
        .map(|l| l.to_string_lossy().trim_start_matches("pid:").to_owned())
        .unwrap_or_default();
    format!("{name}/{boot}/{pid_ns}").replace(':', "_")
}

/// Whether the owner's process is known to be gone: it ran in this place (see [`this_host`])
/// and the system says no process has its id. A process that reuses the id, or one the system
/// will not tell about, only makes the claimant wait for the lease to expire.
fn owner_is_dead(owner: &str) -> bool {
    let Some((host, pid)) = owner_process(owner) else {
        return false;
    };
    host == this_host()
        && place_is_verifiable(host)
        && pid != std::process::id()
        && process_is_gone(pid)
}

#[cfg(unix)]
#[allow(unsafe_code)] // one libc::kill(pid, 0), explained at the call
fn process_is_gone(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // Signal 0 checks without sending: only "no such process" means gone; a process of another
    // user (EPERM) is alive.
    // SAFETY: kill with signal 0 has no effect on any process; it only reports.
    let sent = unsafe { libc::kill(pid, 0) };
    sent != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

#[cfg(not(unix))]
fn process_is_gone(_pid: u32) -> bool {
    // Without a check, assume it lives: the lease expiry decides.
    false
}

/// What the runtime knows of a run in this process.
pub(super) struct RunEntry {
    pub owner: OwnerId,
    pub signal: AbortSignal,
    /// Its node hands the thread to the others as it stops (see [`Runtime::hand_back`]).
    pub hand_back: Arc<AtomicBool>,
}

/// Holds a thread for one run: has its lease kept (renewed, stop requests forwarded) until
/// [`Ownership::release`] gives the thread up and forgets the run's abort signal (only its
/// own). Dropped without a release (a cancelled run), it releases on the blocking pool; the
/// lease would otherwise run out on its own.
pub(super) struct Ownership<'a> {
    runtime: &'a Runtime,
    thread_id: String,
    pub owner: OwnerId,
    pub abort: AbortSignal,
    lost: Arc<AtomicBool>,
    released: bool,
}

impl Ownership<'_> {
    /// Whether the lease was lost while the run went on (taken over after it expired).
    pub fn lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    /// Stops the renewals, gives the thread up and forgets the run.
    /// The run stays known to [`Runtime::stop`] until the lease is gone, so a stop in between
    /// raises its abort signal, which the caller looks at before it takes the thread again.
    pub async fn release(mut self) {
        self.released = true;
        // The keeper lets go before the lease goes, so it does not mistake the release for a
        // lost lease.
        self.forget();
        if let Err(e) = self
            .runtime
            .services
            .db
            .release(&self.thread_id, self.owner.as_str())
            .await
        {
            // The lease then runs out on its own.
            tracing::warn!(thread = %self.thread_id, error = %e, "the thread's lease was not released");
        }
        self.forget_run();
        // Whoever waits to claim this thread looks again.
        let _ = self
            .runtime
            .process
            .released
            .send(self.thread_id.as_str().into());
    }

    fn forget(&self) {
        self.runtime
            .services
            .leases
            .forget(&self.thread_id, self.owner.as_str());
    }

    fn forget_run(&self) {
        let mut running = self
            .runtime
            .process
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if running
            .get(&self.thread_id)
            .is_some_and(|entry| entry.owner == self.owner)
        {
            running.remove(&self.thread_id);
        }
    }
}

impl Drop for Ownership<'_> {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        // A cancelled run: whatever it started (calls running in tasks) sees the stop.
        self.abort.abort();
        self.forget();
        self.forget_run();
        let (store, released) = (
            self.runtime.services.store.clone(),
            self.runtime.process.released.clone(),
        );
        let (thread, owner) = (self.thread_id.clone(), self.owner.as_str().to_owned());
        let release = move || {
            let _ = store.release(&thread, &owner);
            let _ = released.send(thread.as_str().into());
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(release)),
            Err(_) => release(),
        }
    }
}

impl Runtime {
    /// Who owns the thread now, if anyone (an expired lease is a dead owner's: nobody's).
    pub async fn owner_of(&self, thread_id: &str) -> Result<Option<Lease>, RuntimeError> {
        let lease = self.services.db.lease(thread_id).await?;
        Ok(lease.filter(|l| l.is_live(toolhost_store::now_millis())))
    }

    /// Claims the thread for a new run; fails with [`RuntimeError::ThreadBusy`] when another
    /// live run owns it.
    pub(super) async fn claim(&self, thread_id: &str) -> Result<Ownership<'_>, RuntimeError> {
        let owner = OwnerId::new();
        let ttl_ms = self.services.lease_ttl.as_millis() as i64;
        let mut claim = LeaseClaim {
            owner: owner.as_str().to_owned(),
            ttl_ms,
            replacing: None,
        };
        let lease = match self.services.db.claim(thread_id, &claim).await {
            Err(StoreError::ThreadOwned { lease, .. }) if owner_is_dead(&lease.owner) => {
                tracing::debug!(thread = thread_id, dead = %lease.owner, "taking over from a dead owner");
                claim.replacing = Some(lease.owner);
                self.services.db.claim(thread_id, &claim).await
            }
            other => other,
        };
        let lease = match lease {
            Ok(lease) => lease,
            Err(StoreError::ThreadOwned { thread, lease }) => {
                return Err(RuntimeError::ThreadBusy { thread, lease })
            }
            Err(e) => return Err(e.into()),
        };
        let abort = AbortSignal::new();
        if lease.stop_requested {
            abort.abort();
        }
        self.process
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                thread_id.to_owned(),
                RunEntry {
                    owner: owner.clone(),
                    signal: abort.clone(),
                    hand_back: Arc::default(),
                },
            );
        let lost = Arc::new(AtomicBool::new(false));
        self.services.leases.keep(
            thread_id,
            owner.as_str(),
            self.services.lease_ttl,
            abort.clone(),
            lost.clone(),
        );
        Ok(Ownership {
            runtime: self,
            thread_id: thread_id.to_owned(),
            owner,
            abort,
            lost,
            released: false,
        })
    }

    /// Claims the thread, waiting while another live run owns it: a run of this process wakes
    /// the waiter as it lets go; an owner in another process or on another machine is waited
    /// for by looking at the store again, less and less often.
    pub(super) async fn claim_when_free(
        &self,
        thread_id: &str,
    ) -> Result<Ownership<'_>, RuntimeError> {
        let mut pause = Duration::from_millis(20);
        loop {
            // Subscribed before the claim, so a release between the claim and the wait is seen.
            let mut released = self.process.released.subscribe();
            match self.claim(thread_id).await {
                Err(RuntimeError::ThreadBusy { .. }) => {
                    let freed = tokio::time::timeout(pause, let_go(&mut released, thread_id));
                    if freed.await.is_err() {
                        pause = (pause * 2)
                            .min(self.services.lease_ttl / 4)
                            .max(Duration::from_millis(20));
                    }
                }
                other => return other,
            }
        }
    }

    /// Waits until a run of this process lets go of `thread_id`, or `at_most` has passed: for
    /// a caller that found the thread busy and tries again once it may be free (an owner in
    /// another process is only seen by trying again, hence the bound).
    pub async fn until_released(&self, thread_id: &str, at_most: Duration) {
        let mut released = self.process.released.subscribe();
        let _ = tokio::time::timeout(at_most, let_go(&mut released, thread_id)).await;
    }

    /// Applies a batch that the run `owner` writes: it is fenced by that run's lease, so a run
    /// that lost its thread cannot write to it (whoever owns the thread now).
    pub(super) async fn commit(
        &self,
        thread_id: &str,
        owner: &OwnerId,
        mut writes: Vec<Write>,
    ) -> Result<toolhost_store::Applied, RuntimeError> {
        writes.insert(0, Write::CheckOwner(owner.as_str().to_owned()));
        let applied = self.services.db.apply(thread_id, writes).await?;
        self.process
            .call_results
            .deliver(thread_id, &applied.messages);
        Ok(applied)
    }
}

/// Returns once a run of this process lets go of `thread_id`, or when releases were missed
/// (too many at once): any of them may have been this thread's.
async fn let_go(released: &mut tokio::sync::broadcast::Receiver<Arc<str>>, thread_id: &str) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        match released.recv().await {
            Ok(thread) if &*thread == thread_id => return,
            Ok(_) => {}
            Err(RecvError::Lagged(_)) => return,
            // The runtime is gone: nothing will be let go of; wait for the caller's bound.
            Err(RecvError::Closed) => std::future::pending::<()>().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_place_with_a_boot_and_a_pid_namespace_judges_other_processes() {
        assert!(place_is_verifiable("web-1/3f2a9c1d/4026531836"));
        // macOS and the BSDs: a host name alone may be shared by two machines on one store.
        assert!(!place_is_verifiable("localhost//"));
        assert!(!place_is_verifiable("web-1/3f2a9c1d/"));
        assert!(!place_is_verifiable("web-1//4026531836"));
        assert!(!place_is_verifiable("web-1"));
        // An owner from a place that cannot be verified is never taken for dead, even when no
        // process here has its id.
        assert!(!owner_is_dead("localhost//:999999999:abcdef12"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn on_linux_a_gone_process_of_this_place_is_dead() {
        assert!(place_is_verifiable(this_host()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(owner_is_dead(&format!("{}:{pid}:abcdef12", this_host())));
        assert!(!owner_is_dead(&format!(
            "{}:{}:abcdef12",
            this_host(),
            std::process::id()
        )));
    }
}
