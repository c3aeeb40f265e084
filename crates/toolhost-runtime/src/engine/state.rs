//! What a tool sees of its thread (the spec's `ThreadState`), attached to every call's context.
//!
//! A tool fetches it with `ctx.get::<ThreadState>()`. Its methods are async and never block the
//! executor: writes go to the store's writer (each durable when its future resolves, sharing
//! commits with the writes of other threads), reads run on the blocking pool. Writes made while
//! a run owns the thread are fenced by its lease.

use super::code::CodeRunner;
use super::control::RunControl;
use super::turns::Side;
use crate::variables::{Redactor, Resolved};
use serde_json::Map;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use toolhost_core::tool::AbortSignal;
use toolhost_core::{ToolContext, ToolResult, ToolSet, ToolSetError};
use toolhost_sandbox::{RunCode, RunResult};
use toolhost_store::path::{normalize, FsPath};
use toolhost_store::{
    AsyncStore, EventKind, FileStat, Message, QueueItem, StoreError, Usage, Write,
};

/// The thread a tool call runs in.
#[derive(Clone)]
pub struct ThreadState {
    store: AsyncStore,
    thread_id: String,
    agent: String,
    side: Side,
    turn: u32,
    step: u32,
    variables: Arc<Resolved>,
    redactor: Arc<Redactor>,
    /// The values of the variables the called tool declared.
    env: Arc<BTreeMap<String, String>>,
    /// The in-memory context of the run (not durable).
    context: Arc<Mutex<Map<String, Value>>>,
    /// The tools the prompt offers, for `invoke_tool`.
    tools: Arc<ToolSet>,
    /// The run's abort signal.
    abort: AbortSignal,
    /// The run that owns the thread: every write is fenced by its lease.
    owner: Option<Arc<str>>,
    /// The call this state was handed to, and how many tools it invoked so far.
    call_id: Arc<str>,
    invoked: Arc<AtomicU32>,
    /// The prompts the call runs in, outermost first: a sub-prompt's calls have its caller's
    /// path with the sub-prompt's name added.
    prompt_path: Arc<Vec<String>>,
    /// The runtime's `runCode` sandbox.
    code: CodeRunner,
    /// What the run's calls ask of it (`stop()`, `forceTurn`).
    control: Arc<RunControl>,
    /// The hosts a tool may fetch from, if the runtime allows any.
    fetch: Option<Arc<super::fetch::FetchPolicy>>,
    /// What tools may store, and what this call has written (see `quotas`).
    quotas: Arc<super::quotas::WriteQuotas>,
    call_usage: Arc<super::quotas::CallUsage>,
    /// Where live events of the thread go (a call's progress).
    live: Option<super::live::LiveHub>,
    /// Who answers what the thread's calls ask while they run (see `ask`).
    pub(super) answerers: Option<super::ask::Answerers>,
}

/// The spec's `state.execution`: where the run is, present only inside tools and hooks.
#[derive(Debug, Clone)]
pub struct Execution {
    /// The model steps of the current turn so far.
    pub step_count: u32,
    /// The side whose call this is.
    pub side: Side,
    /// The session turn.
    pub turn: u32,
    /// Raised when the run is asked to stop.
    pub abort_signal: AbortSignal,
    /// The prompts the call runs in, outermost first (the spec's `promptPath`): the side's
    /// prompt, then each prompt tool's sub-prompt entered on the way to the call.
    pub prompt_path: Vec<String>,
    /// The side whose call stopped the run (`stoppedBy`), once one did.
    pub stopped_by: Option<Side>,
    /// The side a call of this step gave the next turn to (`forceTurn`), until it is taken.
    pub forced_turn: Option<Side>,
}

impl std::fmt::Debug for ThreadState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadState")
            .field("thread_id", &self.thread_id)
            .field("agent", &self.agent)
            .field("side", &self.side)
            .field("turn", &self.turn)
            .field("step", &self.step)
            .finish_non_exhaustive()
    }
}

