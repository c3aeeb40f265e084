//! What the store holds: threads, messages, the call journal, queued work, events and files.

use crate::meta::{EventKind, MessageMeta};
use crate::path::FsPath;
use serde::{Deserialize, Serialize};
use serde_json::Value;
pub use toolhost_core::ToolStatus;

/// Milliseconds since the Unix epoch.
pub type Millis = i64;

/// The current time in milliseconds since the Unix epoch.
pub fn now_millis() -> Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A time as `YYYY-MM-DD HH:MM:SS.mmm UTC`, for messages people read.
pub fn display_millis(millis: Millis) -> String {
    let secs = millis.div_euclid(1000);
    let ms = millis.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rest = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}.{ms:03} UTC",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// A new id for a stored record (a thread, a message): a UUID v7, hyphenated. Its first part
/// is the time, so records made one after another sit side by side in the store's indexes and a
/// commit of many new messages writes a few index pages instead of one per message (with random
/// ids the 100-thread throughput bench made a quarter fewer cycles). Not a secret: see
/// [`random_id`].
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// A new id that must not be guessed or told from another made at the same time (a run's owner
/// nonce, a request state a client echoes, an error id): a UUID v4, hyphenated, all random.
pub fn random_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Where a thread is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadStatus {
    /// Waiting for work.
    Idle,
    /// A step is running.
    Running,
    /// Waiting for a person (an approval, a variable).
    Paused,
    /// Finished its work.
    Done,
    /// Stopped by a fault of the runtime.
    Failed,
}

impl ThreadStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            ThreadStatus::Idle => "idle",
            ThreadStatus::Running => "running",
            ThreadStatus::Paused => "paused",
            ThreadStatus::Done => "done",
            ThreadStatus::Failed => "failed",
        }
    }

    /// Reads a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Idle,
            Self::Running,
            Self::Paused,
            Self::Done,
            Self::Failed,
        ]
        .into_iter()
        .find(|t| t.as_str() == s)
    }
}

/// A thread to create.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewThread {
    /// The id to give it (a random UUID when `None`): a caller that must know the id before
    /// the thread exists, to seal values for it, picks it with [`new_id`].
    pub id: Option<String>,
    /// The agent that runs it.
    pub agent: String,
    /// The thread it was created from (a sub-agent's parent).
    pub parent: Option<String>,
    /// Tags such as `name:VALUE`.
    pub tags: Vec<String>,
    /// Writes applied in the transaction that creates the thread (its first message, its
    /// variables), so the thread never exists without them.
    pub writes: Vec<Write>,
}

/// A stored thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thread {
    /// Random UUID.
    pub id: String,
    /// The agent that runs it.
    pub agent: String,
    /// The parent thread, if any.
    pub parent: Option<String>,
    /// Tags such as `name:VALUE`.
    pub tags: Vec<String>,
    /// Where it is in its life.
    pub status: ThreadStatus,
    /// When it was created.
    pub created_at: Millis,
    /// When it last changed.
    pub updated_at: Millis,
}

/// The author of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions.
    System,
    /// The user (or, in dual_ai, the other side).
    User,
    /// The model.
    Assistant,
    /// A tool result.
    Tool,
}

impl Role {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    /// Reads a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        [Role::System, Role::User, Role::Assistant, Role::Tool]
            .into_iter()
            .find(|r| r.as_str() == s)
    }
}

/// A tool call inside an assistant message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    /// The runtime-owned call id.
    pub id: String,
    /// The tool called.
    pub name: String,
    /// The arguments as the model sent them (text).
    pub arguments: String,
}

/// A message to append. `id` is generated when absent.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NewMessage {
    /// A caller-chosen id, or `None` for a new random one.
    pub id: Option<String>,
    /// The author.
    pub role: Option<Role>,
    /// The text.
    pub content: Option<String>,
    /// The tool name (tool messages) or a participant name.
    pub name: Option<String>,
    /// The calls an assistant message makes.
    pub tool_calls: Vec<ToolCallRecord>,
    /// The call a tool message answers.
    pub tool_call_id: Option<String>,
    /// The message this one belongs under (sub-prompts).
    pub parent_id: Option<String>,
    /// Nesting depth (0 for the thread's own conversation).
    pub depth: u32,
    /// Stored but not shown to the model.
    pub silent: bool,
    /// What the engine records with it (typed), and what an embedder adds.
    pub metadata: MessageMeta,
    /// A tool result's status.
    pub status: Option<ToolStatus>,
}

/// A stored message, with the spec's record fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Unique id.
    pub id: String,
    /// Position in the thread: strictly increasing in append order.
    pub seq: i64,
    /// The author.
    pub role: Role,
    /// The text.
    pub content: Option<String>,
    /// The tool or participant name.
    pub name: Option<String>,
    /// Calls made by an assistant message.
    pub tool_calls: Vec<ToolCallRecord>,
    /// The call a tool message answers.
    pub tool_call_id: Option<String>,
    /// When it was stored.
    pub created_at: Millis,
    /// The message it belongs under.
    pub parent_id: Option<String>,
    /// Nesting depth.
    pub depth: u32,
    /// Not shown to the model.
    pub silent: bool,
    /// What the engine records with it (typed), and what an embedder adds.
    pub metadata: MessageMeta,
    /// A tool result's status.
    pub status: Option<ToolStatus>,
}

