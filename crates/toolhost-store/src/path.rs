//! Paths in a thread's file system: normalised, and confined to the thread.
//!
//! A path is a `/`-separated name rooted at the thread's root. [`normalize`] accepts an absolute
//! or relative path, folds repeated slashes and `.` segments, and refuses what could escape or
//! confuse: `..` segments, NUL and other control characters, backslashes, and paths longer than
//! [`MAX_PATH_LEN`]. The root itself is `/`.

use std::fmt;

/// The longest normalised path accepted, in bytes.
pub const MAX_PATH_LEN: usize = 1024;

/// A path refused by [`normalize`], with the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("path {path:?} is refused: {reason}")]
pub struct PathError {
    /// The path as given (control characters escaped by `{:?}` when shown).
    pub path: String,
    /// Why it is refused.
    pub reason: &'static str,
}

/// A normalised path: starts with `/`, no empty, `.` or `..` segments, no trailing slash
/// (except the root).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FsPath(String);

impl FsPath {
    /// The root, `/`.
    pub fn root() -> Self {
        FsPath("/".to_owned())
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the root.
    pub fn is_root(&self) -> bool {
        self.0 == "/"
    }

    /// The parent folder (`/` for a top-level entry and for the root).
    pub fn parent(&self) -> FsPath {
        match self.0.rfind('/') {
            Some(0) | None => FsPath::root(),
            Some(i) => FsPath(self.0[..i].to_owned()),
        }
    }

    /// The last segment (empty for the root).
    pub fn name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or("")
    }

    /// Every ancestor folder from the top down, excluding the root and this path.
    pub fn ancestors(&self) -> Vec<FsPath> {
        let mut out = Vec::new();
        let mut at = 0;
        while let Some(i) = self.0[at + 1..].find('/') {
            at += i + 1;
            out.push(FsPath(self.0[..at].to_owned()));
        }
        out
    }

    /// Whether `self` is `dir` or lies below it.
    pub fn is_within(&self, dir: &FsPath) -> bool {
        dir.is_root() || self.0 == dir.0 || self.0.starts_with(&format!("{}/", dir.0))
    }
}

impl fmt::Display for FsPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Normalises `path`, or says why it is refused.
pub fn normalize(path: &str) -> Result<FsPath, PathError> {
    let refuse = |reason| PathError {
        path: path.to_owned(),
        reason,
    };
    if path.chars().any(char::is_control) {
        return Err(refuse("it contains a NUL or another control character"));
    }
    if path.contains('\\') {
        return Err(refuse("it contains a backslash; separate folders with /"));
    }
    let mut segments = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => return Err(refuse("it contains `..`; paths cannot leave their folder")),
            s => segments.push(s),
        }
    }
    let normal = format!("/{}", segments.join("/"));
    if normal.len() > MAX_PATH_LEN {
        return Err(refuse("it is longer than 1024 bytes"));
    }
    Ok(FsPath(normal))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_folded_to_one_form() {
        assert_eq!(normalize("a//b/./c/").unwrap().as_str(), "/a/b/c");
        assert_eq!(normalize("/").unwrap().as_str(), "/");
        assert_eq!(normalize("").unwrap().as_str(), "/");
    }

    #[test]
    fn escapes_and_control_characters_are_refused() {
        for bad in [
            "../x",
            "/a/../../etc/passwd",
            "a\0b",
            "a\nb",
            "a\\..\\b",
            "..",
        ] {
            assert!(normalize(bad).is_err(), "{bad:?}");
        }
        assert!(normalize(&"a/".repeat(600)).is_err());
    }

    #[test]
    fn parents_names_and_ancestors() {
        let p = normalize("/attachments/2026/chart.png").unwrap();
        assert_eq!(p.parent().as_str(), "/attachments/2026");
        assert_eq!(p.name(), "chart.png");
        let a: Vec<String> = p.ancestors().iter().map(|a| a.to_string()).collect();
        assert_eq!(a, ["/attachments", "/attachments/2026"]);
        assert!(p.is_within(&normalize("/attachments").unwrap()));
        assert!(!p.is_within(&normalize("/attach").unwrap()));
    }
}
