//! What a node hears of commits on a shared database: for followers of what is stored (event
//! streams) to read again at once, and only when what they follow changed.

/// A group of writes committed on some node of the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// The threads it wrote to; `None` when that is not known (too many to say, or a
    /// notification that may have been missed): anything may have changed.
    pub threads: Option<Vec<String>>,
}

impl Committed {
    /// Whether a follower of `thread` should read again.
    pub fn touches(&self, thread: &str) -> bool {
        self.threads
            .as_ref()
            .is_none_or(|threads| threads.iter().any(|t| t == thread))
    }
}