/// A tool call about to run: journaled before it executes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallIntent {
    /// The runtime-owned call id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The validated arguments, as JSON text.
    pub arguments: String,
    /// The assistant message that made the call.
    pub message_id: Option<String>,
}

/// Whether a journaled call has a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallState {
    /// The intent is recorded; no result yet. After a crash: outcome unknown.
    Intent,
    /// The result is stored.
    Completed,
}

/// One entry of the call journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallRecord {
    /// The runtime-owned call id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The validated arguments as JSON text.
    pub arguments: String,
    /// The assistant message that made the call.
    pub message_id: Option<String>,
    /// Intent or completed.
    pub state: CallState,
    /// The tool message holding the result, once completed.
    pub result_message_id: Option<String>,
    /// When the intent was journaled.
    pub intent_at: Millis,
    /// When the result was stored.
    pub completed_at: Option<Millis>,
}

/// Work queued for a thread while it was busy (spec `queueMessage` / `queueTool`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum QueueItem {
    /// A message to add before the next model call.
    Message {
        /// The author.
        role: Role,
        /// The text.
        content: String,
    },
    /// A tool to run before the next model call.
    Tool {
        /// The tool.
        name: String,
        /// Its arguments.
        arguments: Value,
    },
}

/// A queued item with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Queued {
    /// Position in the thread's queue (strictly increasing).
    pub seq: i64,
    /// The work.
    pub item: QueueItem,
}

/// A thread event (`emitThreadEvent`), kept in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Position (strictly increasing per store).
    pub seq: i64,
    /// What kind of event.
    pub kind: EventKind,
    /// Event data.
    pub data: Value,
    /// When it was stored.
    pub at: Millis,
}

/// What the thread file system knows about an entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStat {
    /// The normalised path.
    pub path: String,
    /// File or folder.
    pub is_folder: bool,
    /// Size in bytes (0 for folders).
    pub size: u64,
    /// MIME type, when known.
    pub mime_type: Option<String>,
    /// When it was last written.
    pub modified_at: Millis,
}

/// A line found by `grep`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrepMatch {
    /// The file.
    pub path: String,
    /// 1-based line number.
    pub line: u64,
    /// The line's text.
    pub text: String,
}

/// What a thread holds that a tool writes, measured in bytes, for [`UsageLimits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Usage {
    /// The files of its file system (their sizes; a folder is none).
    FileBytes,
    /// Its durable values (each key and its value as JSON).
    ValueBytes,
    /// The events of tools' own (`emitThreadEvent`: each name and its data as JSON), toolhost's
    /// own events not counted.
    EventBytes,
}

impl Usage {
    /// What is measured, in words: "bytes of files", ….
    pub fn describe(self) -> &'static str {
        match self {
            Usage::FileBytes => "bytes of files",
            Usage::ValueBytes => "bytes of values",
            Usage::EventBytes => "bytes of its tools' events",
        }
    }
}

/// The most a thread may hold of each [`Usage`]; `None` for no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageLimits {
    /// The most bytes of files.
    pub file_bytes: Option<u64>,
    /// The most bytes of values.
    pub value_bytes: Option<u64>,
    /// The most bytes of tools' own events.
    pub event_bytes: Option<u64>,
}

