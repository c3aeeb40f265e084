//! Finding files of a thread's file system by name (`find`) and lines in them (`grep`): the same
//! rules for every backend, which only list the entries and read the files.

use crate::model::{FileStat, GrepMatch};
use crate::path::FsPath;

/// The largest file `grep` reads.
pub(crate) const GREP_MAX_FILE: u64 = 16 * 1024 * 1024;

/// Whether `entry` lies below `dir` (not `dir` itself).
pub(crate) fn strictly_under(entry: &FileStat, dir: &FsPath) -> bool {
    crate::path::normalize(&entry.path).is_ok_and(|p| p.is_within(dir) && &p != dir)
}

/// Whether the entry's name (the last part of its path) matches the glob `pattern`.
pub(crate) fn name_matches(entry: &FileStat, pattern: &str) -> bool {
    glob_match(pattern, entry.path.rsplit('/').next().unwrap_or(""))
}

/// Whether `grep` reads `entry`: a file, not too large, while matches are still wanted.
pub(crate) fn worth_reading(entry: &FileStat, found: usize, limit: usize) -> bool {
    !entry.is_folder && entry.size <= GREP_MAX_FILE && found < limit
}

/// Adds the lines of the file at `path` that contain `needle` to `out`, up to `limit` in all;
/// a file that is not UTF-8 text is not searched.
pub(crate) fn grep_file(
    path: &str,
    bytes: Vec<u8>,
    needle: &str,
    limit: usize,
    out: &mut Vec<GrepMatch>,
) {
    let Ok(text) = String::from_utf8(bytes) else {
        return;
    };
    for (i, line) in text.lines().enumerate() {
        if out.len() >= limit {
            break;
        }
        if line.contains(needle) {
            out.push(GrepMatch {
                path: path.to_owned(),
                line: i as u64 + 1,
                text: line.to_owned(),
            });
        }
    }
}

/// `*` matches any run of characters, `?` exactly one; everything else matches itself.
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs_match_runs_and_single_characters() {
        assert!(glob_match("*.png", "chart.png"));
        assert!(!glob_match("*.png", "chart.pngx"));
        assert!(glob_match("c?art*", "chart.png"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("?", ""));
    }
}
