//! The store seen from async code. A call that may wait leaves the executor thread: a write is
//! handed to the backend's writer when it can be awaited ([`Store::apply_nonblocking`]), anything
//! else runs on the blocking pool. An engine that runs many threads in one process therefore
//! never stalls its executor on a disk, and its writes can share commits. A store that waits for
//! nothing ([`Store::runs_in_place`]: in memory) is called in place instead, a hand-over to
//! another thread and back costing more than the call.

use crate::lease::{HeldLease, Lease, LeaseClaim};
use crate::model::*;
use crate::path::FsPath;
use crate::{Store, StoreError, StoreResult};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A batch on its way to being durable; see [`Store::apply_nonblocking`].
pub type PendingApply = Pin<Box<dyn Future<Output = StoreResult<Applied>> + Send + 'static>>;

/// A [`Store`] with async methods of the same names and meaning. Cheap to clone.
#[derive(Clone)]
pub struct AsyncStore {
    inner: Arc<dyn Store>,
}

impl std::fmt::Debug for AsyncStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncStore").finish_non_exhaustive()
    }
}

impl AsyncStore {
    /// Wraps a store.
    pub fn new(inner: Arc<dyn Store>) -> Self {
        Self { inner }
    }

    /// The store underneath, for code that is not async.
    pub fn blocking(&self) -> &Arc<dyn Store> {
        &self.inner
    }

