//! Two `toolhost serve` nodes on one PostgreSQL database: a thread started on one node is
//! carried on by the other when the first is SIGKILLed mid-call, with no request to the
//! second; the second's API and event stream show what the first stored; every call has one
//! result.

mod common;

use common::nodes::{post, serve, token, wait_until};
use common::{http_get, terminate, write, TempProject};
use serde_json::Value;
use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;
use toolhost_store::conformance::fresh_database::FreshDatabase;

/// A project whose agent calls `hold` once, then says "done". `hold` notes its process id in
/// `started` (and in `by-NODE`, with `NODE` set: which node ran it) and waits until the file
/// `go` exists.
fn project() -> TempProject {
    project_with("[server]\ntakeover_interval_ms = 100\n")
}

/// The project, with `toml` as its toolhost.toml.
fn project_with(toml: &str) -> TempProject {
    let p = TempProject::new();
    common::scripted_agent(
        &p.root,
        &["hold"],
        "{\"toolCalls\": [{\"name\": \"hold\", \"arguments\": {}}]}\n{\"text\": \"done\"}\n",
    );
    let files = [
        ("agents/tools/hold.json", r#"{"type": "object", "description": "Holds until told to go.", "properties": {"_activity": {"const": "hold"}}}"#),
        ("agents/activities/hold.json", r#"{"command": ["python3", "hold.py"], "env": ["PATH", "MARKS", "NODE"], "timeoutMs": 600000}"#),
        ("hold.py", "import json, os, sys, time\njson.load(sys.stdin)\nmarks = os.environ['MARKS']\nnode = os.environ.get('NODE')\nif node:\n    with open(os.path.join(marks, 'by-' + node), 'a') as f:\n        f.write(str(os.getpid()) + '\\n')\nwith open(os.path.join(marks, 'started'), 'a') as f:\n    f.write(str(os.getpid()) + '\\n')\nwhile not os.path.exists(os.path.join(marks, 'go')):\n    time.sleep(0.02)\nprint(json.dumps({'status': 'success', 'result': 'went'}))\n"),
        ("toolhost.toml", toml),
    ];
    for (file, text) in files {
        write(&p.root, file, text);
    }
    p
}

#[test]
fn a_node_killed_mid_call_is_replaced_by_another_without_a_request() {
    let p = project();
    let marks = p.root.join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let database = FreshDatabase::new();
    let url = database.url();
    let token = token(&url);

    let (mut first, first_addr) = serve(&p.root, &url, &[("MARKS", &marks)]);
    let (mut second, second_addr) = serve(&p.root, &url, &[("MARKS", &marks)]);
    let thread = start_thread(&first_addr, &token);

    // The first node is in the call: it and its tool's process die together.
    let started = marks.join("started");
    wait_until("the call to start on the first node", || started.exists());
    let tool_pid = std::fs::read_to_string(&started).unwrap();
    first.kill().unwrap();
    first.wait().unwrap();
    let _ = Command::new("kill")
        .args(["-KILL", tool_pid.trim()])
        .status();
    // The second node shows what the first stored, read from the database.
    let (status, body) = http_get(&second_addr, &format!("/v1/threads/{thread}"), &token);
    assert_eq!(status, 200, "{body}");
    std::fs::write(marks.join("go"), "").unwrap();

    // Nobody asks the second node to run the thread: it takes it up once the lease expires.
    wait_until_done(&second_addr, &thread, &token);
    let (status, body) = http_get(
        &second_addr,
        &format!("/v1/threads/{thread}/messages"),
        &token,
    );
    assert_eq!(status, 200, "{body}");
    let listed: Value = serde_json::from_str(&body).unwrap();
    let messages = listed["messages"]
        .as_array()
        .or_else(|| listed["items"].as_array())
        .or_else(|| listed.as_array())
        .unwrap_or_else(|| panic!("no messages in {listed}"))
        .clone();
    let results: Vec<&Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(
        results.len(),
        1,
        "one result for the one call: {messages:?}"
    );
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "assistant");
    assert_eq!(last["content"], "done");

    // The event stream of the second node, opened now, replays what both nodes stored.
    let events = read_events(&second_addr, &thread, &token);
    assert!(events.contains("run_ended"), "{events}");
    second.kill().unwrap();
    second.wait().unwrap();
}

/// The thread's event stream from the start, until it has shown the run's end.
fn read_events(addr: &str, thread: &str, token: &str) -> String {
    let mut stream = open_events(addr, thread, token);
    read_until(&mut stream, "run_ended")
}

/// The thread's event stream from the start.
fn open_events(addr: &str, thread: &str, token: &str) -> std::net::TcpStream {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    // A guard against a hang, far beyond what a wake-up takes.
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(120)))
        .unwrap();
    write!(
        stream,
        "GET /v1/threads/{thread}/events HTTP/1.0\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
    )
    .unwrap();
    stream
}

