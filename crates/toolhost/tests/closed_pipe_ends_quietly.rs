//! When the reader of standard output has gone (`toolhost threads list | head -0`), every
//! command ends at once and quietly, as `cat` does: by SIGPIPE, with nothing on standard error.
//! Any other failure to write standard output is reported and exits 1.

mod common;

use common::{quickstart, toolhost, wait_or_kill, TempProject, PATIENCE};
use std::os::fd::{FromRawFd as _, OwnedFd};
use std::os::unix::process::ExitStatusExt as _;
use std::process::{Command, Stdio};

/// Runs `toolhost` with standard output a pipe whose reading end is already closed; returns
/// how it ended and its standard error.
fn with_closed_stdout(args: &[&str]) -> (std::process::ExitStatus, String) {
    let writer = pipe_without_reader();
    let child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .expect("run toolhost");
    let out = wait_or_kill(child, &format!("toolhost {args:?}"), PATIENCE);
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The writing end of a pipe whose reading end is closed.
#[allow(unsafe_code)] // pipe(2), explained at the block
fn pipe_without_reader() -> OwnedFd {
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills the two descriptors on success, which is checked; each is then
    // owned exactly once.
    let (reader, writer) = unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0, "pipe(2)");
        (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
    };
    drop(reader);
    writer
}

#[test]
fn every_text_output_ends_by_sigpipe_without_a_panic() {
    let data = TempProject::new();
    let data_dir = data.root.join("data").display().to_string();
    let project = quickstart();
    let run = toolhost(&[
        "run",
        &project,
        "--agent",
        "assistant",
        "--data",
        &data_dir,
        "--json",
        "hi",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let record: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let thread = record["thread"]["id"].as_str().unwrap().to_owned();

    let commands: Vec<Vec<&str>> = vec![
        vec!["threads", "list", "--data", &data_dir],
        vec!["threads", "show", &thread, "--data", &data_dir],
        vec!["threads", "show", &thread, "--data", &data_dir, "--json"],
        vec!["tools", "list", &project],
        vec!["tools", "list", &project, "--json"],
        vec!["tools", "schema", &project, "--provider", "openai"],
        vec![
            "tools",
            "check",
            &project,
            "get_weather",
            r#"{"location": "Oslo"}"#,
        ],
        vec![
            "run",
            &project,
            "--agent",
            "assistant",
            "--data",
            &data_dir,
            "hi",
        ],
    ];
    for args in commands {
        let (status, stderr) = with_closed_stdout(&args);
        assert_eq!(
            status.signal(),
            Some(libc::SIGPIPE),
            "{args:?} ended with {status:?}: {stderr}"
        );
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn a_full_disk_on_standard_output_is_reported_and_exits_1() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["tools", "list", &quickstart()])
        .stdin(Stdio::null())
        .stdout(full)
        .stderr(Stdio::piped())
        .spawn()
        .expect("run toolhost");
    let out = wait_or_kill(child, "toolhost tools list", PATIENCE);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error: standard output could not be written.")
            && stderr.contains("No space left on device"),
        "{stderr}"
    );
}