impl ThreadState {
    pub(crate) fn new(store: AsyncStore, thread_id: &str, agent: &str) -> Self {
        Self {
            store,
            thread_id: thread_id.to_owned(),
            agent: agent.to_owned(),
            side: Side::A,
            turn: 1,
            step: 0,
            variables: Arc::default(),
            redactor: Arc::default(),
            env: Arc::default(),
            context: Arc::default(),
            tools: Arc::default(),
            abort: AbortSignal::new(),
            owner: None,
            call_id: Arc::from(""),
            invoked: Arc::default(),
            prompt_path: Arc::default(),
            code: CodeRunner::default(),
            control: Arc::default(),
            fetch: None,
            quotas: Arc::default(),
            call_usage: Arc::default(),
            live: None,
            answerers: None,
        }
    }

    /// The same thread with the control of the run it is in.
    pub(crate) fn with_control(mut self, control: Arc<RunControl>) -> Self {
        self.control = control;
        self
    }

    /// The run's control, for what a call's result passes through.
    pub(crate) fn control(&self) -> &Arc<RunControl> {
        &self.control
    }

    /// The thread's resolved variables, shared.
    pub(crate) fn variables_shared(&self) -> &Arc<Resolved> {
        &self.variables
    }

    /// The same thread with the runtime's `runCode` sandbox.
    pub(crate) fn with_code(mut self, code: CodeRunner) -> Self {
        self.code = code;
        self
    }

    /// Runs `code` in the runtime's sandbox (spec 001 §1 `state.runCode`) under the limits set
    /// with [`super::Runtime::set_code_limits`], once fewer runs than the cap are in flight. A
    /// stop of the run (its abort signal) terminates it; every outcome, a limit hit included, is
    /// in the [`RunResult`].
    pub async fn run_code(&self, code: RunCode) -> RunResult {
        self.code.run(code, &self.abort).await
    }

    /// The same thread within a run: its in-memory context, the offered tools, its abort signal.
    pub(crate) fn in_run(
        mut self,
        context: Arc<Mutex<Map<String, Value>>>,
        tools: Arc<ToolSet>,
        abort: AbortSignal,
    ) -> Self {
        self.context = context;
        self.tools = tools;
        self.abort = abort;
        self
    }

    /// The same run, inside `prompt`, which offers `tools`: the side's prompt, or a sub-prompt
    /// entered from the prompt it is in.
    pub(crate) fn entering(&self, prompt: &str, tools: Arc<ToolSet>) -> Self {
        let mut state = self.clone();
        let mut path = self.prompt_path.as_ref().clone();
        path.push(prompt.to_owned());
        state.prompt_path = Arc::new(path);
        state.tools = tools;
        state
    }

    /// The same thread written only while `owner` owns it.
    pub(crate) fn owned_by(mut self, owner: &super::OwnerId) -> Self {
        self.owner = Some(Arc::from(owner.as_str()));
        self
    }

    /// The same thread with the thread's resolved variables (kept by the runtime, never shown
    /// whole to a tool).
    pub(crate) fn with_variables(mut self, variables: Arc<Resolved>) -> Self {
        self.redactor = Arc::new(variables.redactor());
        self.variables = variables;
        self
    }

    /// The state one call sees: only the variables its tool declared.
    pub(crate) fn for_call(&self, call_id: &str, env: BTreeMap<String, String>) -> Self {
        let mut state = self.clone();
        state.env = Arc::new(env);
        state.call_id = Arc::from(call_id);
        state.invoked = Arc::default();
        state.call_usage = Arc::default();
        state
    }

    /// What tools may store.
    pub(crate) fn write_quotas(&self) -> &Arc<super::quotas::WriteQuotas> {
        &self.quotas
    }

    /// What this call has written so far.
    pub(crate) fn call_usage(&self) -> &Arc<super::quotas::CallUsage> {
        &self.call_usage
    }

    /// The same thread under `quotas`.
    pub(crate) fn with_quotas(mut self, quotas: Arc<super::quotas::WriteQuotas>) -> Self {
        self.quotas = quotas;
        self
    }