/// What the stream sends until `wanted` shows up in it.
fn read_until(stream: &mut std::net::TcpStream, wanted: &str) -> String {
    let mut seen = String::new();
    let mut buffer = [0u8; 4096];
    while !seen.contains(wanted) {
        let n = stream
            .read(&mut buffer)
            .unwrap_or_else(|e| panic!("no {wanted} in the stream ({e}): {seen}"));
        assert!(n > 0, "the stream ended before {wanted}: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
    }
    seen
}

#[test]
fn a_stream_on_one_node_shows_what_another_node_runs_as_it_is_stored() {
    // Event streams poll once an hour here: what node b's stream shows of node a's run, it
    // shows because node b heard node a commit.
    let p = project_with("[server]\npoll_interval_ms = 3600000\ntakeover_interval_ms = 3600000\n");
    let marks = p.root.join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let database = FreshDatabase::new();
    let url = database.url();
    let token = token(&url);
    let (mut a, a_addr) = serve(&p.root, &url, &[("MARKS", &marks)]);
    let (mut b, b_addr) = serve(&p.root, &url, &[("MARKS", &marks)]);
    let thread = start_thread(&a_addr, &token);
    let started = marks.join("started");
    wait_until("the call to start on node a", || started.exists());
    let mut stream = open_events(&b_addr, &thread, &token);
    let before = read_until(&mut stream, "start");
    assert!(!before.contains("run_ended"), "{before}");
    // Node a finishes the call and the run; node b's stream shows it.
    std::fs::write(marks.join("go"), "").unwrap();
    let after = read_until(&mut stream, "run_ended");
    assert!(after.contains("went"), "the call's result: {after}");
    for node in [&mut a, &mut b] {
        node.kill().unwrap();
        node.wait().unwrap();
    }
}

/// Starts a thread on the node at `addr`; its id.
fn start_thread(addr: &str, token: &str) -> String {
    let (status, body) = post(
        addr,
        "/v1/threads",
        token,
        r#"{"agent": "a", "message": "start"}"#,
    )
    .expect("the node answers");
    assert_eq!(status, 201, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    body["thread"]["id"].as_str().unwrap().to_owned()
}

/// How many lines the file at `path` has (none when it is not there).
fn lines_in(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |text| text.lines().count())
}

/// Waits until `thread` is done, as the node at `addr` shows it.
fn wait_until_done(addr: &str, thread: &str, token: &str) {
    wait_until("the thread to be done", || {
        let (status, body) = http_get(addr, &format!("/v1/threads/{thread}"), token);
        assert_eq!(status, 200, "{body}");
        let record: Value = serde_json::from_str(&body).unwrap();
        record["thread"]["status"] == "done" || record["status"] == "done"
    });
}

#[test]
fn work_past_a_nodes_room_is_taken_by_another_node_at_once() {
    // Nodes sweep once an hour here: what node b runs, it runs because node a offered it and
    // node b heard the offer.
    let sweeps = "[server]\ntakeover_interval_ms = 3600000\n";
    let small = project_with(&format!("{sweeps}max_runs = 1\n"));
    let large = project_with(sweeps);
    let marks = small.root.join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let database = FreshDatabase::new();
    let url = database.url();
    let token = token(&url);
    let (mut a, a_addr) = serve(
        &small.root,
        &url,
        &[("MARKS", &marks), ("NODE", Path::new("a"))],
    );
    let (mut b, _) = serve(
        &large.root,
        &url,
        &[("MARKS", &marks), ("NODE", Path::new("b"))],
    );
    let threads: Vec<String> = (0..3).map(|_| start_thread(&a_addr, &token)).collect();
    // The three calls are under way at once, and node a has room for one.
    let started = marks.join("started");
    wait_until("three calls to start", || lines_in(&started) == 3);
    assert_eq!(lines_in(&marks.join("by-a")), 1);
    assert_eq!(lines_in(&marks.join("by-b")), 2);
    std::fs::write(marks.join("go"), "").unwrap();
    for thread in &threads {
        wait_until_done(&a_addr, thread, &token);
    }
    assert_eq!(lines_in(&started), 3, "each call ran once");
    for node in [&mut a, &mut b] {
        node.kill().unwrap();
        node.wait().unwrap();
    }
}

#[test]
fn a_node_stopped_cleanly_hands_its_turn_to_another_at_once() {
    // Nodes sweep once an hour here: the other node goes on with the turn because the
    // stopping node handed it over.
    let p = project_with("[server]\ntakeover_interval_ms = 3600000\n");
    let marks = p.root.join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let database = FreshDatabase::new();
    let url = database.url();
    let token = token(&url);
    let (mut a, a_addr) = serve(
        &p.root,
        &url,
        &[("MARKS", &marks), ("NODE", Path::new("a"))],
    );
    let (mut b, b_addr) = serve(
        &p.root,
        &url,
        &[("MARKS", &marks), ("NODE", Path::new("b"))],
    );
    let thread = start_thread(&a_addr, &token);
    let by_a = marks.join("by-a");
    wait_until("the call to start on node a", || by_a.exists());
    // Node a stops cleanly: once it no longer takes connections (it is stopping), the call
    // under way finishes and is stored, and the model is not asked again there.
    terminate(&a);
    wait_until("node a to stop taking connections", || {
        std::net::TcpStream::connect(&a_addr).is_err()
    });
    std::fs::write(marks.join("go"), "").unwrap();
    assert!(a.wait().unwrap().success());
    wait_until_done(&b_addr, &thread, &token);
    let (status, body) = http_get(&b_addr, &format!("/v1/threads/{thread}/messages"), &token);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("went") && body.contains("done"), "{body}");
    // Node a's run ended stopped; node b's, on the model's answer.
    let mut stream = open_events(&b_addr, &thread, &token);
    let events = read_until(&mut stream, "\"reason\":\"response\"");
    assert!(events.contains("\"reason\":\"stopped\""), "{events}");
    assert_eq!(lines_in(&marks.join("started")), 1, "the call ran once");
    b.kill().unwrap();
    b.wait().unwrap();
}
