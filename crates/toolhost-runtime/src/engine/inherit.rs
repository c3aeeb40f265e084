//! Variables across threads (spec 001 §3): a child thread inherits its parent's resolved
//! values, but for the names its own definitions declare `scoped`. Scoped values still flow
//! down from the thread where they are given, since a grandchild inherits what its parent
//! resolved.

use super::{Runtime, RuntimeError};
use crate::project::AgentDef;
use crate::variables::Resolved;
use std::future::Future;
use std::pin::Pin;

type Boxed<'a, T> = Pin<Box<dyn Future<Output = Result<T, RuntimeError>> + Send + 'a>>;

impl Runtime {
    /// What the thread inherits from its parent: every value the parent resolves (its secrets
    /// opened with the parent's seal), less the names `agent` (the thread's) declares `scoped`.
    /// Empty for a thread without a parent. Boxed: it resolves the parent, which inherits too.
    pub(super) fn inherited<'a>(
        &'a self,
        thread_id: &'a str,
        agent: &'a AgentDef,
    ) -> Boxed<'a, Resolved> {
        Box::pin(async move {
            let mut inherited = Resolved::default();
            let Some(parent) = self.services.db.thread(thread_id).await?.parent else {
                return Ok(inherited);
            };
            let parent_thread = self.services.db.thread(&parent).await?;
            // A parent whose agent is gone passes nothing on.
            let Some(parent_agent) = self.project.defs.agents.get(&parent_thread.agent) else {
                return Ok(inherited);
            };
            let scoped = self.project.scoped_names(agent);
            let values = self.resolve(&parent, parent_agent).await?;
            inherited.merge(
                values
                    .entries()
                    .filter(|(name, _, _)| !scoped.contains(name)),
            );
            Ok(inherited)
        })
    }
}
