//! A thread over HTTP: started, followed live, continued with a second message, listed, and
//! followed again after a reconnect without missing or repeating anything stored.

mod common;

use common::*;
use serde_json::json;
use std::time::Duration;

const PATIENCE: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_started_over_http_streams_its_answer_and_ends() {
    let server = TestServer::start().await;
    let token = server.admin();
    let id = server
        .create(
            &token,
            json!({"agent": "assistant", "message": "What is the weather in Oslo?"}),
        )
        .await;
    let mut stream = server.events(&id, &token, None).await;
    let seen = stream.until("run_ended", PATIENCE).await;
    let ended = seen.last().unwrap();
    assert_eq!(ended.data["status"], "done", "{ended:?}");
    assert_eq!(ended.data["reason"], "response");
    let messages: Vec<_> = seen.iter().filter(|e| e.event == "message").collect();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m.data["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "tool",
            "tool",
            "assistant",
            "tool",
            "assistant"
        ]
    );
    assert!(messages[6].data["content"]
        .as_str()
        .unwrap()
        .starts_with("It is 7 °C and cloudy in Oslo"));
    // Every stored item has an id, strictly after the one before.
    let ids: Vec<&str> = messages.iter().map(|m| m.id.as_deref().unwrap()).collect();
    assert_eq!(ids.first(), Some(&"m1.e0"));
    assert_eq!(ids.last(), Some(&"m7.e0"));
    assert!(seen.iter().any(|e| e.event == "status"));

    let got = server.get(&format!("/v1/threads/{id}"), Some(&token)).await;
    assert_eq!(got.status, 200, "{}", got.text);
    assert_eq!(got.json["thread"]["status"], "done");
    assert_eq!(
        got.json["owner"],
        serde_json::Value::Null,
        "the run released it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnecting_stream_gets_exactly_what_was_stored_after_its_last_id() {
    let server = TestServer::start().await;
    let token = server.admin();
    let id = server
        .create(&token, json!({"agent": "assistant", "message": "Weather?"}))
        .await;
    server
        .events(&id, &token, None)
        .await
        .until("run_ended", PATIENCE)
        .await;

    let mut first = server.events(&id, &token, None).await;
    let mut early = Vec::new();
    while early.len() < 3 {
        let e = first
            .next_within("the next event of a finished thread's stream")
            .await
            .unwrap();
        if e.event == "message" {
            early.push(e);
        }
    }
    drop(first);
    let last = early.last().unwrap().id.clone().unwrap();
    assert_eq!(last, "m3.e0");
    let mut again = server.events(&id, &token, Some(&last)).await;
    let mut rest = Vec::new();
    while rest.len() < 4 {
        let e = again
            .next_within("the next event after the last seen id")
            .await
            .unwrap();
        if e.event == "message" {
            rest.push(e);
        }
    }
    let seqs: Vec<i64> = rest
        .iter()
        .map(|m| m.data["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, [4, 5, 6, 7], "nothing repeated, nothing missed");

    let bad = server
        .raw(
            "GET",
            &format!("/v1/threads/{id}/events"),
            Some(&token),
            &[("last-event-id", "12")],
            Vec::new(),
        )
        .await;
    assert!(bad.problem(400).contains("Last-Event-ID"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_message_goes_on_in_the_same_thread() {
    let project = echo_project("{\"text\": \"first answer\"}\n{\"text\": \"second answer\"}\n");
    let server = TestServer::start_on(&project).await;
    let token = server.admin();
    let id = server
        .create(&token, json!({"agent": "echo", "message": "one"}))
        .await;
    let mut stream = server.events(&id, &token, None).await;
    stream.until("run_ended", PATIENCE).await;

    let sent = server
        .post(
            &format!("/v1/threads/{id}/messages"),
            Some(&token),
            &json!({"message": "two"}),
        )
        .await;
    assert_eq!(sent.status, 202, "{}", sent.text);
    let seen = stream.until("run_ended", PATIENCE).await;
    let said: Vec<&str> = seen
        .iter()
        .filter(|e| e.event == "message")
        .map(|e| e.data["content"].as_str().unwrap())
        .collect();
    assert_eq!(said, ["two", "second answer"]);

    let page = server
        .get(&format!("/v1/threads/{id}/messages?limit=3"), Some(&token))
        .await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert_eq!(page.json["messages"].as_array().unwrap().len(), 3);
    let next = page.json["next_after"].as_i64().unwrap();
    let rest = server
        .get(
            &format!("/v1/threads/{id}/messages?after={next}"),
            Some(&token),
        )
        .await;
    let contents: Vec<&str> = rest.json["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["second answer"]);
    assert_eq!(rest.json["next_after"], serde_json::Value::Null);
    let _ = std::fs::remove_dir_all(project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threads_are_listed_newest_first_page_by_page_and_filtered() {
    let project = echo_project("{\"text\": \"ok\", \"times\": 10}\n");
    let server = TestServer::start_on(&project).await;
    let token = server.admin();
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(
            server
                .create(&token, json!({"agent": "echo", "message": format!("m{i}")}))
                .await,
        );
    }
    ids.reverse();
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            None => "/v1/threads?limit=2".to_owned(),
            Some(c) => format!("/v1/threads?limit=2&cursor={c}"),
        };
        let page = server.get(&path, Some(&token)).await;
        assert_eq!(page.status, 200, "{}", page.text);
        for t in page.json["threads"].as_array().unwrap() {
            listed.push(t["id"].as_str().unwrap().to_owned());
        }
        match page.json["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(listed, ids);
    let none = server.get("/v1/threads?agent=nobody", Some(&token)).await;
    assert_eq!(none.json["threads"], json!([]));
    let typo = server.get("/v1/threads?status=runing", Some(&token)).await;
    assert!(typo
        .problem(400)
        .contains("\"runing\" is not a thread status"));
    let bad = server.get("/v1/threads?limit=0", Some(&token)).await;
    assert!(bad.problem(400).contains("limit 0 is out of range"));
    let unknown = server.get("/v1/threads?color=red", Some(&token)).await;
    unknown.problem(400);
    // A thread's sub-threads, by its id.
    let child = server
        .store
        .create_thread(toolhost_store::NewThread {
            agent: "echo".into(),
            parent: Some(ids[4].clone()),
            ..Default::default()
        })
        .unwrap();
    let children = server
        .get(&format!("/v1/threads?parent={}", ids[4]), Some(&token))
        .await;
    assert_eq!(children.status, 200, "{}", children.text);
    assert_eq!(children.json["threads"].as_array().unwrap().len(), 1);
    assert_eq!(children.json["threads"][0]["id"], json!(child.id));
    assert_eq!(children.json["threads"][0]["parent"], json!(ids[4]));
    let none = server
        .get(&format!("/v1/threads?parent={}", ids[3]), Some(&token))
        .await;
    assert_eq!(none.json["threads"], json!([]));
    let _ = std::fs::remove_dir_all(project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_all_threads_stream_shows_every_reachable_thread_and_resumes() {
    let server = TestServer::start().await;
    let admin = server.admin();
    let assistant_only = server.token(
        &[toolhost_server::auth::Scope::Read],
        Some(vec!["assistant"]),
    );
    let mine = server
        .create(&admin, json!({"agent": "assistant", "message": "Weather?"}))
        .await;
    let hidden = server
        .create(
            &admin,
            json!({"agent": "cashier", "message": "Charge 5 EUR", "secrets": {"PAYMENT_API_KEY": "k-123456789"}}),
        )
        .await;
    // The cashier's run pauses for approval; what it stored shows on the admin's stream below.
    let mut all = server.events_all(&assistant_only, None).await;
    let mut messages = Vec::new();
    while messages.len() < 7 {
        let e = all
            .next_within("the next event of the reachable thread")
            .await
            .unwrap();
        if e.event == "message" {
            messages.push(e);
        }
    }
    assert!(
        messages
            .iter()
            .all(|m| m.data["thread_id"] == mine.as_str()),
        "only the reachable thread: {messages:#?}"
    );
    assert_eq!(messages[0].data["content"], "Weather?");
    let last = messages[2].id.clone().unwrap();
    drop(all);

    let mut again = server.events_all(&assistant_only, Some(&last)).await;
    let next = loop {
        let e = again
            .next_within("the next event after the last seen id")
            .await
            .unwrap();
        if e.event == "message" {
            break e;
        }
    };
    assert_eq!(
        next.data["seq"], messages[3].data["seq"],
        "resumed right after {last}"
    );

    let mut everything = server.events_all(&admin, None).await;
    let mut threads = std::collections::BTreeSet::new();
    while threads.len() < 2 {
        let e = everything
            .next_within("events of both threads")
            .await
            .unwrap();
        if e.event == "message" {
            threads.insert(e.data["thread_id"].as_str().unwrap().to_owned());
        }
    }
    assert!(threads.contains(&mine) && threads.contains(&hidden));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_lease_is_shown_as_no_owner() {
    let server = TestServer::start().await;
    let token = server.admin();
    let thread = server
        .store
        .create_thread(toolhost_store::NewThread {
            agent: "assistant".into(),
            ..toolhost_store::NewThread::default()
        })
        .unwrap();
    // A dead process's lease: claimed for 1 ms and never renewed.
    let lease = server
        .store
        .claim(
            &thread.id,
            &toolhost_store::LeaseClaim {
                owner: "gone-process".into(),
                ttl_ms: 1,
                replacing: None,
            },
        )
        .unwrap();
    while toolhost_store::now_millis() <= lease.expires_at {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let shown = server
        .get(&format!("/v1/threads/{}", thread.id), Some(&token))
        .await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    assert!(shown.json["owner"].is_null(), "{}", shown.text);
}

/// Streams hear what this process stores as it commits: with a poll interval of an hour, a
/// message stored after the streams read the store still reaches a thread's stream and the
/// stream of all threads (read when the store tells of the commit, not at the next poll).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_show_what_is_stored_as_it_commits_without_waiting_for_a_poll() {
    use toolhost_store::{NewMessage, NewThread, Role, Write};
    // An assistant's messages: a person's would be work that a run takes up (and a run's end
    // wakes a stream by another way).
    let said = |text: &str| {
        Write::AppendMessage(NewMessage {
            role: Some(Role::Assistant),
            content: Some(text.into()),
            ..NewMessage::default()
        })
    };
    let server = TestServer::start_with(&quickstart(), |c| {
        c.poll_interval = Duration::from_secs(3600);
    })
    .await;
    let token = server.admin();
    let thread = server
        .store
        .create_thread(NewThread {
            agent: "assistant".into(),
            writes: vec![said("stored before the streams opened")],
            ..NewThread::default()
        })
        .unwrap()
        .id;
    let mut one = server.events(&thread, &token, None).await;
    let mut all = server.events_all(&token, None).await;
    async fn next_message(stream: &mut EventStream, what: &str) -> Sse {
        loop {
            let event = stream.next_within(what).await.unwrap();
            if event.event == "message" {
                return event;
            }
        }
    }
    // Both streams have read the store once: their next read is an hour away.
    for stream in [&mut one, &mut all] {
        let first = next_message(stream, "the message stored before").await;
        assert_eq!(first.data["content"], "stored before the streams opened");
    }
    server
        .store
        .apply(&thread, vec![said("stored while the streams wait")])
        .unwrap();
    for (stream, which) in [(&mut one, "thread's"), (&mut all, "all threads'")] {
        let message = next_message(stream, &format!("the new message on the {which} stream")).await;
        assert_eq!(
            message.data["content"], "stored while the streams wait",
            "{which} stream: {message:?}"
        );
    }
}
