//! What a load of a project saw of its files: every file under `agents/` with its size and
//! modification time. A load takes it before it reads anything, so a file written while the
//! project loads differs from it, and a watch that compares the disk with the current load's
//! snapshot never misses a change, however late the watch starts.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// How deep under `agents/` a snapshot looks (tool files may import helpers in folders).
const DEPTH: usize = 4;

/// The files under a project's `agents/`, sorted, each with its size and modification time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectFiles(Vec<(PathBuf, u64, Option<SystemTime>)>);

impl ProjectFiles {
    /// Looks at the files under `root/agents/` now. A folder or file that cannot be read is
    /// left out (the load that reads it reports it).
    pub fn look(root: &Path) -> Self {
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
                    if depth < DEPTH {
                        folders.push((path, depth + 1));
                    }
                } else {
                    files.push((path, meta.len(), meta.modified().ok()));
                }
            }
        }
        files.sort();
        Self(files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_added_changed_or_removed_changes_the_snapshot() {
        let root = std::env::temp_dir().join(format!("files-seen-{}", std::process::id()));
        let tools = root.join("agents/tools/deep");
        std::fs::create_dir_all(&tools).unwrap();
        let before = ProjectFiles::look(&root);
        assert_eq!(before, ProjectFiles::look(&root));
        std::fs::write(tools.join("a.json"), "{}").unwrap();
        let added = ProjectFiles::look(&root);
        assert_ne!(before, added);
        std::fs::write(tools.join("a.json"), "{ }").unwrap();
        let changed = ProjectFiles::look(&root);
        assert_ne!(added, changed);
        std::fs::remove_file(tools.join("a.json")).unwrap();
        assert_eq!(before, ProjectFiles::look(&root));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
