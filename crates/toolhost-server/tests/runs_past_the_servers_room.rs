//! A server runs at most `max_runs` threads at once: work past that waits in the store, offered
//! to whichever node has room, and this server takes it up itself as soon as a run of its own
//! ends (not at its next sweep).

mod common;

use common::*;
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_past_the_servers_room_runs_as_soon_as_a_run_ends() {
    // Each call notes that it started, then naps until the file `release` exists.
    let project = napping_project(
        "echo call >> started; while [ ! -e release ]; do sleep 0.05; done; echo '{\"status\": \"success\", \"result\": \"napped\"}'",
    );
    let server = TestServer::start_with(&project, |config| {
        config.max_runs = 1;
        // No sweep helps here: what runs, runs because a run ended.
        config.takeover_interval = Duration::from_secs(3600);
    })
    .await;
    let token = server.admin();
    let first = server
        .create(&token, json!({"agent": "slow", "message": "nap"}))
        .await;
    let second = server
        .create(&token, json!({"agent": "slow", "message": "nap too"}))
        .await;
    let started = project.join("started");
    let calls = || std::fs::read_to_string(&started).map_or(0, |text| text.lines().count());
    let mut waited = 0;
    while calls() == 0 {
        assert!(waited < 60_000, "no call started");
        tokio::time::sleep(Duration::from_millis(10)).await;
        waited += 1;
    }
    // One thread runs; the other waits for room, its message stored and not yet answered.
    assert_eq!(calls(), 1);
    let runs = server.get("/metrics", Some(&token)).await.text;
    assert!(
        runs.lines()
            .any(|l| l.starts_with("toolhost_runs_under_way") && l.ends_with(" 1")),
        "{runs}"
    );
    std::fs::write(project.join("release"), b"").unwrap();
    for thread in [&first, &second] {
        let mut stream = server.events(thread, &token, None).await;
        loop {
            let seen = stream.until("run_ended", Duration::from_secs(120)).await;
            if seen.last().unwrap().data["reason"] == "response" {
                break;
            }
        }
        let last = server.store.messages(thread).unwrap().pop().unwrap();
        assert_eq!(last.content.as_deref(), Some("rested"));
    }
    assert_eq!(calls(), 2, "each thread's call ran once");
    server.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(project);
}
