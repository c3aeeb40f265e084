//! The MCP servers a project imports end when the toolhost that started them stops, even a
//! program that goes on after the end of its input (`tests/mcp/oversized_server.py` with
//! PID_FILE): `toolhost serve` stopped with SIGTERM, `toolhost mcp` whose client closes its
//! side, and a command that loads the project, runs a thread and ends (`toolhost run`). Each is
//! closed as any server is (its input ends, then SIGTERM, then SIGKILL), and toolhost exits only
//! once it has ended.

mod common;

use common::{
    lines_of, next_line, output_of, rest_of, scripted_agent, terminate, test_python, wait_or_kill,
    write, TempProject, PATIENCE,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A project whose agent offers the stubborn server `h`'s tools (it writes its process id to the
/// file PID_FILE names).
fn project() -> TempProject {
    let project = TempProject::new();
    let script = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap())
        .join("tests/mcp/oversized_server.py");
    write(
        &project.root,
        "agents/mcp/h.json",
        &format!(
            r#"{{"command": [{:?}, {:?}], "env": ["PID_FILE"], "trusted": true}}"#,
            test_python(),
            script
        ),
    );
    scripted_agent(&project.root, &["h.echo"], "{\"text\": \"done\"}\n");
    project
}

/// Whether process `pid` runs (a zombie does not).
fn running(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

fn pid_in(file: &PathBuf) -> String {
    std::fs::read_to_string(file).expect("the server wrote its process id when it started")
}

/// Runs `toolhost COMMAND PROJECT --agent a --data DATA ARGS...` to its end, its standard input
/// closed, with the server's PID_FILE set.
fn to_the_end(command: &str, project: &TempProject, pid_file: &Path, args: &[&str]) -> Output {
    output_of(
        Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args([command, &project.root.display().to_string(), "--agent", "a"])
            .arg("--data")
            .arg(project.root.join("data"))
            .args(args)
            .env("PID_FILE", pid_file)
            .stdin(Stdio::null()),
    )
}

#[test]
fn a_stopped_server_ends_the_programs_of_its_mcp_servers() {
    let pid_file =
        std::env::temp_dir().join(format!("toolhost-stubborn-serve-{}", std::process::id()));
    let project = project();
    let data = project.root.join("data");
    let mut server = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["serve", &project.root.display().to_string(), "--data"])
        .arg(&data)
        .args(["--listen", "127.0.0.1:0", "--no-reload"])
        .env("PID_FILE", &pid_file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The project is loaded, its MCP server started, before the address is printed.
    let out = lines_of(server.stdout.take().unwrap());
    let first = next_line(&out);
    assert!(first.contains("serves"), "{first}");
    let pid = pid_in(&pid_file);
    assert!(running(&pid), "the MCP server runs while toolhost serves");

    terminate(&server);
    let status = wait_or_kill(server, "toolhost serve", PATIENCE).status;
    let rest = rest_of(&out);
    assert_eq!(status.code(), Some(0), "{rest}");
    assert!(
        !running(&pid),
        "the MCP server outlived the toolhost that started it"
    );
    let _ = std::fs::remove_file(&pid_file);
}

#[test]
fn an_mcp_session_that_ends_ends_the_programs_of_the_projects_mcp_servers() {
    let pid_file =
        std::env::temp_dir().join(format!("toolhost-stubborn-mcp-{}", std::process::id()));
    let project = project();
    // The client closes its side at once: the session ends, and toolhost with it.
    let ended = to_the_end("mcp", &project, &pid_file, &[]);
    let pid = pid_in(&pid_file);
    assert!(
        !running(&pid),
        "the MCP server outlived the toolhost that started it: {}",
        String::from_utf8_lossy(&ended.stderr)
    );
    let _ = std::fs::remove_file(&pid_file);
}

#[test]
fn a_command_that_ends_ends_the_programs_of_the_projects_mcp_servers() {
    let pid_file =
        std::env::temp_dir().join(format!("toolhost-stubborn-run-{}", std::process::id()));
    let project = project();
    let ran = to_the_end("run", &project, &pid_file, &["hello"]);
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let pid = pid_in(&pid_file);
    assert!(
        !running(&pid),
        "the MCP server outlived the toolhost that started it"
    );
    let _ = std::fs::remove_file(&pid_file);
}
