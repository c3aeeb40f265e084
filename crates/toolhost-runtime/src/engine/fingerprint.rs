//! What an approval is bound to besides the call: the tool's definition and, for a tool bound
//! to a process activity, the program behind it.
//!
//! A person approves a call of a tool as it is now. Should the activity's file be changed while
//! the call waits (another command, other arguments, another working folder or environment) or
//! the program itself be replaced (the executable, or a script the command names), the decision
//! no longer matches and the call does not run.
//!
//! The program is identified by its content: the SHA-256 of every file the command names (the
//! executable, found on `PATH` for a bare name, and each argument that is a file relative to the
//! working folder). A content hash is chosen over size and modification time because a swapped
//! program of the same size written within the same second would pass those, and a `touch`
//! that changes nothing would fail them. Hashing is cheap: each file is read once per process
//! and version (the hash is kept by path, size and modification time), and a file larger than
//! [`MAX_HASHED_BYTES`] is identified by its size and modification time instead.

use crate::activity::ProcessActivity;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;
use toolhost_core::canonical::canonical_hash;
use toolhost_core::AnyTool;

/// The largest file whose content is hashed; a larger one is identified by size and mtime.
pub const MAX_HASHED_BYTES: u64 = 64 * 1024 * 1024;

/// The fingerprint of a tool: its definition (what the model was shown and what is validated)
/// and, when a process activity of the project at `root` runs it, that activity's command and
/// program files. Paths inside the project count from its folder, so the same project reached
/// by another path (relative or absolute) has the same fingerprint.
pub(super) fn fingerprint(tool: &AnyTool, activity: Option<(&ProcessActivity, &Path)>) -> String {
    let definition = serde_json::to_value(tool.definition()).unwrap_or(Value::Null);
    match activity {
        None => canonical_hash(&definition),
        Some((activity, root)) => canonical_hash(&json!({
            "definition": definition,
            "activity": activity_identity(activity, root),
        })),
    }
}

/// How a process activity runs, and the identity of each file its command names.
fn activity_identity(activity: &ProcessActivity, root: &Path) -> Value {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_owned());
    let program = resolve_program(&activity.program);
    let program = program.as_deref().unwrap_or(&activity.program);
    let mut files = vec![file_identity(program, &root)];
    // A script or other file the command hands the program (`python3 tools/pay.py`).
    for arg in &activity.args {
        let path = activity.cwd.join(arg);
        if path.is_file() {
            files.push(file_identity(&path, &root));
        }
    }
    json!({
        "name": activity.name,
        "args": activity.args,
        "cwd": in_project(&activity.cwd, &root),
        "env": activity.env,
        "files": files,
    })
}

/// `path` from the project's folder (`<project>/...`) when it is inside it, else as it resolves.
fn in_project(path: &Path, root: &Path) -> PathBuf {
    let resolved = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    match resolved.strip_prefix(root) {
        Ok(inside) => Path::new("<project>").join(inside),
        Err(_) => resolved,
    }
}

/// The file a program name stands for: a path as it is, a bare name looked up on `PATH` (as
/// the process is started with this process's `PATH`).
fn resolve_program(program: &Path) -> Option<PathBuf> {
    if program.components().count() > 1 || program.is_absolute() {
        return Some(program.to_owned());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// A file's identity: its path (from the project's folder when inside it) and content hash, or
/// size and mtime when it is larger than [`MAX_HASHED_BYTES`]; `missing` when it cannot be read
/// (the call would fail to start).
fn file_identity(path: &Path, root: &Path) -> Value {
    let resolved = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let shown = in_project(&resolved, root);
    let Ok(meta) = std::fs::metadata(&resolved) else {
        return json!({"path": shown, "missing": true});
    };
    let size = meta.len();
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    if size > MAX_HASHED_BYTES {
        return json!({"path": shown, "size": size, "mtimeNs": mtime.to_string()});
    }
    match content_hash(&resolved, size, mtime) {
        Some(sha256) => json!({"path": shown, "sha256": sha256}),
        None => json!({"path": shown, "missing": true}),
    }
}

/// Content hashes already computed, by path, size and modification time.
type HashCache = HashMap<(PathBuf, u64, u128), String>;

fn content_hash(path: &Path, size: u64, mtime: u128) -> Option<String> {
    static CACHE: Mutex<Option<HashCache>> = Mutex::new(None);
    let key = (path.to_owned(), size, mtime);
    if let Some(hit) = CACHE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .and_then(|c| c.get(&key))
    {
        return Some(hit.clone());
    }
    let mut file = std::fs::File::open(path).ok()?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let hex: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    CACHE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(key, hex.clone());
    Some(hex)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_known_by_its_content_and_its_place_in_the_project() {
        let dir = std::env::temp_dir().join(format!("th-fp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let dir = std::fs::canonicalize(&dir).unwrap();
        let file = dir.join("pay.py");
        std::fs::write(&file, "print('a')").unwrap();
        let first = file_identity(&file, &dir);
        assert_eq!(first["path"], "<project>/pay.py");
        std::fs::write(&file, "print('b')").unwrap();
        assert_ne!(
            first,
            file_identity(&file, &dir),
            "same size, other content"
        );
        assert_eq!(file_identity(&dir.join("gone"), &dir)["missing"], true);

        // The same project reached by a relative path has the same identity.
        let activity = |root: &Path| {
            let text = r#"{"command": ["python3", "pay.py"]}"#;
            ProcessActivity::parse("pay", text, root).unwrap()
        };
        let here = std::env::current_dir().unwrap();
        let up: PathBuf = here.components().skip(1).map(|_| "..").collect();
        let relative = up.join(dir.strip_prefix("/").unwrap());
        assert_eq!(
            activity_identity(&activity(&dir), &dir),
            activity_identity(&activity(&relative), &relative)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
