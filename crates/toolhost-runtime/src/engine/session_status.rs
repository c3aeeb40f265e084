//! The thread's session status for a caller: what the latest answered call of a side's
//! `sessionStatus` tool published (see [`super::session`]).

use super::session::latest_status;
use super::{Runtime, RuntimeError};
use crate::project::SessionBinding;

impl Runtime {
    /// The thread's session status: what the latest answered call of a side's
    /// `sessionStatus` tool published (see [`SessionBinding`]); `None` when no side has the
    /// binding or none called it yet.
    pub async fn session_status(&self, thread_id: &str) -> Result<Option<String>, RuntimeError> {
        let thread = self.services.db.thread(thread_id).await?;
        let Some(agent) = self.project.defs.agents.get(&thread.agent) else {
            return Err(self.unknown_agent(&thread.agent));
        };
        let bindings: Vec<&SessionBinding> = agent
            .sides()
            .into_iter()
            .filter_map(|(_, side)| side.session_status.as_ref())
            .collect();
        Ok(self
            .read_history(thread_id, |history| latest_status(&bindings, history))
            .await?)
    }
}
