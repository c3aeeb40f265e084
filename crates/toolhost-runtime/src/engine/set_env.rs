//! Values a run's calls set (`state.setEnv`, catalogue SA-31), stored when the call's step is:
//! as the thread's own, and as each active descendant's, so that sub-agents still running see
//! the new value from their next run on, but for a descendant whose definitions declare the name
//! `scoped` (the value stops where inheritance would).

use super::ownership::OwnerId;
use super::{Runtime, RuntimeError};
use crate::variables::VariableValue;
use toolhost_store::ThreadStatus;

impl Runtime {
    /// Stores values a run's calls set (`setEnv`) as the thread's, and as each active (not
    /// finished) descendant's that does not declare the name `scoped` (catalogue SA-31).
    pub(super) async fn store_env(
        &self,
        thread_id: &str,
        owner: &OwnerId,
        values: Vec<VariableValue>,
    ) -> Result<(), RuntimeError> {
        let writes = self
            .variables()
            .variable_writes(thread_id, values.clone())?;
        self.commit(thread_id, owner, writes).await?;
        let mut below = vec![thread_id.to_owned()];
        while let Some(thread) = below.pop() {
            for child in self.services.db.threads(Some(&thread)).await? {
                below.push(child.id.clone());
                if matches!(child.status, ThreadStatus::Done | ThreadStatus::Failed) {
                    continue;
                }
                let scoped = self
                    .project
                    .defs
                    .agents
                    .get(&child.agent)
                    .map(|a| self.project.scoped_names(a))
                    .unwrap_or_default();
                let passed: Vec<VariableValue> = values
                    .iter()
                    .filter(|v| !scoped.contains(&v.name))
                    .cloned()
                    .collect();
                if !passed.is_empty() {
                    let writes = self.variables().variable_writes(&child.id, passed)?;
                    self.services.db.apply(&child.id, writes).await?;
                }
            }
        }
        Ok(())
    }
}
