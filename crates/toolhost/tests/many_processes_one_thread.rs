//! One thread, many processes: `run`, `send`, `resume` and `resume --approve` are started at
//! random against the same thread, several at once, and some are killed with SIGKILL. Whatever
//! the interleaving:
//! - every tool call runs at most once (a ledger outside the store records each execution with
//!   the pid of the toolhost process that ran it);
//! - a call reported as "outcome unknown" was really cut off: the process that ran it was killed
//!   (or died before its activity started, which orphans the activity);
//! - no process that was not killed fails because another one ran the thread (exit 0, 3 or 4);
//! - at the end every call has exactly one result right after its call, every message that a
//!   `send` reported as stored is in the thread exactly once, and nothing waits.

mod common;

use common::{wait_or_kill, write, Lcg, TempProject, PATIENCE};
use std::collections::{HashMap, HashSet};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use toolhost_runtime::engine::OUTCOME_UNKNOWN;
use toolhost_store::{Role, SqliteStore, Store, ThreadStatus};

const ROUNDS: usize = 400;
const ACTIONS: usize = 90;
const MIN_KILLS: usize = 8;

fn project() -> TempProject {
    let p = TempProject::new();
    // The parent's pid is read first thing: when it is no toolhost the test started, the
    // activity was orphaned, which happens only when its toolhost died.
    let record = "import os\nparent = os.getppid()\nimport json, sys, time\ncall = json.load(sys.stdin)\nwith open(os.environ['LEDGER'], 'a') as f:\n    f.write('%s %d\\n' % (call['call_id'], parent))\n    f.flush()\n    os.fsync(f.fileno())\ntime.sleep(0.05 + (hash(call['call_id']) % 100) / 1000)\nprint(json.dumps({'status': 'success', 'result': 'recorded'}))\n";
    let turn = r#"{"toolCalls": [{"name": "note", "arguments": {"n": 1}}, {"name": "guarded", "arguments": {"n": 2}}]}"#;
    let mut script = String::new();
    for _ in 0..ROUNDS {
        script.push_str(turn);
        script.push('\n');
        script.push_str("{\"text\": \"ok\"}\n");
    }
    let files = [
        ("agents/agents/clerk.json", r#"{"type": "ai_human", "sideA": {"prompt": "clerk", "maxSteps": 5}}"#.to_owned()),
        ("agents/prompts/clerk.json", r#"{"toolDescription": "Notes.", "prompt": "Take notes.", "model": "script", "tools": ["note", "guarded"]}"#.to_owned()),
        ("agents/models/script.json", r#"{"provider": "test", "script": "script.jsonl"}"#.to_owned()),
        ("agents/tools/note.json", r#"{"type": "object", "description": "Notes.", "properties": {"_activity": {"const": "note"}, "n": {"type": "integer"}}, "required": ["n"]}"#.to_owned()),
        ("agents/tools/guarded.json", r#"{"type": "object", "description": "Needs approval.", "properties": {"_activity": {"const": "guarded"}, "n": {"type": "integer"}}, "required": ["n"]}"#.to_owned()),
        ("agents/activities/note.json", r#"{"command": ["python3", "record.py"], "env": ["PATH", "LEDGER"], "timeoutMs": 20000}"#.to_owned()),
        ("agents/activities/guarded.json", r#"{"command": ["python3", "record.py"], "env": ["PATH", "LEDGER"], "timeoutMs": 20000, "approval": {"reason": "test"}}"#.to_owned()),
        ("record.py", record.to_owned()),
        ("script.jsonl", script),
    ];
    for (file, text) in files {
        write(&p.root, file, &text);
    }
    p
}

struct Started {
    child: Child,
    what: String,
    /// The message a `send` carries.
    message: Option<String>,
    /// The call an approval decides.
    approves: Option<String>,
}

fn spawn(args: &[&str], ledger: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(args)
        .env("LEDGER", ledger)
        .env("TOOLHOST_LEASE_MS", "3000")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start toolhost")
}

#[test]
fn many_processes_on_one_thread_run_every_call_once() {
    let p = project();
    let dir = p.root.display().to_string();
    let data = p.root.join("data");
    let data_arg = data.display().to_string();
    let ledger = p.root.join("ledger.log").display().to_string();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut rng = Lcg(seed);

    // The thread is created by a run that is left alone, so every later process has one to use.
    let first = spawn(
        &[
            "run", &dir, "--agent", "clerk", "--data", &data_arg, "start",
        ],
        &ledger,
    );
    let first = wait_or_kill(first, "the first toolhost run", PATIENCE);
    assert_eq!(
        first.status.code(),
        Some(3),
        "seed {seed}: {}",
        String::from_utf8_lossy(&first.stderr)
    );
    let store = SqliteStore::open(&data.join("toolhost.db")).unwrap();
    let thread = store.threads(None).unwrap()[0].id.clone();

    let mut live: Vec<Started> = Vec::new();
    let mut killed_pids: HashSet<u32> = HashSet::new();
    let mut spawned_pids: HashSet<u32> = HashSet::new();
    let mut stored_messages: Vec<String> = Vec::new();
    let mut maybe_messages: Vec<String> = Vec::new();
    let mut exits: HashMap<i32, usize> = HashMap::new();
    let mut kills = 0;

    let reap = |s: Started,
                kill: bool,
                killed_pids: &mut HashSet<u32>,
                stored: &mut Vec<String>,
                maybe: &mut Vec<String>,
                exits: &mut HashMap<i32, usize>| {
        let mut child = s.child;
        if kill {
            let pid = child.id();
            let _ = child.kill(); // SIGKILL
                                  // Bounded as well: its standard error is read to the end, which waits for whatever
                                  // else holds that pipe open.
            let out = wait_or_kill(child, &format!("toolhost {}", s.what), PATIENCE);
            if out.status.code().is_none() {
                killed_pids.insert(pid);
                if let Some(m) = s.message {
                    maybe.push(m);
                }
                return true;
            }
            // It had finished already: judge it like any other.
            return judge(&s.what, out, s.message, stored, exits, seed);
        }
        let out = wait_or_kill(child, &format!("toolhost {}", s.what), PATIENCE);
        judge(&s.what, out, s.message, stored, exits, seed)
    };

    for action in 0..ACTIONS {
        // Keep at most three processes at once: reap the finished ones.
        let mut still = Vec::new();
        for mut s in live.drain(..) {
            if s.child.try_wait().unwrap().is_some() {
                reap(
                    s,
                    false,
                    &mut killed_pids,
                    &mut stored_messages,
                    &mut maybe_messages,
                    &mut exits,
                );
            } else {
                still.push(s);
            }
        }
        live = still;
        while live.len() >= 3 {
            let s = live.remove(0);
            reap(
                s,
                false,
                &mut killed_pids,
                &mut stored_messages,
                &mut maybe_messages,
                &mut exits,
            );
        }
        let choice = rng.next(10);
        let pending: Vec<String> = store
            .approvals(&thread)
            .unwrap()
            .into_iter()
            .filter(|a| a.decision.is_none())
            .map(|a| a.request.call_id)
            .filter(|c| !live.iter().any(|s| s.approves.as_deref() == Some(c)))
            .collect();
        let started_one = match choice {
            0..=2 => {
                let message = format!("message {action}");
                Started {
                    child: spawn(
                        &["send", &dir, &thread, "--data", &data_arg, &message],
                        &ledger,
                    ),
                    what: "send".into(),
                    message: Some(message),
                    approves: None,
                }
            }
            3..=5 if !pending.is_empty() => {
                let call = pending[0].clone();
                Started {
                    child: spawn(
                        &[
                            "resume",
                            &dir,
                            &thread,
                            "--data",
                            &data_arg,
                            "--approve",
                            &call,
                        ],
                        &ledger,
                    ),
                    what: format!("approve {call}"),
                    message: None,
                    approves: Some(call),
                }
            }
            _ => Started {
                child: spawn(&["resume", &dir, &thread, "--data", &data_arg], &ledger),
                what: "resume".into(),
                message: None,
                approves: None,
            },
        };
        spawned_pids.insert(started_one.child.id());
        live.push(started_one);
        std::thread::sleep(Duration::from_millis(20 + rng.next(150)));
        if (rng.next(2) == 0 || kills < MIN_KILLS * (action + 1) / ACTIONS) && !live.is_empty() {
            let victim = live.remove(rng.next(live.len() as u64) as usize);
            if reap(
                victim,
                true,
                &mut killed_pids,
                &mut stored_messages,
                &mut maybe_messages,
                &mut exits,
            ) {
                kills += 1;
            }
        }
    }
    for s in live.drain(..) {
        reap(
            s,
            false,
            &mut killed_pids,
            &mut stored_messages,
            &mut maybe_messages,
            &mut exits,
        );
    }

    // Settle: approve what waits and resume until nothing waits and nothing is queued.
    for _ in 0..200 {
        let pending: Vec<String> = store
            .approvals(&thread)
            .unwrap()
            .into_iter()
            .filter(|a| a.decision.is_none())
            .map(|a| a.request.call_id)
            .collect();
        let mut args = vec!["resume", &dir, &thread, "--data", &data_arg, "--wait"];
        if let Some(call) = pending.first() {
            args.extend(["--approve", call.as_str()]);
        }
        let out = wait_or_kill(
            spawn(&args, &ledger),
            "a settling toolhost resume",
            PATIENCE,
        );
        let code = out.status.code();
        assert!(
            matches!(code, Some(0) | Some(3)),
            "seed {seed}: settling failed with {code:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if code == Some(0) && store.queued(&thread).unwrap().is_empty() {
            break;
        }
    }
    assert_eq!(store.thread(&thread).unwrap().status, ThreadStatus::Done);
    assert!(store.queued(&thread).unwrap().is_empty());
    assert_eq!(store.lease(&thread).unwrap(), None);

    // Every call ran at most once, and a call declared unknown was cut off by a kill.
    let mut ran: HashMap<String, Vec<u32>> = HashMap::new();
    for line in std::fs::read_to_string(&ledger).unwrap_or_default().lines() {
        let (call, pid) = line.split_once(' ').unwrap();
        ran.entry(call.to_owned())
            .or_default()
            .push(pid.parse().unwrap());
    }
    for (call, pids) in &ran {
        assert_eq!(
            pids.len(),
            1,
            "seed {seed}: call {call} ran {} times",
            pids.len()
        );
    }
    let messages = store.messages(&thread).unwrap();
    let mut unknown = 0;
    for (i, m) in messages.iter().enumerate() {
        for (k, call) in m.tool_calls.iter().enumerate() {
            let result = &messages[i + 1 + k];
            assert_eq!(
                result.tool_call_id.as_deref(),
                Some(call.id.as_str()),
                "seed {seed}: the result of {} is not right after its call",
                call.id
            );
            if result.content.as_deref() == Some(OUTCOME_UNKNOWN) {
                unknown += 1;
                // Never run (cut off between its intent and its start), or run by a
                // toolhost that was killed; never by one that lived.
                let runner = ran.get(&call.id).map(|p| p[0]);
                let cut_off = |pid: u32| killed_pids.contains(&pid) || !spawned_pids.contains(&pid);
                assert!(
                    runner.is_none_or(cut_off),
                    "seed {seed}: call {} was declared unknown but its runner ({runner:?}) was not killed",
                    call.id
                );
            } else if result.status == Some(toolhost_store::ToolStatus::Success) {
                assert!(
                    ran.contains_key(&call.id),
                    "seed {seed}: call {} succeeded without running",
                    call.id
                );
            }
        }
        let results = messages
            .iter()
            .filter(|r| {
                r.role == Role::Tool
                    && m.tool_calls
                        .iter()
                        .any(|c| Some(&c.id) == r.tool_call_id.as_ref())
            })
            .count();
        assert_eq!(
            results,
            m.tool_calls.len(),
            "seed {seed}: one result per call"
        );
    }
    // Messages that a send stored are there once; a killed send's may or may not be.
    let users: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == Role::User)
        .filter_map(|m| m.content.as_deref())
        .collect();
    for sent in &stored_messages {
        assert_eq!(
            users.iter().filter(|u| **u == sent).count(),
            1,
            "seed {seed}: {sent:?} is not in the thread exactly once"
        );
    }
    for sent in &maybe_messages {
        assert!(
            users.iter().filter(|u| **u == sent).count() <= 1,
            "seed {seed}"
        );
    }
    assert!(
        kills >= MIN_KILLS,
        "seed {seed}: only {kills} processes were killed while running"
    );
    assert!(
        unknown <= kills,
        "seed {seed}: more unknown outcomes than kills"
    );
    eprintln!(
        "seed {seed}: {ACTIONS} processes, {kills} killed, exits {exits:?}, {} calls ran, {unknown} unknown, {} messages",
        ran.len(),
        users.len()
    );
}

/// Checks how a process that was not killed ended: it may finish, pause or find the thread
/// owned; it never fails.
fn judge(
    what: &str,
    out: std::process::Output,
    message: Option<String>,
    stored: &mut Vec<String>,
    exits: &mut HashMap<i32, usize>,
    seed: u64,
) -> bool {
    let code = out.status.code().unwrap_or(-1);
    *exits.entry(code).or_default() += 1;
    assert!(
        matches!(code, 0 | 3 | 4),
        "seed {seed}: `{what}` failed with exit {code}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    if let Some(m) = message {
        stored.push(m);
    }
    false
}
