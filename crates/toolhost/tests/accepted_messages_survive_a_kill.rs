//! `toolhost serve` SIGKILLed while clients send messages, then started again on the same data:
//! every message it answered 202 is taken up and answered, exactly once, whatever status its
//! thread had when the process died.

mod common;

use common::nodes::post;
use common::{
    lines_of, next_line, read_away, scripted_agent, served_address, toolhost, TempProject,
};
use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `toolhost serve` on the project and data folder, and the address it listens on.
fn serve(project: &str, data: &str) -> (Child, String) {
    let mut server = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["serve", project, "--data", data, "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = lines_of(server.stdout.take().unwrap());
    let first = next_line(&out);
    // The rest of its output is read so that it never blocks on a full pipe.
    read_away(out);
    (server, served_address(&first))
}

/// The thread's stored record (`toolhost threads show --json`).
fn record(thread: &str, data: &str) -> Value {
    let shown = toolhost(&["threads", "show", thread, "--data", data, "--json"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    serde_json::from_str(&shown.stdout).unwrap()
}

/// The contents of the record's messages of `role`.
fn contents(record: &Value, role: &str) -> Vec<String> {
    record["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == role)
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn every_message_answered_202_is_taken_up_once_after_a_kill() {
    let project = TempProject::new();
    scripted_agent(
        &project.root,
        &[],
        "{\"text\": \"noted\", \"times\": 1000000}\n",
    );
    let root = project.root.display().to_string();
    let data = project.root.join("data").display().to_string();
    let created = toolhost(&[
        "tokens", "create", "load", "--scope", "read,run", "--data", &data, "--json",
    ]);
    assert_eq!(created.code, 0, "{}", created.stderr);
    let created: Value = serde_json::from_str(&created.stdout).unwrap();
    let token = created["token"].as_str().unwrap().to_owned();

    let (mut server, addr) = serve(&root, &data);
    let mut threads = Vec::new();
    for _ in 0..4 {
        let (status, body) = post(
            &addr,
            "/v1/threads",
            &token,
            r#"{"agent": "a", "message": "start"}"#,
        )
        .expect("the server answers");
        assert_eq!(status, 201, "{body}");
        let body: Value = serde_json::from_str(&body).unwrap();
        threads.push(body["thread"]["id"].as_str().unwrap().to_owned());
    }

    // Eight clients send messages until the server dies; each keeps what was answered 202.
    let accepted: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let dead = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..8)
        .map(|client| {
            let (addr, token, accepted, dead) =
                (addr.clone(), token.clone(), accepted.clone(), dead.clone());
            let thread = threads[client % threads.len()].clone();
            std::thread::spawn(move || {
                for i in 0.. {
                    if dead.load(Ordering::SeqCst) {
                        break;
                    }
                    let message = format!("m-{client}-{i}");
                    let body = serde_json::json!({ "message": message }).to_string();
                    match post(
                        &addr,
                        &format!("/v1/threads/{thread}/messages"),
                        &token,
                        &body,
                    ) {
                        Some((202, _)) => accepted.lock().unwrap().push((thread.clone(), message)),
                        Some(_) => {}
                        None => break,
                    }
                }
            })
        })
        .collect();
    // A guard against a hang, not a measure: the kill comes once enough work was accepted.
    let give_up = Instant::now() + Duration::from_secs(120);
    while accepted.lock().unwrap().len() < 60 {
        assert!(Instant::now() < give_up, "the server accepted too little");
        std::thread::sleep(Duration::from_millis(5));
    }
    server.kill().unwrap();
    server.wait().unwrap();
    dead.store(true, Ordering::SeqCst);
    for client in clients {
        client.join().unwrap();
    }
    let accepted = accepted.lock().unwrap().clone();

    let (mut server, _) = serve(&root, &data);
    let give_up = Instant::now() + Duration::from_secs(180);
    for thread in &threads {
        let wanted: Vec<&String> = accepted
            .iter()
            .filter(|(t, _)| t == thread)
            .map(|(_, m)| m)
            .collect();
        loop {
            let record = record(thread, &data);
            let users = contents(&record, "user");
            let last = record["messages"].as_array().unwrap().last().cloned();
            // Every accepted message is in the thread, and the thread answered what it took.
            let answered = last.is_some_and(|m| m["role"] == "assistant")
                && record["thread"]["status"] != "running";
            if wanted.iter().all(|m| users.contains(m)) && answered {
                for message in &wanted {
                    let times = users.iter().filter(|u| u == message).count();
                    assert_eq!(times, 1, "{message} was taken up {times} times");
                }
                break;
            }
            assert!(
                Instant::now() < give_up,
                "thread {thread}: accepted messages were not taken up after the restart"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    server.kill().unwrap();
    server.wait().unwrap();
}
