//! Schemas of what the answers are made of: the problem of every error and the stored records
//! (threads, messages, approvals, owners, files) as they are serialized. These types are never
//! built: they describe, for the document only, what the store's types serialize to, so that the
//! store needs no dependency on the document's crate.
#![allow(dead_code)]

use serde_json::Value;
use utoipa::ToSchema;

/// An error (RFC 9457 problem details).
#[derive(ToSchema)]
pub(crate) struct Problem {
    /// `urn:toolhost:problem:<kind>`: a stable name of the kind of problem.
    #[schema(example = "urn:toolhost:problem:not-found")]
    r#type: String,
    /// The reason phrase of the status.
    title: String,
    /// The HTTP status.
    status: u16,
    /// What is wrong, in one sentence a person can act on.
    detail: String,
    /// Where in the request body, as a JSON pointer, when the body is at fault.
    #[schema(required = false)]
    pointer: String,
}

/// Where a thread is in its life.
#[derive(ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ThreadStatus {
    /// Waiting for work.
    Idle,
    /// A step is running.
    Running,
    /// Waiting for a person (an approval, variables).
    Paused,
    /// Finished its work.
    Done,
    /// Stopped by a fault of the runtime.
    Failed,
}

/// A stored thread.
#[derive(ToSchema)]
pub(crate) struct Thread {
    /// Random UUID.
    id: String,
    /// The agent that runs it.
    agent: String,
    /// The parent thread, if any.
    parent: Option<String>,
    /// Tags such as `name:VALUE`; a direct tool call's thread is tagged `scratch`.
    tags: Vec<String>,
    status: ThreadStatus,
    /// When it was created (milliseconds since the Unix epoch).
    created_at: i64,
    /// When it last changed (milliseconds since the Unix epoch).
    updated_at: i64,
}

/// A call made by an assistant message.
#[derive(ToSchema)]
pub(crate) struct ToolCallRecord {
    /// The call's id.
    id: String,
    /// The tool called.
    name: String,
    /// The arguments as the model sent them (text).
    arguments: String,
}

/// A stored message.
#[derive(ToSchema)]
pub(crate) struct Message {
    /// Unique id.
    id: String,
    /// Position in the thread: strictly increasing in append order.
    seq: i64,
    /// The author: `system`, `user`, `assistant` or `tool`.
    role: String,
    /// The text.
    content: Option<String>,
    /// The tool or participant name.
    name: Option<String>,
    /// Calls made by an assistant message.
    tool_calls: Vec<ToolCallRecord>,
    /// The call a tool message answers.
    tool_call_id: Option<String>,
    /// When it was stored (milliseconds since the Unix epoch).
    created_at: i64,
    /// The message it belongs under.
    parent_id: Option<String>,
    /// Nesting depth.
    depth: u32,
    /// Not shown to the model.
    silent: bool,
    /// What the engine records with it (the full tool result, repairs, usage) and what an
    /// embedder adds.
    metadata: Value,
    /// A tool result's status.
    status: Option<String>,
}

/// Who owns a thread (a run), since when and until when.
#[derive(ToSchema)]
pub(crate) struct Lease {
    /// The owning run's id.
    owner: String,
    /// When this owner claimed the thread.
    since: i64,
    /// When the lease runs out unless it is renewed.
    expires_at: i64,
    /// Whether someone asked the owner to stop.
    stop_requested: bool,
}

/// A call waiting for a person's decision, bound to exactly what is approved.
#[derive(ToSchema)]
pub(crate) struct ApprovalRequest {
    /// The call: the `call_id` of the decide endpoint.
    call_id: String,
    /// The tool it calls.
    tool: String,
    /// The validated arguments that are to be approved.
    arguments: Value,
    /// The hash of the canonical form of `arguments`.
    args_hash: String,
    /// The fingerprint of the tool definition the call was made against.
    tool_fingerprint: String,
    /// Why approval is asked.
    reason: Option<String>,
    /// What the model is told on a rejection without a message of its own.
    reject_message: Option<String>,
}

/// A decision on an approval request.
#[derive(ToSchema)]
pub(crate) struct ApprovalDecision {
    /// Whether the call may run.
    approved: bool,
    /// Whether the decision holds for every later call of the same tool in the thread.
    always: bool,
    /// The text the model sees on a rejection.
    message: Option<String>,
    /// Why it was decided so.
    reason: Option<String>,
    /// Arguments a person edited.
    edited_arguments: Option<Value>,
    /// Who decided (`token <id>` for a decision made over HTTP).
    decided_by: String,
    /// The argument hash the decision was made for.
    args_hash: String,
    /// The tool fingerprint the decision was made for.
    tool_fingerprint: String,
}

/// An approval request and, once made, its decision.
#[derive(ToSchema)]
pub(crate) struct ApprovalRecord {
    request: ApprovalRequest,
    /// `null` while the call waits.
    decision: Option<ApprovalDecision>,
    /// When it was asked (milliseconds since the Unix epoch).
    requested_at: i64,
    /// When it was decided.
    decided_at: Option<i64>,
}

/// A file or folder of a thread's file system.
#[derive(ToSchema)]
pub(crate) struct FileEntry {
    /// Its absolute path, `/`-separated.
    path: String,
    /// The last part of its path.
    name: String,
    /// `file` or `folder`.
    kind: String,
    /// Its size in bytes (0 for a folder).
    size: u64,
    /// A file's stored media type.
    content_type: Option<String>,
    /// When it last changed (milliseconds since the Unix epoch).
    modified_at: i64,
}

/// Why arguments do not fit a tool.
#[derive(ToSchema)]
pub(crate) struct Violation {
    /// Where in the arguments, as a JSON pointer (empty: the whole arguments).
    pointer: String,
    /// What is wrong there.
    message: String,
}