    /// Where the run is (`state.execution`).
    pub fn execution(&self) -> Execution {
        Execution {
            step_count: self.step,
            side: self.side,
            turn: self.turn,
            abort_signal: self.abort.clone(),
            prompt_path: self.prompt_path.as_ref().clone(),
            stopped_by: self.control.stopper(),
            forced_turn: self.control.forced(),
        }
    }

    /// The id of the root thread of this thread's family (this thread: sub-agents, which would
    /// have a parent, are not built yet).
    pub fn root_thread_id(&self) -> &str {
        &self.thread_id
    }

    /// A value of the run's in-memory context (not durable: gone when the run ends).
    pub fn context_value(&self, key: &str) -> Option<Value> {
        self.context
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned()
    }

    /// Sets a value of the run's in-memory context; `None` removes it.
    pub fn set_context_value(&self, key: &str, value: Option<Value>) {
        let mut context = self.context.lock().unwrap_or_else(|p| p.into_inner());
        match value {
            Some(v) => context.insert(key.to_owned(), v),
            None => context.remove(key),
        };
    }

    /// Runs another tool the prompt offers, now, as part of this call (`invokeTool`): its
    /// arguments are validated, it sees the variables it declared, and its idempotency key
    /// derives from this call's. A tool that needs approval cannot be invoked this way. The
    /// result is returned (secrets redacted), not stored as a call of its own.
    pub async fn invoke_tool(&self, name: &str, arguments: Value) -> ToolResult {
        let Some(tool) = self.tools.get(name) else {
            return ToolSetError::NotFound {
                tool_name: name.to_owned(),
                available: self.tools.values().map(|t| t.name().to_owned()).collect(),
            }
            .into_result();
        };
        if tool.approval().is_some() {
            return ToolResult::error(format!(
                "ToolCallError: tool \"{name}\" needs approval and cannot be invoked from another tool"
            ));
        }
        let n = self.invoked.fetch_add(1, Ordering::SeqCst);
        let call_id = format!("{}/{name}#{n}", self.call_id);
        let env: BTreeMap<String, String> = tool
            .definition()
            .variables
            .iter()
            .filter_map(|d| Some((d.name.clone(), self.variables.get(&d.name)?.to_owned())))
            .collect();
        let ctx = ToolContext::new(call_id.as_str())
            .with_thread(self.thread_id.clone())
            .with_abort(self.abort.clone())
            .with_extension(self.for_call(&call_id, env));
        let result = self.tools.execute(name, &arguments.to_string(), ctx).await;
        match serde_json::to_value(&result)
            .map(|v| self.redactor.json(v))
            .and_then(serde_json::from_value)
        {
            Ok(redacted) => redacted,
            Err(_) => {
                ToolResult::error("ToolCallError: the invoked tool's result could not be read")
            }
        }
    }

    pub(crate) fn variables(&self) -> &Resolved {
        &self.variables
    }

    pub(crate) fn redactor(&self) -> &Arc<Redactor> {
        &self.redactor
    }

    /// The value of a variable the called tool declared (`env(name)`); a secret is opened for
    /// this call only. Variables the tool did not declare are not visible.
    pub fn env(&self, name: &str) -> Option<&str> {
        self.env.get(name).map(String::as_str)
    }

    /// Every variable the called tool declared that has a value, by name.
    pub fn env_all(&self) -> &BTreeMap<String, String> {
        &self.env
    }

    /// The same thread seen from `side`, in session turn `turn` at model step `step`.
    pub(crate) fn at(mut self, side: Side, turn: u32, step: u32) -> Self {
        self.side = side;
        self.turn = turn;
        self.step = step;
        self
    }

    /// The side whose call this is (`a` for an `ai_human` agent).
    pub fn side(&self) -> Side {
        self.side
    }

