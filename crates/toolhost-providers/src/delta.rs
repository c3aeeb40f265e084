//! Streaming: the pieces of an answer reported while it arrives.

/// One piece of an answer in progress. Indices count the tool calls of this answer from 0 in
/// the order they appear; a call's `id` is the one the final [`crate::ModelResponse`] gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamDelta {
    /// More reply text.
    Text(String),
    /// More reasoning text.
    Reasoning(String),
    /// A tool call begins.
    ToolCallStarted {
        /// The call's position in this answer.
        index: usize,
        /// The call's id.
        id: String,
        /// The tool's name (already mapped back from its wire name).
        name: String,
    },
    /// More of a tool call's argument text.
    ToolCallArguments {
        /// The call's position in this answer.
        index: usize,
        /// The call's id.
        id: String,
        /// The next piece of the arguments as the model writes them.
        fragment: String,
    },
    /// The exchange failed part-way and is being tried again: forget every delta received so
    /// far for this request; the new attempt reports from the start.
    Restarted {
        /// The attempt that starts now (2 for the first retry).
        attempt: u32,
        /// Why the previous attempt failed, in one line.
        reason: String,
    },
}

/// Where deltas go: called once per delta, in order, from the task running the request. Keep it
/// cheap (push to a channel, append to a buffer).
pub type DeltaSink = dyn Fn(StreamDelta) + Send + Sync;
