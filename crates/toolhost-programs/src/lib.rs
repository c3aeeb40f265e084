//! The programs a toolhost project names: a process activity's (run once per call) and an MCP
//! server's (run for as long as its connection lasts).
//!
//! ## Contract
//! - [`Located::of`] reads a definition's `command` (the program and its arguments as a list,
//!   never a shell string) and `cwd` against the project folder and makes every path absolute;
//!   a `cwd` outside the project or an empty program is refused in words naming the field. It
//!   reads no file: whether the program exists is for whoever starts it to say.
//! - Each program runs in a process group of its own, so that whatever it starts ends with it:
//!   [`terminate_group`] asks the group to end (SIGTERM), [`kill_group`] ends it (SIGKILL). A
//!   group id that cannot be one this process started (0, 1, or out of range) is never signalled.

use std::path::{Component, Path, PathBuf};

/// A program a project names (a process activity's, an MCP server's): where it is, its
/// arguments and the folder it runs in, all made absolute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The program: absolute, or a bare name looked up on `PATH`.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// The folder it runs in, inside the project.
    pub cwd: PathBuf,
}

impl Located {
    /// Reads `command` (the program and its arguments as a list) and `cwd` (a folder inside the
    /// project, `.` when absent) against `project`; says what is wrong in words naming the field.
    pub fn of(command: &[String], cwd: Option<&str>, project: &Path) -> Result<Self, LocateError> {
        let Some((program, args)) = command.split_first() else {
            return Err(LocateError::NoCommand);
        };
        if program.trim().is_empty() {
            return Err(LocateError::EmptyProgram);
        }
        let cwd_rel = cwd.unwrap_or(".");
        let cwd_path = Path::new(cwd_rel);
        if cwd_path.is_absolute()
            || cwd_path
                .components()
                .any(|c| matches!(c, Component::ParentDir))
        {
            return Err(LocateError::CwdOutside(cwd_rel.to_owned()));
        }
        // The program runs in `cwd`, so a project given as a relative path (`p`) would be
        // looked up again from inside it (`p/p/...`): every path is made absolute here, against
        // the folder the project was named from, whatever form its name took.
        let project =
            std::path::absolute(project).map_err(|source| LocateError::NoAbsolutePath {
                project: project.to_owned(),
                source,
            })?;
        let program_path = Path::new(program);
        // A bare name is looked up on PATH; a path with a separator is relative to the project.
        let program = if program_path.components().count() > 1 && !program_path.is_absolute() {
            project.join(program_path)
        } else {
            program_path.to_owned()
        };
        Ok(Self {
            program,
            args: args.to_vec(),
            cwd: project.join(cwd_path),
        })
    }
}

/// Why a definition's `command` and `cwd` name no program to run, in words naming the field.
#[derive(Debug, thiserror::Error)]
pub enum LocateError {
    /// `command` is empty.
    #[error("`command` must list the program and its arguments")]
    NoCommand,
    /// `command` starts with an empty or blank name.
    #[error("`command` starts with an empty program name")]
    EmptyProgram,
    /// `cwd` is absolute or climbs out of the project.
    #[error("`cwd` {0:?} must be a folder inside the project")]
    CwdOutside(String),
    /// The project folder has no absolute path (the current folder is gone).
    #[error("the project folder {} has no absolute path: {source}", project.display())]
    NoAbsolutePath {
        /// The project folder as it was named.
        project: PathBuf,
        /// Why it could not be made absolute.
        source: std::io::Error,
    },
}

/// Kills the process group `pgid` (SIGKILL).
pub fn kill_group(pgid: u32) {
    signal_group(pgid, libc::SIGKILL);
}

/// Asks the process group `pgid` to end (SIGTERM).
pub fn terminate_group(pgid: u32) {
    signal_group(pgid, libc::SIGTERM);
}

#[allow(unsafe_code)] // one libc::kill, explained at the call
fn signal_group(pgid: u32, signal: libc::c_int) {
    // A group id that does not fit a pid_t is not one this process started; negating a wrapped
    // value would signal some other process instead.
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill(2) with a negative pid signals the process group; it touches no memory.
    unsafe {
        libc::kill(-pgid, signal);
    }
}
