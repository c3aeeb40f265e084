//! The model a thread was started with: a thread created while the runtime had a model override
//! (`toolhost run --model X`) keeps its name, so that every later run of it (`resume`, `send`,
//! `chat --thread`, a server's run) answers with the same model unless that run's runtime names
//! another. Sub-agent threads take their ancestors' when they have none of their own.

use super::loaded::LoadedProject;
use super::{Runtime, RuntimeError};
use crate::project::MAX_SUBAGENT_DEPTH;
use serde_json::Value;
use toolhost_store::Write;

/// The thread's value holding the model it was started with.
pub(super) const THREAD_MODEL_KEY: &str = "toolhost.model";

impl Runtime {
    /// The model the thread (or the nearest of its ancestors) was started with, if any.
    pub async fn thread_model(&self, thread_id: &str) -> Result<Option<String>, RuntimeError> {
        let mut at = thread_id.to_owned();
        // A sub-agent tree is at most this deep.
        for _ in 0..=MAX_SUBAGENT_DEPTH {
            if let Some(Value::String(name)) = self.services.db.value(&at, THREAD_MODEL_KEY).await?
            {
                return Ok(Some(name));
            }
            match self.services.db.thread(&at).await?.parent {
                Some(parent) => at = parent,
                None => return Ok(None),
            }
        }
        Ok(None)
    }
}

impl LoadedProject {
    /// The write that records this runtime's model override on a thread being created, if it
    /// has one.
    pub(super) fn thread_model_write(&self) -> Option<Write> {
        self.model_override.as_ref().map(|name| Write::SetValue {
            key: THREAD_MODEL_KEY.to_owned(),
            value: Some(Value::String(name.clone())),
        })
    }
}
