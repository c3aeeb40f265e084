//! How a program that embeds the runtime sets it up after loading and before it runs
//! anything: the store it runs on, tools and models registered in Rust, the model every prompt
//! uses, handlers, middleware and hooks, secrets' key, leases, sandbox limits, fetch and write
//! quotas, and what a reload takes over from the previous load.

use super::{
    lease_keeper, ApprovalHandler, FetchPolicy, Middleware, MiddlewareScope, Runtime, RuntimeError,
    ToolHooks, WriteQuotas,
};
use crate::variables::secrets::SecretKey;
use std::sync::Arc;
use std::time::Duration;
use toolhost_core::AnyTool;
use toolhost_providers::fetch::Fetcher;
use toolhost_providers::Model;
use toolhost_sandbox::{SandboxError, SandboxLimits};
use toolhost_store::{AsyncStore, Store};

impl Runtime {
    /// Takes over what belongs to the process rather than to one load of the project from
    /// `previous` (a load of the same project, on the same store, before its files changed):
    /// its live events, the runs under way with their stop signals, who answers their
    /// questions, the callers waiting for results as values, the hand-offs of sub-agents, the
    /// settings of requests under way, the threads' kept histories, the wake-ups of runs
    /// waiting for a thread and the `runCode` slots. A server that
    /// loads its project again with this keeps streaming, stopping and limiting the runs the
    /// previous load started, which finish on the project they started with.
    pub fn carry_over_from(&mut self, previous: &Runtime) {
        self.process = previous.process.clone();
        self.services.code = previous.services.code.clone();
    }

    /// Moves the runtime onto another store before it runs anything: a project loaded and
    /// checked once (its MCP servers started once) is then used on the store it serves.
    pub fn set_store(&mut self, store: Arc<dyn Store>) {
        self.services.db = AsyncStore::new(store.clone());
        self.services.leases = lease_keeper::LeaseKeeper::new(self.services.db.clone());
        self.services.store = store;
    }

    /// Adds a tool written in Rust; a later tool of the same name replaces an earlier one.
    pub fn register_tool(&mut self, tool: AnyTool) {
        self.project.files.remove(tool.name());
        // The Rust tool replaces a project tool of the same name, and the activity behind it.
        self.project.bound.remove(tool.name());
        self.project.tools.add(tool);
    }

    /// Uses `model` for the model definition `name` (a real adapter, or a test double), also
    /// when the definition itself could not be made usable.
    pub fn register_model(&mut self, name: impl Into<String>, model: Arc<dyn Model>) {
        let name = name.into();
        self.project.unavailable.remove(&name);
        self.project.models.insert(name, model);
    }

    /// Makes every prompt use the model definition `name` instead of its own (for example to
    /// run a project written for the scripted model on a real one). A thread this runtime
    /// creates remembers it, and later runs of the thread use it unless their runtime names
    /// another ([`Runtime::thread_model`]). Fails when no model definition of that name loaded.
    pub fn override_model(&mut self, name: &str) -> Result<(), RuntimeError> {
        self.project.override_model(name)
    }

    /// Installs a handler that decides approval requests at once; without one, a thread pauses
    /// at a call that needs approval until [`Runtime::decide`] is called.
    pub fn set_approval_handler(&mut self, handler: Arc<dyn ApprovalHandler>) {
        self.services.approval_handler = Some(handler);
    }

    /// Adds middleware where `scope` says; see [`Middleware`] for the order it runs in.
    pub fn add_middleware(&mut self, scope: MiddlewareScope, middleware: Arc<dyn Middleware>) {
        self.services.middleware.push((scope, middleware));
    }

    /// Adds hooks that see every tool call's end.
    pub fn add_tool_hooks(&mut self, hooks: Arc<dyn ToolHooks>) {
        self.services.hooks.push(hooks);
    }

    /// Uses `key` to seal and open secret values.
    pub fn set_secret_key(&mut self, key: SecretKey) {
        self.services.secret_key = Some(key);
    }

    /// Sets how long a thread's lease lasts unless renewed (a run renews it every third of
    /// this); a thread whose owner died is taken over after this long at most.
    pub fn set_lease_ttl(&mut self, ttl: Duration) {
        self.services.lease_ttl = ttl.max(Duration::from_millis(30));
    }

    /// Sets the limits of every `runCode` run (memory, stack, deadline, result and log sizes;
    /// [`SandboxLimits::default`] unless set) and how many runs may be in flight at once
    /// ([`super::DEFAULT_MAX_RUNS_IN_FLIGHT`] unless set; each run takes an OS thread, and runs past the
    /// cap wait). Refuses limits out of their ranges, keeping the ones in force.
    pub fn set_code_limits(
        &mut self,
        limits: SandboxLimits,
        max_in_flight: usize,
    ) -> Result<(), SandboxError> {
        self.services.code = self.services.code.with_limits(limits, max_in_flight)?;
        Ok(())
    }

    /// Sets how many runs of each JavaScript tool file are kept prepared in advance
    /// ([`super::DEFAULT_WARM_RUNTIMES`] unless set; 0 prepares none). Each is an idle thread holding a
    /// fresh QuickJS runtime with the tool's modules evaluated, used by one call and replaced:
    /// a call skips the preparation and still shares nothing with another.
    pub fn set_warm_runtimes(&mut self, per_tool: usize) {
        self.services.code.set_warm(per_tool);
    }

    /// Lets tools fetch from the hosts `allowed` through `fetcher` (by default they reach none).
    pub fn set_fetch(&mut self, allowed: Vec<String>, fetcher: Arc<dyn Fetcher>) {
        self.services.fetch = Some(Arc::new(FetchPolicy::new(allowed, fetcher)));
    }

    /// Sets what tools may store, per call and per thread ([`WriteQuotas::default`] unless
    /// set).
    pub fn set_write_quotas(&mut self, quotas: WriteQuotas) {
        self.services.quotas = std::sync::Arc::new(quotas);
    }

    /// What tools may store.
    pub fn write_quotas(&self) -> &WriteQuotas {
        &self.services.quotas
    }
}