    /// The turn the call was made in, from 1: in an `ai_human` thread each message of the person
    /// starts one, in a `dual_ai` session each side's turn counts.
    pub fn turn(&self) -> u32 {
        self.turn
    }

    /// The thread's id.
    pub fn thread_id(&self) -> &str {
        &self.thread_id
    }

    /// The agent running the thread.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// The model step of the current turn that made this call (1 for the first).
    pub fn step(&self) -> u32 {
        self.step
    }

    /// The thread's messages so far.
    pub async fn messages(&self) -> Result<Vec<Message>, StoreError> {
        self.store.messages(&self.thread_id).await
    }

    /// A durable value of the thread.
    pub async fn get_value(&self, key: &str) -> Result<Option<Value>, StoreError> {
        self.store.value(&self.thread_id, key).await
    }

    /// Sets a durable value; `None` or JSON `null` deletes it. Secrets in the key or the value
    /// are redacted.
    pub async fn set_value(&self, key: &str, value: Option<Value>) -> Result<(), StoreError> {
        let key = self.redactor.text(key);
        let value = value
            .map(|v| self.redactor.json(v))
            .filter(|v| !v.is_null());
        let Some(value) = value else {
            // Removing a value frees what it held: never refused.
            return self.apply(Write::SetValue { key, value: None }).await;
        };
        let bytes = key.len() + value.to_string().len();
        let write = Write::SetValue {
            key,
            value: Some(value),
        };
        self.apply_counted(Usage::ValueBytes, bytes, write).await
    }

    /// Writes a file in the thread's file system; the path is normalised and confined. Secrets
    /// are redacted from the path (the file is stored under the path returned) and from text
    /// (UTF-8) content; binary content holding a secret is refused ([`StoreError::Refused`]).
    pub async fn write_file(
        &self,
        path: &str,
        bytes: Vec<u8>,
        mime_type: Option<&str>,
    ) -> Result<FsPath, StoreError> {
        let path = normalize(&self.redactor.text(path))?;
        let bytes = self.redactor.file_content(bytes).map_err(|secret| {
            StoreError::Refused(format!(
                "{path} was not written: its content is binary and holds the value of \
                 secret {secret}, which cannot be redacted without breaking the file"
            ))
        })?;
        let size = bytes.len();
        let write = Write::WriteFile {
            path: path.clone(),
            bytes,
            mime_type: mime_type.map(|m| self.redactor.text(m)),
            message_id: None,
        };
        self.apply_counted(Usage::FileBytes, size, write).await?;
        Ok(path)
    }

    /// Reads a whole file of the thread's file system.
    pub async fn read_file(&self, path: &str) -> Result<Vec<u8>, StoreError> {
        self.store
            .read_file(&self.thread_id, &normalize(path)?)
            .await
    }

    /// The entries of a folder of the thread's file system.
    pub async fn readdir(&self, path: &str) -> Result<Vec<FileStat>, StoreError> {
        self.store.readdir(&self.thread_id, &normalize(path)?).await
    }

    /// What the thread's file system knows of a path (`None`: nothing is there).
    pub async fn stat(&self, path: &str) -> Result<Option<FileStat>, StoreError> {
        self.store.stat(&self.thread_id, &normalize(path)?).await
    }

    /// Records an event on the thread (`emitThreadEvent`); secrets in its name and data are
    /// redacted.
    pub async fn emit(&self, event: &str, data: Value) -> Result<(), StoreError> {
        let name = self.redactor.text(event);
        let data = self.redactor.json(data);
        let bytes = name.len() + data.to_string().len();
        let write = Write::Event {
            kind: EventKind::Custom(name),
            data,
        };
        self.apply_counted(Usage::EventBytes, bytes, write).await
    }

    /// Queues a tool to run before the next model step (`queueTool`). Secrets in its arguments
    /// are redacted: they are stored, and a tool gets secrets from its variables.
    pub async fn queue_tool(&self, name: &str, arguments: Value) -> Result<(), StoreError> {
        self.apply(Write::Enqueue(QueueItem::Tool {
            name: self.redactor.text(name),
            arguments: self.redactor.json(arguments),
        }))
        .await
    }

