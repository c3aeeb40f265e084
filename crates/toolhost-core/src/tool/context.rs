//! What a tool call knows about where it runs.

use super::abort::AbortSignal;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

/// The context of one tool call: its ids, its idempotency key, the abort signal, and values the
/// embedding program or runtime attaches by type (thread state, clients, ...).
///
/// Clones share the abort signal: raising it through one is seen by all.
pub struct ToolContext {
    call_id: Arc<str>,
    tool: Option<Arc<str>>,
    tool_call_id: Option<String>,
    thread_id: Option<String>,
    /// Made on first use (or when the context is cloned), so that a call whose tool never looks
    /// at the signal does not allocate one; clones share it.
    abort: OnceLock<AbortSignal>,
    /// Absent until the first extension, so that a plain context allocates nothing for it.
    extensions: Option<Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>>,
}

impl Clone for ToolContext {
    fn clone(&self) -> Self {
        // The signal is made before cloning so that both contexts hold the same one.
        let abort = OnceLock::new();
        let _ = abort.set(self.abort_signal().clone());
        Self {
            call_id: self.call_id.clone(),
            tool: self.tool.clone(),
            tool_call_id: self.tool_call_id.clone(),
            thread_id: self.thread_id.clone(),
            abort,
            extensions: self.extensions.clone(),
        }
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.call_id)
            .field("tool_call_id", &self.tool_call_id)
            .field("thread_id", &self.thread_id)
            .field(
                "aborted",
                &self.abort.get().is_some_and(AbortSignal::is_aborted),
            )
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// A context for the call with this runtime-owned id.
    pub fn new(call_id: impl Into<Arc<str>>) -> Self {
        Self {
            call_id: call_id.into(),
            tool: None,
            tool_call_id: None,
            thread_id: None,
            abort: OnceLock::new(),
            extensions: None,
        }
    }

    /// Sets the thread the call runs in.
    pub fn with_thread(mut self, thread_id: impl Into<String>) -> Self {
        self.thread_id = Some(thread_id.into());
        self
    }

    /// Sets the id the model gave the call.
    pub fn with_tool_call_id(mut self, id: impl Into<String>) -> Self {
        self.tool_call_id = Some(id.into());
        self
    }

    /// Uses this abort signal.
    pub fn with_abort(mut self, abort: AbortSignal) -> Self {
        self.abort = OnceLock::from(abort);
        self
    }

    /// Attaches a value that tools can fetch by its type with [`ToolContext::get`].
    pub fn with_extension<T: Any + Send + Sync>(mut self, value: T) -> Self {
        let map = self.extensions.get_or_insert_with(Default::default);
        Arc::make_mut(map).insert(TypeId::of::<T>(), Arc::new(value));
        self
    }

    /// The value of type `T` attached to this context, if any.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.extensions
            .as_ref()?
            .get(&TypeId::of::<T>())
            .and_then(|v| v.downcast_ref::<T>())
    }

    /// The runtime's id for this call.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The tool being called (set when the call is dispatched).
    pub fn tool_name(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// Takes the registered tool's shared name, so that dispatch does not allocate a copy.
    pub(crate) fn set_tool_name(&mut self, name: &Arc<str>) {
        self.tool = Some(Arc::clone(name));
    }

    /// The id the model gave this call, if any.
    pub fn tool_call_id(&self) -> Option<&str> {
        self.tool_call_id.as_deref()
    }

    /// The thread the call runs in, if any.
    pub fn thread_id(&self) -> Option<&str> {
        self.thread_id.as_deref()
    }

    /// A key that stays the same when this call is retried (thread id + call id). A tool passes
    /// it on to the systems it changes, so that a retried call takes effect once.
    pub fn idempotency_key(&self) -> String {
        match &self.thread_id {
            Some(thread) => format!("{thread}:{}", self.call_id),
            None => self.call_id.to_string(),
        }
    }

    /// The abort signal of the run.
    pub fn abort_signal(&self) -> &AbortSignal {
        self.abort.get_or_init(AbortSignal::new)
    }
}

#[cfg(test)]
mod tests {
    use super::AbortSignal;

    #[test]
    fn a_graceful_stop_is_an_abort_that_does_not_interrupt_and_a_hard_one_wins() {
        let signal = AbortSignal::new();
        let clone = signal.clone();
        assert!(!clone.is_aborted() && !clone.is_interrupted());
        signal.abort_gracefully();
        assert!(clone.is_aborted() && !clone.is_interrupted());
        signal.abort();
        assert!(clone.is_aborted() && clone.is_interrupted());
        // A graceful stop after a hard one does not soften it.
        signal.abort_gracefully();
        assert!(clone.is_interrupted());
    }
}
