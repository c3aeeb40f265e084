//! Helpers shared by the command-line tests: a throw-away project folder and a way to run the
//! real `toolhost` binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A project folder under the system's temporary folder, removed when dropped.
pub struct TempProject {
    pub root: PathBuf,
}

impl TempProject {
    pub fn new() -> Self {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let root = std::env::temp_dir().join(format!(
            "toolhost-test-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(root.join("agents/tools")).expect("create temp project");
        Self { root }
    }

    /// Writes a tool file under agents/tools/.
    pub fn tool(&self, file: &str, text: &str) -> &Self {
        std::fs::write(self.root.join("agents/tools").join(file), text).expect("write tool file");
        self
    }
}

impl Drop for TempProject {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// What a run of the binary printed and how it exited.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `toolhost` with these arguments.
pub fn toolhost(args: &[&str]) -> Run {
    finish(Command::new(env!("CARGO_BIN_EXE_toolhost")).args(args))
}

/// Runs `toolhost` with these arguments in the working folder `cwd`.
pub fn toolhost_in(cwd: &Path, args: &[&str]) -> Run {
    finish(
        Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(args)
            .current_dir(cwd),
    )
}

fn finish(command: &mut Command) -> Run {
    let out = command.output().expect("run toolhost");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The example project shipped with the repository.
pub fn quickstart() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/quickstart")
        .display()
        .to_string()
}

/// Writes `text` to `file` under `root`, making its folders.
pub fn write(root: &Path, file: &str, text: &str) {
    let path = root.join(file);
    std::fs::create_dir_all(path.parent().expect("a file in a folder")).expect("make folders");
    std::fs::write(path, text).expect("write file");
}

/// A small deterministic generator; tests seed it from the clock and print the seed on failure.
pub struct Lcg(pub u64);

impl Lcg {
    /// A number below `below`.
    pub fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}
