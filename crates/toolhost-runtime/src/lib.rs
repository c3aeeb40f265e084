//! # toolhost-runtime: the thread executor
//!
//! Turns tool definitions into running agents: it loads a project (agents, prompts, models,
//! blueprint tools, process activities), runs threads one step at a time, and keeps every tool
//! call durable.
//!
//! ## Contract
//! - A thread starts, runs or takes a message only when every definition its agent reaches
//!   (prompts and their includes, models, offered tools, the tools its side rules name, the
//!   activities behind the tools) exists and loaded ([`engine::Runtime::check_agent`]);
//!   otherwise nothing is stored and the error names each file and missing name.
//! - The step cycle: finish the pending calls of the last reply, drain queued work, end the turn
//!   on a reply, a stop tool or the step budget (a `dual_ai` session hands the next turn to the
//!   other side until `maxSessionTurns`), else ask the model and store its reply before anything
//!   runs. The position in the thread is read back from the store, never kept only in memory.
//! - Durability: a call's intent is journaled before it runs (in the same batch as the reply
//!   when the call starts as soon as the reply is stored: two commits per cycle) and its result
//!   stored before the next step; after a crash a completed call never runs again, and a call
//!   whose outcome is unknown runs again only when its tool is idempotent (the model is told
//!   otherwise).
//! - One owner per thread: a run claims the thread's lease before it reads or writes, renews it
//!   while it runs and fences every batch with it; a second run is refused
//!   ([`engine::RuntimeError::ThreadBusy`]) and touches nothing. Messages ([`engine::Runtime::send`]),
//!   decisions and variables given meanwhile are stored and taken up by the owner.
//!   [`engine::Runtime::stop`] reaches the owner wherever it runs.
//! - The engine reaches the store only through [`toolhost_store::AsyncStore`]: no store call
//!   blocks an executor thread, and many threads in one process share commits.
//! - Decide, then act: what the next step is and which calls still need results are plain
//!   functions over what is stored (`engine/decide.rs`); the loop only carries them out.
//! - Prompt tools: a prompt offered in another prompt's `tools` is a tool whose call runs it as a
//!   sub-prompt to its end on the same thread, its messages nested under the call and hidden
//!   from the caller's model, its own calls journaled like any other; the call returns what its
//!   `SubpromptConfig` selects (see `engine/subprompt` and [`project::SubpromptConfig`]).
//! - A call that needs approval, or a variable the thread lacks, pauses the thread durably at
//!   that call ([`engine::RunOutcome::Paused`]); decisions are bound to the call, its arguments
//!   and the tool definition.
//! - A model answer is streamed and published as [`engine::LiveEvent`]s while it arrives; the
//!   reply is stored with the runtime's call ids, its arguments mended where a repair makes them
//!   fit (recorded in `metadata.repairs` and shown to the model with the result), and with the
//!   API's continuity data. Arguments no repair mends are answered with the violations and never
//!   run. Before each request the conversation is checked against the tool-call ordering rules;
//!   a mended request says so, never invents a success, and is recorded as an event.
//! - Secrets are stored sealed, opened only for the tool that declared them, and redacted (in
//!   clear and in their common encodings, see [`variables::redact`]) from everything a tool
//!   returns or writes, a program's quoted output, a model's reply and live events, and a
//!   person's messages, before it is cut, stored or shown. Binary data holding a secret (an
//!   attachment, an image block, a file) cannot be redacted and is refused with the reason.
//! - A process activity runs its program once per call with the call as JSON on standard input
//!   and reads a `ToolResult` as JSON from standard output; every failure becomes an error result
//!   naming the activity, and past its timeout the whole process tree is killed.
//! - A tool file in JavaScript or TypeScript ([`js`]) declares its tool when the project loads
//!   (a problem of the file, naming its line, when it steps outside the spec's Zod subset or
//!   `defineTool`), and each call runs its `execute` in a fresh sandbox run whose `state` reaches
//!   the thread only through the call's [`engine::ThreadState`].
//! - `runCode`: one sandbox ([`sandbox`]) per runtime, its limits and a cap on runs in flight
//!   set with [`engine::Runtime::set_code_limits`]. Rust tools run code through
//!   [`engine::ThreadState::run_code`], models through the built-in `run_code` tool (offered
//!   where a prompt lists it; a project tool of that name replaces it, as for `think`). The
//!   call's abort signal terminates a run, so a stop of the thread ends a runaway one.
//! - Tools of MCP servers ([`mcp`], `agents/mcp/`) are imported as `SERVER.TOOL` when the
//!   project loads and called like any tool: approval unless a trusted server says a tool only
//!   reads, the definition pinned per project, timeouts and cancellation at the server, a call
//!   whose outcome is unknown never sent twice. A server at a URL is reached through the HTTP
//!   client the embedding program gives [`engine::Runtime::load_networked`]: the runtime
//!   carries MCP's streamable HTTP on it and links no HTTP client itself.
//! - Every file it reads (definitions, tool files, model scripts, the secrets key) goes through
//!   [`files`]: a regular file (or a link to one) under a size cap, or an error naming the file
//!   and why; a FIFO or a device never blocks or floods a run.
//! - Models: the runtime depends on the `Model` contract of `toolhost-providers` (built without
//!   its `http` feature), never on an adapter. It reads the scripted (`test`) models from the
//!   project itself; every other model definition is handed, as plain data, to the
//!   [`engine::ModelFactory`] the embedding program gives [`engine::Runtime::load_with`] (the
//!   command line passes the HTTP adapters). A definition the factory refuses, such as one
//!   whose key is not set, is no problem until a thread uses it, which then fails naming the
//!   reason; [`engine::Runtime::load`] has no factory and runs the scripted models only.
//!
//! ## Dependencies
//! Without a factory's adapters the runtime links no HTTP client and no TLS stack. This command
//! lists the crates it links, and must show none of `hyper`, `hyper-util`, `hyper-rustls`,
//! `rustls` or `ring`:
//!
//! ```text
//! cargo tree -p toolhost-runtime -e normal
//! ```
//!
//! Its tests use the providers with `http` (a dev-dependency) to run threads on HTTP models over
//! loopback.
//!
//! ## Platforms
//! Unix-like systems only (Linux, macOS, the BSDs). A process activity runs in a process group
//! of its own so that a timeout kills every process it started, and a secrets key file is created
//! readable by its owner alone; Windows has neither in the same form, and a runtime that left a
//! timed-out tool's children running would break its contract, so it does not build there.
//! Telling a dead thread owner from a live one at once works where `/proc` names the boot and the
//! process-id namespace (Linux); elsewhere a dead owner's lease simply expires.

#[cfg(not(unix))]
compile_error!(
    "toolhost-runtime needs a Unix-like system: process activities run in process groups so \
     that a timeout kills their whole tree (see the crate documentation, \"Platforms\")"
);

pub mod activity;
pub mod engine;
pub mod files;
pub mod js;
pub mod mcp;
pub mod project;
pub mod variables;

/// The `runCode` sandbox behind [`engine::ThreadState::run_code`]: its code, limits and results.
pub use toolhost_sandbox as sandbox;
