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

/// Runs `toolhost` with `stdin` as standard input, logging at debug level (so that a test
/// sees everything it could leak) and without a secrets key from the environment.
pub fn toolhost_with_input(args: &[&str], stdin: &str) -> Run {
    use std::io::Write as _;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(args)
        .env("TOOLHOST_LOG", "debug")
        .env_remove("TOOLHOST_SECRET_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run toolhost");
    child
        .stdin
        .take()
        .expect("a piped standard input")
        .write_all(stdin.as_bytes())
        .expect("write standard input");
    let out = child.wait_with_output().expect("run toolhost");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
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

/// What [`run_with_random_kills`] left behind.
pub struct KilledRun {
    /// The top thread (the one `run` created; sub-threads hang below it).
    pub thread: String,
    /// The seed of the random kill moments, for failure messages.
    pub seed: u64,
    /// How many processes were killed.
    pub kills: usize,
    /// The data folder's store.
    pub store: toolhost_store::SqliteStore,
}

/// Runs `agent` of the project at `root` with `toolhost run`, then `toolhost resume` until the
/// thread finishes, killing the process with SIGKILL `kills` times at a random moment 30 ms to
/// `30 + max_wait_ms` ms after its start. After every process, the store must still hold every
/// message of the top thread it held before. `CRASH_LOG` is set to `log` for the tools.
pub fn run_with_random_kills(
    root: &Path,
    agent: &str,
    log: &Path,
    kills: usize,
    max_wait_ms: u64,
) -> KilledRun {
    use std::process::Stdio;
    use std::time::Duration;
    use toolhost_store::{SqliteStore, Store};
    let dir = root.display().to_string();
    let data = root.join("data");
    let data_arg = data.display().to_string();
    let db = data.join("toolhost.db");
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut rng = Lcg(seed);
    let spawn = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(args)
            .env("CRASH_LOG", log)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start toolhost")
    };
    let mut killed = 0;
    let mut committed: Vec<String> = Vec::new();
    let mut thread: Option<String> = None;
    // Each pass kills a process (at most `kills` times) or waits for one to finish and ends.
    loop {
        let mut child = match &thread {
            None => spawn(&["run", &dir, "--agent", agent, "--data", &data_arg, "go"]),
            Some(id) => spawn(&["resume", &dir, id, "--data", &data_arg]),
        };
        let status = if killed < kills {
            std::thread::sleep(Duration::from_millis(30 + rng.next(max_wait_ms)));
            match child.try_wait().unwrap() {
                Some(status) => Some(status),
                None => {
                    child.kill().unwrap(); // SIGKILL
                    child.wait().unwrap();
                    killed += 1;
                    None
                }
            }
        } else {
            Some(child.wait().unwrap())
        };
        // What the store holds now must contain everything it held before.
        if db.exists() {
            let store = SqliteStore::open(&db).unwrap();
            if thread.is_none() {
                thread = store
                    .threads(None)
                    .unwrap()
                    .into_iter()
                    .find(|t| t.parent.is_none())
                    .map(|t| t.id);
            }
            if let Some(id) = &thread {
                let now: Vec<String> = store
                    .messages(id)
                    .unwrap()
                    .into_iter()
                    .map(|m| m.id)
                    .collect();
                assert!(
                    now.starts_with(&committed),
                    "seed {seed}: committed messages were lost after kill {killed}"
                );
                committed = now;
            }
        }
        if let Some(status) = status {
            assert!(status.success(), "seed {seed}: toolhost failed: {status}");
            break;
        }
    }
    assert!(
        killed >= kills,
        "seed {seed}: only {killed} kills happened before the thread finished"
    );
    KilledRun {
        thread: thread.expect("a thread was created"),
        seed,
        kills: killed,
        store: SqliteStore::open(&db).unwrap(),
    }
}

/// The Python with the official MCP SDK: `./scripts/test` installs it and names it in
/// `TOOLHOST_TEST_PYTHON`; without it a test fails and says so, it never skips.
pub fn test_python() -> String {
    std::env::var("TOOLHOST_TEST_PYTHON").unwrap_or_else(|_| {
        panic!("TOOLHOST_TEST_PYTHON does not name a Python with the mcp package: run the tests with ./scripts/test, which installs it")
    })
}

/// The MCP server of these tests, built on the official Python SDK (`tests/mcp/notes_server.py`).
pub fn notes_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/notes_server.py")
}

/// Writes agent `a` of the project at `root`: its prompt `p` offers `tools`, sees the whole
/// conversation, and runs on a scripted model playing `script` (JSON Lines).
pub fn scripted_agent(root: &Path, tools: &[&str], script: &str) {
    write(
        root,
        "agents/models/m.json",
        r#"{"provider": "test", "script": "s.jsonl"}"#,
    );
    write(root, "s.jsonl", script);
    write(
        root,
        "agents/prompts/p.json",
        &serde_json::json!({"toolDescription": "x", "prompt": "Work.", "model": "m",
            "includeChat": true, "includePastTools": true, "tools": tools})
        .to_string(),
    );
    write(
        root,
        "agents/agents/a.json",
        r#"{"type": "ai_human", "sideA": {"prompt": "p", "maxSteps": 8}}"#,
    );
}

/// The tool results of a thread's `--json` record, as (tool, status, text).
pub fn tool_results(record: &serde_json::Value) -> Vec<(String, String, String)> {
    let text =
        |m: &serde_json::Value, field: &str| m[field].as_str().unwrap_or_default().to_owned();
    record["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| (text(m, "name"), text(m, "status"), text(m, "content")))
        .collect()
}

/// The address `toolhost serve` printed in its first line ("... at http://ADDR ...").
pub fn served_address(first_line: &str) -> String {
    first_line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {first_line:?}"))
        .to_owned()
}

/// A plain HTTP/1.0 `GET path` to `addr` with a bearer `token`: the status and the body.
pub fn http_get(addr: &str, path: &str, token: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
    (status, body)
}

/// Asks a served process to stop, as a service manager does (SIGTERM).
pub fn terminate(server: &std::process::Child) {
    let sent = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}
