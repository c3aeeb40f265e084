//! Loading a project again when its files change: the files under `agents/` are looked at
//! every so often, and a new load replaces the one in a [`RuntimeSlot`] (a load that fails is
//! passed over, the old one kept). What started on a load finishes on it; whoever follows the
//! slot (MCP sessions and listen streams) is told of the new load.

use crate::state::RuntimeSlot;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use toolhost_runtime::engine::Runtime;
use toolhost_runtime::project::ProjectFiles;

/// Every `every`, compares the project's files under `root` with what the current load found
/// (see [`Runtime::files_seen`]), so a change made before the watch began is not missed; when
/// they differ, loads the project with `reload` (on the blocking pool, driven there: loading
/// reads and parses files) and puts the load in `slot`, having it carry over what belongs to
/// the process from the load it replaces (see [`Runtime::carry_over_from`]). A load that fails
/// (`None`) is passed over, and not tried again until the files change once more.
pub(crate) fn reload_on_change<Load>(
    slot: RuntimeSlot,
    root: PathBuf,
    every: Duration,
    reload: impl Fn() -> Load + Send + Sync + 'static,
) -> tokio::task::JoinHandle<()>
where
    Load: std::future::Future<Output = Option<Runtime>> + Send + 'static,
{
    tokio::spawn(async move {
        let mut failed: Option<ProjectFiles> = None;
        loop {
            tokio::time::sleep(every).await;
            let now = ProjectFiles::look(&root);
            if now == *slot.current().files_seen() || failed.as_ref() == Some(&now) {
                continue;
            }
            let (load, runtime) = (reload(), tokio::runtime::Handle::current());
            let Ok(Some(mut runtime)) =
                tokio::task::spawn_blocking(move || runtime.block_on(load)).await
            else {
                failed = Some(now);
                tracing::warn!(project = %root.display(), "the project's files changed but it did not load; the previous load is kept");
                continue;
            };
            failed = None;
            runtime.carry_over_from(&slot.current());
            let old = slot.replace(Arc::new(runtime));
            tracing::info!(project = %root.display(), "the project's files changed; loaded again");
            // The old load's MCP connections close when its last call is done; a drop that
            // waits for them never holds an executor thread.
            tokio::task::spawn_blocking(move || drop(old));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_store::{SqliteStore, Store};

    /// A file written after the project loaded but before the watch began is still a change:
    /// the watch compares the disk with what the load found, not with its own first look.
    #[tokio::test]
    async fn a_change_made_before_the_watch_began_is_loaded() {
        let root = std::env::temp_dir().join(format!("reload-late-watch-{}", std::process::id()));
        let tools = root.join("agents/tools");
        std::fs::create_dir_all(&tools).unwrap();
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&root.join("toolhost.db")).unwrap());
        let load = {
            let (root, store) = (root.clone(), store.clone());
            move || {
                let (root, store) = (root.clone(), store.clone());
                async move { Runtime::load(&root, store).await.ok() }
            }
        };
        let slot = RuntimeSlot::new(Arc::new(load().await.unwrap()));
        assert!(slot.current().tools().get("recall").is_none());
        std::fs::write(
            tools.join("recall.json"),
            r#"{"type": "object", "description": "Recalls a fact.", "properties": {}}"#,
        )
        .unwrap();
        let mut loads = slot.loads();
        let watch = reload_on_change(slot.clone(), root.clone(), Duration::from_millis(10), load);
        // A guard against a missed change, not a limit on how fast the load must be.
        tokio::time::timeout(Duration::from_secs(600), loads.changed())
            .await
            .expect("the change was never loaded")
            .unwrap();
        assert!(slot.current().tools().get("recall").is_some());
        watch.abort();
        std::fs::remove_dir_all(&root).unwrap();
    }
}
