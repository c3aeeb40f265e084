//! Three `toolhost serve` nodes on one PostgreSQL database, 300 threads started through all
//! three, each making three tool calls, while nodes are SIGKILLed at random and started again:
//! every thread that was accepted is answered, every call has exactly one result, and no call
//! ran twice (a call whose node died under it is reported as of unknown outcome, not re-run).

mod common;

use common::nodes::{post, serve, token, wait_until};
use common::{write, Lcg, TempProject};
use std::collections::{HashMap, HashSet};
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use toolhost_store::conformance::fresh_database::FreshDatabase;
use toolhost_store::{Role, Store, ThreadStatus};

const THREADS: usize = 300;
const CALLS: usize = 3;
const NODES: usize = 3;
const KILLS: usize = 8;

fn project() -> TempProject {
    let p = TempProject::new();
    common::scripted_agent(
        &p.root,
        &["append_line"],
        &format!(
            "{{\"toolCalls\": [{{\"name\": \"append_line\", \"arguments\": {{}}}}], \"times\": {CALLS}}}\n{{\"text\": \"done\"}}\n"
        ),
    );
    let files = [
        ("agents/tools/append_line.json", r#"{"type": "object", "description": "Appends the call id to the log.", "properties": {"_activity": {"const": "append_line"}}}"#),
        ("agents/activities/append_line.json", r#"{"command": ["python3", "append_line.py"], "env": ["PATH", "CALL_LOG"], "timeoutMs": 60000}"#),
        ("append_line.py", "import json, os, sys\ncall = json.load(sys.stdin)\nwith open(os.environ['CALL_LOG'], 'a') as f:\n    f.write(call['call_id'] + '\\n')\n    f.flush()\n    os.fsync(f.fileno())\nprint(json.dumps({'status': 'success', 'result': 'appended'}))\n"),
        ("toolhost.toml", "[server]\ntakeover_interval_ms = 200\n"),
    ];
    for (file, text) in files {
        write(&p.root, file, text);
    }
    p
}

#[test]
fn three_nodes_killed_at_random_lose_no_thread_and_repeat_no_call() {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut random = Lcg(seed);
    let p = project();
    let log = p.root.join("calls.log");
    let database = FreshDatabase::new();
    let url = database.url();
    let token = token(&url);
    let start = |_: usize| serve(&p.root, &url, &[("CALL_LOG", &log)]);
    let nodes: Arc<Mutex<Vec<(Child, String)>>> =
        Arc::new(Mutex::new((0..NODES).map(start).collect()));

    // Clients start the threads through the nodes in turn; a node that is down is skipped.
    let accepted: Arc<Mutex<Vec<String>>> = Arc::default();
    let starting = AtomicBool::new(true);
    std::thread::scope(|scope| {
        let client = scope.spawn(|| {
            let mut n = 0usize;
            while accepted.lock().unwrap().len() < THREADS {
                let addr = nodes.lock().unwrap()[n % NODES].1.clone();
                n += 1;
                if let Some((201, body)) = post(
                    &addr,
                    "/v1/threads",
                    &token,
                    r#"{"agent": "a", "message": "start"}"#,
                ) {
                    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
                    let id = body["thread"]["id"].as_str().unwrap().to_owned();
                    accepted.lock().unwrap().push(id);
                }
            }
            starting.store(false, Ordering::SeqCst);
        });
        // Kills at random moments while the work goes on: after a random number of calls
        // more, a random node is SIGKILLed and started again on the same database.
        let mut kills = 0;
        let mut next_at = 0;
        while kills < KILLS {
            next_at += 10 + random.next(60) as usize;
            let calls_so_far = || {
                std::fs::read_to_string(&log)
                    .map(|text| text.lines().count())
                    .unwrap_or(0)
            };
            let total = THREADS * CALLS;
            if next_at >= total {
                break;
            }
            wait_until("calls to be made", || calls_so_far() >= next_at);
            let victim = random.next(NODES as u64) as usize;
            let mut nodes = nodes.lock().unwrap();
            nodes[victim].0.kill().unwrap();
            nodes[victim].0.wait().unwrap();
            nodes[victim] = start(victim);
            kills += 1;
        }
        client.join().unwrap();
        assert_eq!(
            kills, KILLS,
            "seed {seed}: every kill happened while work went on"
        );
        assert!(!starting.load(Ordering::SeqCst));
    });

    // Every accepted thread is answered, through whichever node took it up.
    let store = database.store();
    let accepted = accepted.lock().unwrap().clone();
    assert_eq!(accepted.len(), THREADS);
    wait_until("every thread to be answered", || {
        accepted.iter().all(|id| {
            store
                .thread(id)
                .is_ok_and(|t| t.status == ThreadStatus::Done)
        })
    });
    let lines: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let ran: HashSet<&String> = lines.iter().collect();
    assert_eq!(ran.len(), lines.len(), "seed {seed}: a call ran twice");
    let mut unknown = 0;
    for id in &accepted {
        let messages = store.messages(id).unwrap();
        let calls: Vec<String> = messages
            .iter()
            .flat_map(|m| m.tool_calls.iter().map(|c| c.id.clone()))
            .collect();
        assert_eq!(calls.len(), CALLS, "seed {seed}: thread {id}");
        let mut results: HashMap<&str, usize> = HashMap::new();
        for m in messages.iter().filter(|m| m.role == Role::Tool) {
            *results
                .entry(m.tool_call_id.as_deref().unwrap())
                .or_default() += 1;
            let text = m.content.as_deref().unwrap_or_default();
            if text != "appended" {
                unknown += 1;
            }
        }
        for call in &calls {
            assert_eq!(
                results.get(call.as_str()),
                Some(&1),
                "seed {seed}: thread {id}, call {call}"
            );
        }
        assert_eq!(
            messages.last().and_then(|m| m.content.as_deref()),
            Some("done"),
            "seed {seed}: thread {id}"
        );
    }
    eprintln!(
        "seed {seed}: {THREADS} threads, {} calls ran, {unknown} of unknown outcome",
        lines.len()
    );
    for (mut node, _) in nodes.lock().unwrap().drain(..) {
        let _ = node.kill();
        let _ = node.wait();
    }
}