    /// The runtime's sandbox and its settings.
    pub(crate) fn code_runner(&self) -> &CodeRunner {
        &self.code
    }

    /// The run's abort signal.
    pub(super) fn abort_signal(&self) -> &AbortSignal {
        &self.abort
    }

    /// The same thread with `answerers` answering what its calls ask.
    pub(crate) fn with_answerers(mut self, answerers: super::ask::Answerers) -> Self {
        self.answerers = Some(answerers);
        self
    }

    /// The same thread publishing its live events to `live`.
    pub(crate) fn with_live(mut self, live: super::live::LiveHub) -> Self {
        self.live = Some(live);
        self
    }

    /// Says how far the call is: `progress` so far (growing), out of `total` when the tool
    /// knows it, with an optional `message`. Published as a live `tool_progress` event of the
    /// thread (and passed on as MCP progress notifications to a client that asked for them);
    /// never stored. Secrets are redacted from the message.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(live) = &self.live else {
            return;
        };
        if !live.is_followed(&self.thread_id) {
            return;
        }
        let mut data = serde_json::json!({"callId": &*self.call_id, "progress": progress});
        if let Some(total) = total {
            data["total"] = serde_json::json!(total);
        }
        if let Some(message) = message {
            data["message"] = Value::String(self.redactor.text(message));
        }
        live.publish(&self.thread_id, super::live::LiveKind::ToolProgress, data);
    }

    /// Says what the call wrote to its console (`level`: `log`, `debug`, `info`, `warn` or
    /// `error`), as it writes it: a live `tool_log` event of the thread (and passed on as MCP
    /// log messages to a client of a served call); never stored. Secrets are redacted.
    pub fn log(&self, level: &str, message: &str) {
        let Some(live) = &self.live else {
            return;
        };
        if !live.is_followed(&self.thread_id) {
            return;
        }
        let data = serde_json::json!({"callId": &*self.call_id, "level": level,
            "message": self.redactor.text(message)});
        live.publish(&self.thread_id, super::live::LiveKind::ToolLog, data);
    }

    /// The same thread with the runtime's fetch policy.
    pub(crate) fn with_fetch(mut self, fetch: Option<Arc<super::fetch::FetchPolicy>>) -> Self {
        self.fetch = fetch;
        self
    }

    /// The hosts this call may fetch from, if the runtime allows any.
    pub(crate) fn fetch_policy(&self) -> Option<&Arc<super::fetch::FetchPolicy>> {
        self.fetch.as_ref()
    }

    /// The store, for what other modules give a tool (see `lineage`).
    pub(crate) fn store(&self) -> &AsyncStore {
        &self.store
    }

    /// The call this state was handed to.
    pub(crate) fn call_id(&self) -> &str {
        &self.call_id
    }

    /// Applies a tool's write of `bytes` of `usage`: counted against the call's limit first,
    /// then written under the thread's (see `quotas`).
    async fn apply_counted(
        &self,
        usage: Usage,
        bytes: usize,
        write: Write,
    ) -> Result<(), StoreError> {
        let bytes = bytes as u64;
        self.call_usage.charge(&self.quotas, usage, bytes)?;
        let mut writes = vec![write, super::quotas::thread_check(&self.quotas, usage)];
        if let Some(owner) = &self.owner {
            writes.insert(0, Write::CheckOwner(owner.to_string()));
        }
        let applied = self.store.apply(&self.thread_id, writes).await;
        if applied.is_err() {
            self.call_usage.refund(usage, bytes);
        }
        applied.map(|_| ()).map_err(super::quotas::explain)
    }

    async fn apply(&self, write: Write) -> Result<(), StoreError> {
        let writes = match &self.owner {
            Some(owner) => vec![Write::CheckOwner(owner.to_string()), write],
            None => vec![write],
        };
        self.store.apply(&self.thread_id, writes).await.map(|_| ())
    }
}
