//! Helpers shared by the command-line tests: a throw-away project folder and a way to run the
//! real `toolhost` binary.

#![allow(dead_code)]

pub mod nodes;

// The same helper as the server tests', from their folder.
#[path = "../../../toolhost-server/tests/common/ports.rs"]
mod ports;
#[allow(unused_imports)] // not every test file starts a program on a port
pub use ports::free_port;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a test waits for a line, an answer or the end of a process before it fails instead
/// of hanging: a hang must fail the test, not stall CI until it is cut. Far beyond what anything
/// takes on a slow machine, so it never fails a test that works.
pub const PATIENCE: Duration = Duration::from_secs(600);

/// The lines of `output` (a process's standard output, a socket), read on a thread of their own
/// so that a wait for one can end: see [`next_line`].
pub fn lines_of(output: impl Read + Send + 'static) -> Receiver<String> {
    let (sender, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(output).lines() {
            let Ok(line) = line else { return };
            if sender.send(line).is_err() {
                return;
            }
        }
    });
    lines
}

/// The next of `lines` (from [`lines_of`]); fails the test when the output was closed, or
/// when nothing came for [`PATIENCE`] (a lost answer must fail, not hang).
#[track_caller]
pub fn next_line(lines: &Receiver<String>) -> String {
    match lines.recv_timeout(PATIENCE) {
        Ok(line) => line,
        Err(RecvTimeoutError::Disconnected) => panic!("the output was closed"),
        Err(RecvTimeoutError::Timeout) => panic!("no line came for {PATIENCE:?}"),
    }
}

/// Reads away the rest of `lines` (from [`lines_of`]) on a thread of its own, so that the
/// process writing them never blocks on a full pipe nor meets a closed one.
pub fn read_away(lines: Receiver<String>) {
    std::thread::spawn(move || lines.into_iter().for_each(drop));
}

/// The rest of `lines` (from [`lines_of`]) until the output is closed, each line ended with a
/// line break; fails the test when it stays open and silent for [`PATIENCE`].
#[track_caller]
pub fn rest_of(lines: &Receiver<String>) -> String {
    let mut rest = String::new();
    loop {
        match lines.recv_timeout(PATIENCE) {
            Ok(line) => {
                rest.push_str(&line);
                rest.push('\n');
            }
            Err(RecvTimeoutError::Disconnected) => return rest,
            Err(RecvTimeoutError::Timeout) => {
                panic!("the output was not closed; silent for {PATIENCE:?} after:\n{rest}")
            }
        }
    }
}

/// Waits for `child` (described by `what`) to end, collecting what it writes to its piped
/// standard output and error (a pipe taken before is left to its reader), like
/// `wait_with_output`. A child that neither ends nor writes anything for `patience` is killed
/// (SIGKILL) and the test fails, naming it and showing what it wrote: a hang must fail the
/// test, not stall CI. Polling `try_wait` only bounds the wait; no verdict depends on its pace.
pub fn wait_or_kill(mut child: Child, what: &str, patience: Duration) -> Output {
    fn drain(
        pipe: Option<impl Read + Send + 'static>,
    ) -> (Arc<Mutex<Vec<u8>>>, Option<std::thread::JoinHandle<()>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let reader = pipe.map(|mut pipe| {
            let seen = seen.clone();
            std::thread::spawn(move || {
                let mut chunk = [0u8; 8192];
                loop {
                    match pipe.read(&mut chunk) {
                        Ok(0) => return,
                        Ok(n) => seen.lock().unwrap().extend_from_slice(&chunk[..n]),
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => return,
                    }
                }
            })
        });
        (seen, reader)
    }
    let (stdout, out_reader) = drain(child.stdout.take());
    let (stderr, err_reader) = drain(child.stderr.take());
    let written = || stdout.lock().unwrap().len() + stderr.lock().unwrap().len();
    let mut status: Option<ExitStatus> = None;
    let (mut heard, mut last_news) = (0, Instant::now());
    loop {
        if status.is_none() {
            status = child
                .try_wait()
                .unwrap_or_else(|e| panic!("waiting for {what}: {e}"));
        }
        let reading = [&out_reader, &err_reader]
            .into_iter()
            .flatten()
            .any(|reader| !reader.is_finished());
        if let (Some(status), false) = (status, reading) {
            return Output {
                status,
                stdout: std::mem::take(&mut *stdout.lock().unwrap()),
                stderr: std::mem::take(&mut *stderr.lock().unwrap()),
            };
        }
        if written() != heard {
            (heard, last_news) = (written(), Instant::now());
        } else if last_news.elapsed() > patience {
            let state = match status {
                Some(status) => format!("ended ({status}) but its output stayed open"),
                None => {
                    let _ = child.kill();
                    let _ = child.wait();
                    "had not ended; killed".to_owned()
                }
            };
            panic!(
                "{what} was silent for {patience:?} and {state}\n--- standard output so far:\n{}\n--- standard error so far:\n{}",
                String::from_utf8_lossy(&stdout.lock().unwrap()),
                String::from_utf8_lossy(&stderr.lock().unwrap()),
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

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
    Run::from(output_with_input(
        Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(args)
            .env("TOOLHOST_LOG", "debug")
            .env_remove("TOOLHOST_SECRET_KEY"),
        stdin,
    ))
}

impl From<Output> for Run {
    fn from(out: Output) -> Self {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// Runs `command` with its standard output and error piped, as `output()` does, and waits for
/// it with [`wait_or_kill`]. Standard input is the caller's to set (`output()` makes it empty).
pub fn output_of(command: &mut Command) -> Output {
    let child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {command:?}: {e}"));
    wait_or_kill(child, &format!("{command:?}"), PATIENCE)
}

/// [`output_of`] with `input` as the child's standard input. It is written on a thread of its
/// own, so that a child that does not read it cannot stall the test; a child that ended without
/// reading all of it is for the test to judge by its output, any other failure to write is the
/// test's own.
pub fn output_with_input(command: &mut Command, input: &str) -> Output {
    use std::io::Write as _;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {command:?}: {e}"));
    let mut stdin = child.stdin.take().expect("a piped standard input");
    let text = input.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    let out = wait_or_kill(child, &format!("{command:?}"), PATIENCE);
    if writer.is_finished() {
        match writer.join().expect("the writer of standard input") {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                panic!("write standard input of {command:?}: {e}")
            }
            _ => {}
        }
    }
    out
}

fn finish(command: &mut Command) -> Run {
    Run::from(output_of(command.stdin(Stdio::null())))
}

/// The example project shipped with the repository.
pub fn quickstart() -> String {
    Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap())
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
            Some(wait_or_kill(child, "a toolhost run or resume", PATIENCE).status)
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

/// Waits until `child` (`what`) listens on `port` of 127.0.0.1. A connection that reached
/// itself does not count (dialling a free port of the ephemeral range, the kernel may hand the
/// client that very port, which then also keeps the server from binding it); a child that ends
/// first fails the test at once.
pub fn wait_until_listening(child: &mut Child, port: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("{what} ended ({status}) before it listened on port {port}");
        }
        if let Ok(stream) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            if stream.local_addr().ok() != stream.peer_addr().ok() {
                return;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{what} did not listen on port {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The MCP server of these tests, built on the official Python SDK (`tests/mcp/notes_server.py`).
pub fn notes_server() -> PathBuf {
    Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("tests/mcp/notes_server.py")
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
    use std::io::Write;
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    // A server that never answers fails the test instead of hanging it.
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream.set_write_timeout(Some(PATIENCE)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .unwrap_or_else(|e| panic!("GET {path} from {addr}: no whole answer ({e}): {answer}"));
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