    /// Runs one of this type's store calls: in place when the store waits for nothing
    /// ([`Store::runs_in_place`]), else on the blocking pool. Either way a call that panics
    /// fails with an error instead of taking its task down.
    async fn run<T, F>(&self, call: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Store) -> StoreResult<T> + Send + 'static,
    {
        if self.inner.runs_in_place() {
            let inner = &*self.inner;
            return std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| call(inner)))
                .unwrap_or_else(|_| {
                    Err(StoreError::Backend(
                        "a store call failed: it panicked".into(),
                    ))
                });
        }
        self.on_blocking_pool(call).await
    }

    async fn on_blocking_pool<T, F>(&self, call: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Store) -> StoreResult<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || call(&*inner))
            .await
            .map_err(|e| StoreError::Backend(format!("a store call failed: {e}").into()))?
    }

    /// Runs any blocking call on the store on the blocking pool, always (the closure is the
    /// caller's, and may do more than one quick call): for what has no method here.
    pub async fn run_blocking<T, F>(&self, call: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Store) -> StoreResult<T> + Send + 'static,
    {
        self.on_blocking_pool(call).await
    }

    /// [`Store::apply`].
    pub async fn apply(&self, thread: &str, writes: Vec<Write>) -> StoreResult<Applied> {
        match self.inner.apply_nonblocking(thread, writes) {
            Ok(pending) => pending.await,
            Err(writes) => {
                let thread = thread.to_owned();
                self.run(move |s| s.apply(&thread, writes)).await
            }
        }
    }

    /// [`Store::delete_thread`].
    pub async fn delete_thread(&self, id: &str) -> StoreResult<()> {
        let id = id.to_owned();
        self.run(move |s| s.delete_thread(&id)).await
    }

    /// [`Store::create_thread`].
    pub async fn create_thread(&self, new: NewThread) -> StoreResult<Thread> {
        self.run(move |s| s.create_thread(new)).await
    }

    /// [`Store::thread`].
    pub async fn thread(&self, id: &str) -> StoreResult<Thread> {
        let id = id.to_owned();
        self.run(move |s| s.thread(&id)).await
    }

    /// [`Store::threads`].
    pub async fn threads(&self, parent: Option<&str>) -> StoreResult<Vec<Thread>> {
        let parent = parent.map(str::to_owned);
        self.run(move |s| s.threads(parent.as_deref())).await
    }

    /// [`Store::claim`].
    pub async fn claim(&self, thread: &str, claim: &LeaseClaim) -> StoreResult<Lease> {
        let (thread, claim) = (thread.to_owned(), claim.clone());
        self.run(move |s| s.claim(&thread, &claim)).await
    }

    /// [`Store::release`].
    pub async fn release(&self, thread: &str, owner: &str) -> StoreResult<bool> {
        let (thread, owner) = (thread.to_owned(), owner.to_owned());
        self.run(move |s| s.release(&thread, &owner)).await
    }

    /// [`Store::lease`].
    pub async fn lease(&self, thread: &str) -> StoreResult<Option<Lease>> {
        let thread = thread.to_owned();
        self.run(move |s| s.lease(&thread)).await
    }

    /// [`Store::keep_leases`].
    pub async fn keep_leases(&self, held: Vec<HeldLease>) -> StoreResult<Vec<Option<Lease>>> {
        self.run(move |s| s.keep_leases(&held)).await
    }

    /// [`Store::request_stop`].
    pub async fn request_stop(&self, thread: &str) -> StoreResult<bool> {
        let thread = thread.to_owned();
        self.run(move |s| s.request_stop(&thread)).await
    }

    /// [`Store::messages`].
    pub async fn messages(&self, thread: &str) -> StoreResult<Vec<Message>> {
        let thread = thread.to_owned();
        self.run(move |s| s.messages(&thread)).await
    }

    /// [`Store::messages_after`].
    pub async fn messages_after(&self, thread: &str, seq: i64) -> StoreResult<Vec<Message>> {
        let thread = thread.to_owned();
        self.run(move |s| s.messages_after(&thread, seq)).await
    }

    /// [`Store::calls`].
    pub async fn calls(&self, thread: &str) -> StoreResult<Vec<CallRecord>> {
        let thread = thread.to_owned();
        self.run(move |s| s.calls(&thread)).await
    }

    /// [`Store::call`].
    pub async fn call(&self, thread: &str, call_id: &str) -> StoreResult<Option<CallRecord>> {
        let (thread, call_id) = (thread.to_owned(), call_id.to_owned());
        self.run(move |s| s.call(&thread, &call_id)).await
    }

    /// [`Store::value`].
    pub async fn value(&self, thread: &str, key: &str) -> StoreResult<Option<Value>> {
        let (thread, key) = (thread.to_owned(), key.to_owned());
        self.run(move |s| s.value(&thread, &key)).await
    }

    /// [`Store::queued`].
    pub async fn queued(&self, thread: &str) -> StoreResult<Vec<Queued>> {
        let thread = thread.to_owned();
        self.run(move |s| s.queued(&thread)).await
    }

    /// [`Store::approvals`].
    pub async fn approvals(&self, thread: &str) -> StoreResult<Vec<ApprovalRecord>> {
        let thread = thread.to_owned();
        self.run(move |s| s.approvals(&thread)).await
    }

    /// [`Store::variables`].
    pub async fn variables(&self, thread: &str) -> StoreResult<Vec<StoredVariable>> {
        let thread = thread.to_owned();
        self.run(move |s| s.variables(&thread)).await
    }

    /// [`Store::variable_requests`].
    pub async fn variable_requests(&self, thread: &str) -> StoreResult<Vec<VariableRequest>> {
        let thread = thread.to_owned();
        self.run(move |s| s.variable_requests(&thread)).await
    }

    /// [`Store::events`].
    pub async fn events(&self, thread: &str, after: i64) -> StoreResult<Vec<Event>> {
        let thread = thread.to_owned();
        self.run(move |s| s.events(&thread, after)).await
    }

    /// [`Store::stat`].
    pub async fn stat(&self, thread: &str, path: &FsPath) -> StoreResult<Option<FileStat>> {
        let (thread, path) = (thread.to_owned(), path.clone());
        self.run(move |s| s.stat(&thread, &path)).await
    }

    /// [`Store::read_file`].
    pub async fn read_file(&self, thread: &str, path: &FsPath) -> StoreResult<Vec<u8>> {
        let (thread, path) = (thread.to_owned(), path.clone());
        self.run(move |s| s.read_file(&thread, &path)).await
    }

    /// [`Store::readdir`].
    pub async fn readdir(&self, thread: &str, path: &FsPath) -> StoreResult<Vec<FileStat>> {
        let (thread, path) = (thread.to_owned(), path.clone());
        self.run(move |s| s.readdir(&thread, &path)).await
    }
}
