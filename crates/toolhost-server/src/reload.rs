//! Loading a project again when its files change: the files under `agents/` are looked at
//! every so often, and a new load replaces the one in a [`RuntimeSlot`] (a load that fails is
//! passed over, the old one kept). What started on a load finishes on it; whoever follows the
//! slot (MCP sessions and listen streams) is told of the new load.

use crate::state::RuntimeSlot;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use toolhost_runtime::engine::Runtime;

/// How deep under `agents/` the watch looks (tool files may import helpers in folders).
const WATCH_DEPTH: usize = 4;

/// Every file under the project's `agents/` with its size and modification time, sorted: what
/// changes when a definition is written, added or removed.
fn fingerprint(root: &Path) -> Vec<(PathBuf, u64, Option<SystemTime>)> {
    let mut files = Vec::new();
    let mut folders = vec![(root.join("agents"), 0)];
    while let Some((folder, depth)) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if meta.is_dir() {
                if depth < WATCH_DEPTH {
                    folders.push((path, depth + 1));
                }
            } else {
                files.push((path, meta.len(), meta.modified().ok()));
            }
        }
    }
    files.sort();
    files
}

/// Every `every`, looks at the project's files under `root`; when they changed, loads the
/// project with `reload` (on the blocking pool, driven there: loading reads and parses files) and puts
/// the load in `slot`, having it carry over what belongs to the process from the load it
/// replaces (see [`Runtime::carry_over_from`]). A load that fails (`None`) is passed over.
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
        let mut seen = fingerprint(&root);
        loop {
            tokio::time::sleep(every).await;
            let now = fingerprint(&root);
            if now == seen {
                continue;
            }
            seen = now;
            let (load, runtime) = (reload(), tokio::runtime::Handle::current());
            let Ok(Some(mut runtime)) =
                tokio::task::spawn_blocking(move || runtime.block_on(load)).await
            else {
                tracing::warn!(project = %root.display(), "the project's files changed but it did not load; the previous load is kept");
                continue;
            };
            runtime.carry_over_from(&slot.current());
            let old = slot.replace(Arc::new(runtime));
            tracing::info!(project = %root.display(), "the project's files changed; loaded again");
            // The old load's MCP connections close when its last call is done; a drop that
            // waits for them never holds an executor thread.
            tokio::task::spawn_blocking(move || drop(old));
        }
    })
}
