//! `toolhost chat` in a real pseudo-terminal, typed at like a person would: the answer streams
//! in, calls are shown starting and ending, approvals are decided inline (approve, edit, deny
//! with a message), a secret is typed without echo and stored sealed, every message goes to one
//! thread (also when it is continued later with `--thread`), Ctrl-C stops a turn and a second
//! Ctrl-C leaves.

mod common;

use common::{write, TempProject};
use serde_json::Value;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long any expected output may take to appear (generous: machines are slow under load).
const PATIENCE: Duration = Duration::from_secs(60);
const CANARY: &str = "tok_canary_93c1f7aa";
const CTRL_C: &str = "\x03";
const CTRL_U: &str = "\x15";

/// The binary running in a pseudo-terminal, and everything it wrote there.
struct Terminal {
    child: Child,
    master: File,
    output: Arc<Mutex<Vec<u8>>>,
    /// Where the next expectation starts looking.
    cursor: usize,
}

impl Terminal {
    #[allow(unsafe_code)] // openpty and pre_exec, explained at each block
    fn start(args: &[&str]) -> Self {
        let (mut master, mut slave) = (0, 0);
        let size = libc::winsize {
            ws_row: 40,
            ws_col: 200,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty fills two descriptors, which are owned from here on.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(rc, 0, "openpty failed");
        // SAFETY: both descriptors were just opened by openpty and nothing else owns them.
        let (master, slave) =
            unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
        command
            .args(args)
            .env("TERM", "xterm")
            .env_remove("TOOLHOST_SECRET_KEY")
            .env_remove("TOOLHOST_LOG")
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: only async-signal-safe calls between fork and exec: a new session whose
        // controlling terminal is the pty, so Ctrl-C typed there reaches the program.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() == -1 || libc::ioctl(0, libc::TIOCSCTTY, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("start toolhost in a pty");
        drop(command);
        let master = File::from(master);
        let output = Arc::new(Mutex::new(Vec::new()));
        let (mut reader, mut answerer) = (master.try_clone().unwrap(), master.try_clone().unwrap());
        let sink = output.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // Ends with EIO once the program and its terminal are gone.
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let chunk = &buf[..n];
                // A line editor asks where the cursor is; a terminal answers.
                if chunk.windows(4).any(|w| w == b"\x1b[6n") {
                    let _ = answerer.write_all(b"\x1b[1;1R");
                }
                sink.lock().unwrap().extend_from_slice(chunk);
            }
        });
        Self {
            child,
            master,
            output,
            cursor: 0,
        }
    }

    fn all(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().unwrap()).into_owned()
    }

    /// Waits until `needle` appears after what earlier expectations matched; returns the output
    /// from there up to and including it.
    fn expect(&mut self, needle: &str) -> String {
        let start = Instant::now();
        loop {
            {
                let out = self.output.lock().unwrap();
                let text = String::from_utf8_lossy(&out[self.cursor.min(out.len())..]).into_owned();
                if let Some(at) = text.find(needle) {
                    let seen = text[..at + needle.len()].to_owned();
                    self.cursor += seen.len();
                    return seen;
                }
            }
            if start.elapsed() > PATIENCE {
                panic!(
                    "{needle:?} did not appear; the terminal shows:\n{}",
                    self.all()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn type_text(&mut self, text: &str) {
        self.master.write_all(text.as_bytes()).unwrap();
        self.master.flush().unwrap();
    }

    /// Waits for the program to exit and returns its code.
    fn exit_code(&mut self) -> i32 {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            if start.elapsed() > PATIENCE {
                let _ = self.child.kill();
                panic!("toolhost did not exit; the terminal shows:\n{}", self.all());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A shop whose scripted model plays `script`: `ping` answers at once, `pay` needs approval,
/// `slow` runs until the file `release` exists, `charge_card` needs the secret CARD_TOKEN and quotes it back.
fn shop(script: &str) -> TempProject {
    let p = TempProject::new();
    let root = &p.root;
    write(
        root,
        "agents/agents/shop.json",
        r#"{"type": "ai_human", "sideA": {"prompt": "shop"}}"#,
    );
    write(
        root,
        "agents/prompts/shop.json",
        // The whole conversation is shown: the scripted model plays the turn that follows the
        // replies it is shown.
        r#"{"toolDescription": "Shop.", "prompt": "You sell.", "model": "m", "tools": ["ping", "pay", "slow", "charge_card"], "includeChat": true, "includePastTools": true}"#,
    );
    write(
        root,
        "agents/models/m.json",
        r#"{"provider": "test", "script": "script.jsonl"}"#,
    );
    write(root, "script.jsonl", script);
    let obj = r#"{"type": "object", "description": "Does it.", "properties": {"amount": {"type": "integer"}}, "additionalProperties": false}"#;
    for tool in ["ping", "pay", "slow"] {
        write(root, &format!("agents/tools/{tool}.json"), obj);
    }
    write(
        root,
        "agents/tools/charge_card.json",
        r#"{"type": "object", "description": "Charges a card.", "properties": {"amount": {"type": "integer"}}, "variables": [{"name": "CARD_TOKEN", "type": "secret", "required": true}]}"#,
    );
    write(
        root,
        "agents/activities/pay.json",
        r#"{"command": ["python3", "pay.py"], "approval": {"reason": "Moves money."}}"#,
    );
    for tool in ["ping", "slow", "charge_card"] {
        write(
            root,
            &format!("agents/activities/{tool}.json"),
            &format!(r#"{{"command": ["python3", "{tool}.py"]}}"#),
        );
    }
    write(root, "ping.py", "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'status': 'success', 'result': 'pong'}))\n");
    write(root, "pay.py", "import json, sys\ncall = json.load(sys.stdin)\nprint(json.dumps({'status': 'success', 'result': 'paid %d' % call['arguments']['amount']}))\n");
    // `slow` runs until the test lets it end, toolhost is gone, or five minutes passed: no
    // timing is assumed. It ignores SIGTERM, so a stop leaves it running for the grace period
    // before it is killed. Once it ignores SIGTERM it creates the file `ready`.
    write(
        root,
        "slow.py",
        &format!(
            "import json, os, signal, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nparent = os.getppid()\nopen({:?}, 'w').close()\njson.load(sys.stdin)\nend = time.time() + 300\nwhile not os.path.exists({:?}) and time.time() < end and os.getppid() == parent:\n    time.sleep(0.05)\nprint(json.dumps({{'status': 'success', 'result': 'slept'}}))\n",
            root.join("ready").display().to_string(),
            root.join("release").display().to_string()
        ),
    );
    write(root, "charge_card.py", "import json, sys\ncall = json.load(sys.stdin)\nprint(json.dumps({'status': 'success', 'result': 'charged with ' + call['variables']['CARD_TOKEN']}))\n");
    p
}

fn toolhost_json(args: &[&str]) -> Value {
    let out = common::output_of(
        Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(args)
            .stdin(Stdio::null()),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_conversation_typed_in_a_terminal() {
    let project = shop(
        r#"
{"text": "Let me check the line.", "toolCalls": [{"name": "ping", "arguments": {"amount": 1}}]}
{"text": "The line works. Hello there!"}
{"toolCalls": [{"name": "pay", "arguments": {"amount": 20}}]}
{"text": "Paid 20."}
{"toolCalls": [{"name": "pay", "arguments": {"amount": 40}}]}
{"text": "Paid what you allowed."}
{"toolCalls": [{"name": "pay", "arguments": {"amount": 30}}]}
{"text": "Not paid."}
{"toolCalls": [{"name": "charge_card", "arguments": {"amount": 5}}]}
{"text": "Charged."}
{"toolCalls": [{"name": "slow", "arguments": {"amount": 1}}]}
{"text": "Slept."}
"#,
    );
    let dir = project.root.display().to_string();
    let data_dir = project.root.join("data");
    let data = data_dir.display().to_string();
    let mut term = Terminal::start(&["chat", &dir, "--agent", "shop", "--data", &data]);

    // Streamed text, and a call shown as it starts and as it ends.
    term.expect("> ");
    term.type_text("hello\r");
    let shown = term.expect("The line works. Hello there!");
    let text = shown
        .find("Let me check the line.")
        .expect("the first answer's text");
    let started = shown
        .find("→ ping {\"amount\":1}")
        .expect("the call's start");
    let ended = shown.find("✓ ping: pong").expect("the call's end");
    assert!(text < started && started < ended, "out of order:\n{shown}");

    // An approval asked inline, approved by typing; the call then runs.
    term.expect("> ");
    term.type_text("pay 20\r");
    term.expect("? pay {\"amount\":20} needs your approval: Moves money.");
    term.expect("[a]pprove / [d]eny / [e]dit: ");
    term.type_text("a\r");
    term.expect("✓ pay: paid 20");
    term.expect("Paid 20.");

    // Edited arguments are checked: invalid ones are refused and asked for again.
    term.expect("> ");
    term.type_text("pay 40\r");
    term.expect("[a]pprove / [d]eny / [e]dit: ");
    term.type_text("e\r");
    term.expect("arguments (JSON): ");
    term.type_text(&format!("{CTRL_U}{{\"amount\": \"lots\"}}\r"));
    term.expect("refused: ");
    term.expect("arguments (JSON): ");
    term.type_text(&format!("{CTRL_U}{{\"amount\": 25}}\r"));
    term.expect("→ pay {\"amount\":25} (edited)");
    term.expect("✓ pay: paid 25");
    term.expect("Paid what you allowed.");

    // A denial with a message.
    term.expect("> ");
    term.type_text("pay 30\r");
    term.expect("[a]pprove / [d]eny / [e]dit: ");
    term.type_text("d\r");
    term.expect("message for the model");
    term.type_text("Not today, the budget is spent.\r");
    term.expect("✗ pay: Not today, the budget is spent.");
    term.expect("Not paid.");

    // A secret asked inline and typed without echo.
    term.expect("> ");
    term.type_text("charge 5\r");
    term.expect("CARD_TOKEN (secret, not shown): ");
    term.type_text(&format!("{CANARY}\r"));
    term.expect("✓ charge_card: charged with [redacted CARD_TOKEN]");
    term.expect("Charged.");

    // Ctrl-C while a slow call runs stops the turn: the program gets SIGTERM and its call ends
    // with an error saying so; the prompt comes back.
    term.expect("> ");
    term.type_text("sleep\r");
    term.expect("→ slow {\"amount\":1}");
    term.type_text(CTRL_C);
    term.expect("stopping: a running tool program is interrupted");
    term.expect("✗ slow: activity slow: stopped: the run was asked to stop, so the program was sent SIGTERM");
    term.expect("stopped; the thread goes on with your next message");
    let after = term.expect("> ");
    assert!(
        !after.contains("Slept."),
        "the model was asked again:\n{after}"
    );

    // A second Ctrl-C, at the prompt, leaves.
    term.type_text(CTRL_C);
    term.expect("is kept; continue it with: toolhost chat");
    assert_eq!(term.exit_code(), 0, "{}", term.all());
    let screen = term.all();
    assert!(!screen.contains(CANARY), "the secret was shown:\n{screen}");

    // One thread holds the whole conversation.
    let list = common::output_of(
        Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(["threads", "list", "--data", &data])
            .stdin(Stdio::null()),
    );
    let list = String::from_utf8_lossy(&list.stdout).into_owned();
    let rows: Vec<&str> = list.lines().skip(1).collect();
    assert_eq!(rows.len(), 1, "one thread:\n{list}");
    let id = rows[0].split_whitespace().next().unwrap().to_owned();

    // Continued later: its last messages first, then the next message goes on from there.
    let mut term = Terminal::start(&[
        "chat", &dir, "--agent", "shop", "--data", &data, "--thread", &id,
    ]);
    term.expect("user: sleep");
    term.expect("error slow: activity slow: stopped");
    term.expect("> ");
    term.type_text("and now?\r");
    term.expect("Slept.");
    term.expect("> ");
    term.type_text("\x04");
    term.expect("is kept");
    assert_eq!(term.exit_code(), 0, "{}", term.all());

    let record = toolhost_json(&["threads", "show", &id, "--data", &data, "--json"]);
    let messages = record["messages"].as_array().unwrap();
    let users: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        users,
        ["hello", "pay 20", "pay 40", "pay 30", "charge 5", "sleep", "and now?"]
    );
    let denied = messages
        .iter()
        .find(|m| m["role"] == "tool" && m["status"] == "error")
        .expect("the denied call's result");
    assert_eq!(denied["content"], "Not today, the budget is spent.");
    assert!(!record.to_string().contains(CANARY), "{record}");

    // The secret is stored sealed: nowhere in the data folder in plain text.
    for entry in std::fs::read_dir(&data_dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            !bytes.windows(CANARY.len()).any(|w| w == CANARY.as_bytes()),
            "the secret is in {}",
            path.display()
        );
    }
}

#[test]
fn a_second_ctrl_c_during_a_turn_leaves_at_once() {
    let project = shop(
        r#"
{"toolCalls": [{"name": "slow", "arguments": {"amount": 1}}]}
{"text": "Slept."}
"#,
    );
    // A grace of ten minutes: the second Ctrl-C comes while the turn still runs, however slow
    // the machine.
    write(
        &project.root,
        "agents/activities/slow.json",
        r#"{"command": ["python3", "slow.py"], "stopGraceMs": 600000}"#,
    );
    let dir = project.root.display().to_string();
    let data = project.root.join("data").display().to_string();
    let mut term = Terminal::start(&["chat", &dir, "--agent", "shop", "--data", &data]);
    term.expect("> ");
    term.type_text("sleep long\r");
    term.expect("→ slow {\"amount\":1}");
    // The stop's SIGTERM must find `slow` ignoring it already.
    let ready = project.root.join("ready");
    let start = Instant::now();
    while !ready.exists() {
        assert!(
            start.elapsed() < PATIENCE,
            "slow.py did not start; the terminal shows:\n{}",
            term.all()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    term.type_text(CTRL_C);
    term.expect("the model is not asked again (Ctrl-C again leaves)");
    term.type_text(CTRL_C);
    term.expect("is kept; continue it with: toolhost chat");
    assert_eq!(term.exit_code(), 130, "{}", term.all());
}