/// One write in an atomic batch; see [`crate::Store::apply`].
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Fail the batch with [`crate::StoreError::LeaseLost`] unless this run owns the thread
    /// (see [`crate::lease`]); a run puts it first in every batch it writes.
    CheckOwner(String),
    /// Fail the batch with [`crate::StoreError::OverLimit`] if the thread, as the writes before
    /// this one left it, holds more than `limits` allow: put last, it keeps a batch's writes
    /// within the thread's limits in the same transaction that makes them, whoever else writes.
    CheckUsage(UsageLimits),
    /// Append a message.
    AppendMessage(NewMessage),
    /// Delete a message, the tool results that answer its calls, and their attachments.
    DeleteMessage(String),
    /// Journal a call before it runs (a no-op when the intent is already journaled).
    RecordIntent(CallIntent),
    /// Store a call's result as a tool message and mark the call completed.
    CompleteCall {
        /// The call.
        call_id: String,
        /// The tool message holding the result (its `tool_call_id` is set to the call id).
        result: NewMessage,
    },
    /// Set a durable value; `None` deletes it.
    SetValue {
        /// The key.
        key: String,
        /// The JSON value, or `None` to delete.
        value: Option<Value>,
    },
    /// Queue work for the thread.
    Enqueue(QueueItem),
    /// Queue work for the thread unless work under the same key was queued for it before (even
    /// if it has since been taken): a no-op then. What delivers something exactly once from
    /// several places (a result a child thread sends its parent, say) uses it.
    EnqueueOnce {
        /// The key, unique per thread.
        key: String,
        /// The work.
        item: QueueItem,
    },
    /// Remove queued work up to and including this position.
    Dequeue {
        /// The last position removed.
        through: i64,
    },
    /// Change the thread's status.
    SetStatus(ThreadStatus),
    /// Change the agent that runs the thread (a handoff: the thread and its history stay).
    SetAgent(String),
    /// Append an event.
    Event {
        /// What kind of event.
        kind: EventKind,
        /// Event data.
        data: Value,
    },
    /// Write a whole file (folders are created as needed); link it to a message with
    /// `message_id` so deleting the message removes it.
    WriteFile {
        /// Where.
        path: FsPath,
        /// The content.
        bytes: Vec<u8>,
        /// MIME type, when known.
        mime_type: Option<String>,
        /// The message the file is attached to.
        message_id: Option<String>,
    },
    /// Remove a file.
    Unlink(FsPath),
    /// Create a folder (and its parents).
    Mkdir(FsPath),
    /// Remove an empty folder.
    Rmdir(FsPath),
    /// Record that a call waits for approval (a no-op when it already does).
    RequestApproval(ApprovalRequest),
    /// Record the decision on a waiting call; refused when the call does not wait or the decision
    /// does not match what was asked.
    DecideApproval {
        /// The call.
        call_id: String,
        /// The decision.
        decision: ApprovalDecision,
    },
    /// Set a variable of the thread (replacing an earlier value).
    SetVariable(StoredVariable),
    /// Record that the thread waits for variables.
    RequestVariables {
        /// The request's id.
        id: String,
        /// The names of the missing variables.
        names: Vec<String>,
    },
    /// Mark a variable request answered.
    AnswerVariables {
        /// The request's id.
        id: String,
    },
}

/// How many messages a thread holds and the sum of their positions (see
/// [`crate::Store::message_tally`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MessageTally {
    /// How many.
    pub count: u64,
    /// The sum of their `seq`.
    pub seq_sum: i64,
}

impl MessageTally {
    /// The tally of `messages`.
    pub fn of(messages: &[Message]) -> Self {
        MessageTally {
            count: messages.len() as u64,
            seq_sum: messages.iter().map(|m| m.seq).sum(),
        }
    }
}

/// What an applied batch produced, in batch order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Applied {
    /// The messages appended (including call results).
    pub messages: Vec<Message>,
    /// The positions of queued items.
    pub queued: Vec<i64>,
    /// The positions of events.
    pub events: Vec<i64>,
}

/// A call waiting for a person's (or a handler's) decision, bound to exactly what is approved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// The call.
    pub call_id: String,
    /// The tool it calls.
    pub tool: String,
    /// The validated arguments (after input middleware) that are to be approved.
    pub arguments: Value,
    /// The hash of the canonical form of `arguments`.
    pub args_hash: String,
    /// The fingerprint of the tool definition the call was made against.
    pub tool_fingerprint: String,
    /// Why approval is asked.
    pub reason: Option<String>,
    /// What the model is told on a rejection without a message of its own.
    pub reject_message: Option<String>,
}

/// A decision on an [`ApprovalRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalDecision {
    /// Whether the call may run.
    pub approved: bool,
    /// Whether the decision holds for every later call of the same tool in the thread.
    #[serde(default)]
    pub always: bool,
    /// The text the model sees on a rejection.
    #[serde(default)]
    pub message: Option<String>,
    /// Why it was decided so (spec 003: a decision may carry its own reason); on a rejection
    /// without a message the model sees it.
    #[serde(default)]
    pub reason: Option<String>,
    /// Arguments a person edited; they are validated again before the call runs.
    #[serde(default)]
    pub edited_arguments: Option<Value>,
    /// Who or what decided (a person's name, `handler`, `cli`).
    pub decided_by: String,
    /// The argument hash the decision was made for; it must match the request's.
    pub args_hash: String,
    /// The tool fingerprint the decision was made for; it must match the request's.
    pub tool_fingerprint: String,
}

/// An approval request and, once made, its decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRecord {
    /// What was asked.
    pub request: ApprovalRequest,
    /// What was decided; `None` while the call waits.
    pub decision: Option<ApprovalDecision>,
    /// When it was asked.
    pub requested_at: Millis,
    /// When it was decided.
    pub decided_at: Option<Millis>,
}

/// A variable's value as stored for a thread. A secret's value is sealed by the runtime before it
/// reaches the store; the store never sees it in plain text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredVariable {
    /// The variable's name.
    pub name: String,
    /// Whether it is a secret (and `value` is sealed).
    pub secret: bool,
    /// The text, or the sealed secret.
    pub value: String,
}

/// A thread's request for variables it needs and does not have.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VariableRequest {
    /// The request's id.
    pub id: String,
    /// The names of the missing variables (never values).
    pub names: Vec<String>,
    /// When it was made.
    pub requested_at: Millis,
    /// When it was answered; `None` while the thread waits.
    pub answered_at: Option<Millis>,
}
