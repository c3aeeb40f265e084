//! The store's errors: one enum, the same for every backend.

use crate::path::PathError;

/// Why a store operation failed. Nothing was written when an error is returned from
/// [`crate::Store::apply`]: a batch is all or nothing.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No thread has this id.
    #[error("thread {0} does not exist")]
    ThreadNotFound(String),
    /// No message has this id in the thread.
    #[error("message {0} does not exist in this thread")]
    MessageNotFound(String),
    /// A result was recorded for a call whose intent was never journaled.
    #[error("call {0} has no journaled intent; record the intent before the result")]
    CallNotJournaled(String),
    /// A call already has a result; a result is never recorded twice.
    #[error("call {0} already has a result")]
    CallAlreadyCompleted(String),
    /// A decision was refused: nothing waits for it, it was already made, or it does not match
    /// the request (other arguments, another tool definition).
    #[error("decision on call {call_id} refused: {reason}")]
    DecisionRefused {
        /// The call the decision names.
        call_id: String,
        /// Why it was refused.
        reason: String,
    },
    /// Another run owns the thread; nothing was changed.
    #[error("thread {thread} is owned by run {} since {} (its lease runs until {})", lease.owner, crate::model::display_millis(lease.since), crate::model::display_millis(lease.expires_at))]
    ThreadOwned {
        /// The thread.
        thread: String,
        /// Who holds it.
        lease: crate::lease::Lease,
    },
    /// A run wrote to a thread it no longer owns (its lease expired and was taken over, or was
    /// released); nothing was written.
    #[error("run {owner} no longer owns thread {thread}: its lease expired or was taken over")]
    LeaseLost {
        /// The thread.
        thread: String,
        /// The run that lost it.
        owner: String,
    },
    /// An event of a tool's own was given a name reserved for toolhost's events.
    #[error("the event name \"{0}\" is reserved for toolhost's own events; choose another")]
    ReservedEventName(String),
    /// A token with this id exists already.
    #[error("a token with id {0} exists already")]
    TokenExists(String),
    /// A path was refused.
    #[error(transparent)]
    Path(#[from] PathError),
    /// No file or folder at this path.
    #[error("{0}: no such file or folder")]
    FileNotFound(String),
    /// The path names a folder where a file was expected.
    #[error("{0} is a folder")]
    IsAFolder(String),
    /// The path (or one of its parents) names a file where a folder was expected.
    #[error("{0} is not a folder")]
    NotAFolder(String),
    /// `rmdir` on a folder that still has entries.
    #[error("{0} is not empty")]
    FolderNotEmpty(String),
    /// The root folder cannot be removed or written.
    #[error("the root folder cannot be changed that way")]
    Root,
    /// A batch would have left the thread holding more than a limit allows; nothing was
    /// written.
    #[error("the thread would hold {reached} {}, over its limit of {limit}", usage.describe())]
    OverLimit {
        /// What is limited.
        usage: crate::model::Usage,
        /// The limit.
        limit: u64,
        /// What the thread would have held.
        reached: u64,
    },
    /// The runtime refused to store what it was given (data holding the value of a secret that
    /// cannot be redacted, for example); the text says what and why, never the data itself.
    #[error("{0}")]
    Refused(String),
    /// The database was written by a newer toolhost.
    #[error("the database schema is version {found}, newer than this toolhost knows ({known}); upgrade toolhost or use another data folder")]
    SchemaTooNew {
        /// The version found in the database.
        found: i64,
        /// The newest version this build knows.
        known: i64,
    },
    /// A stored value could not be decoded (the database was changed by something else).
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// The backend failed (disk full, I/O error, lock timeout, ...).
    #[error("storage failed: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// The result type of store operations.
pub type StoreResult<T> = Result<T, StoreError>;

/// A stored value that does not read back as what was stored (JSON, a status, a number out of
/// range), as every backend reports it.
pub(crate) fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(what.to_string())
}
