//! Pages of a list: what a caller that serves a list to others asks for, so that no answer
//! holds more than one page, however many threads or messages the store has.

use crate::model::ThreadStatus;

/// Which threads, newest first, and how many.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadQuery {
    /// Only threads of these agents; every agent when `None`.
    pub agents: Option<Vec<String>>,
    /// Only threads with this status.
    pub status: Option<ThreadStatus>,
    /// Only the threads created from this one (its sub-threads).
    pub parent: Option<String>,
    /// Only threads after this one in the order (the last of the previous page).
    pub after: Option<String>,
    /// At most this many.
    pub limit: usize,
}
