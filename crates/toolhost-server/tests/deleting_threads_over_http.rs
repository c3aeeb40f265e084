//! Deleting a thread over HTTP: everything of it and of its child threads goes and every
//! endpoint then answers 404 for them; other threads are untouched; a read-only token, another
//! agent's token and a thread that a live run owns are refused, and the refusal changes nothing.

mod common;
mod maker;

use common::*;
use maker::*;
use serde_json::{json, Value};
use toolhost_server::auth::Scope;
use toolhost_store::{NewThread, StoreError};

/// What the API shows of a thread: the thread, its messages, its files and one file's bytes.
async fn shown(server: &TestServer, token: &str, id: &str) -> (Value, Value, Value, Vec<u8>) {
    let thread = server.get(&format!("/v1/threads/{id}"), Some(token)).await;
    assert_eq!(thread.status, 200, "{}", thread.text);
    let messages = server
        .get(&format!("/v1/threads/{id}/messages"), Some(token))
        .await;
    assert_eq!(messages.status, 200, "{}", messages.text);
    let report = attachment(server, token, id, "report.txt").await;
    let file = fetch(
        server,
        &format!("/v1/threads/{id}/files{report}"),
        Some(token),
        &[],
    )
    .await;
    assert_eq!(file.status, 200);
    (
        thread.json["thread"].clone(),
        messages.json["messages"].clone(),
        listing(server, token, id).await,
        file.bytes.to_vec(),
    )
}

async fn delete(server: &TestServer, id: &str, token: Option<&str>) -> Answer {
    server
        .raw(
            "DELETE",
            &format!("/v1/threads/{id}"),
            token,
            &[],
            Vec::new(),
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_thread_is_gone_from_every_endpoint_and_others_stay() {
    let project = project();
    let server = TestServer::start_on(&project).await;
    let token = server.token(&[Scope::Read, Scope::Run, Scope::Approve], None);
    let gone = finished_thread(&server, &token, "maker").await;
    let kept = finished_thread(&server, &token, "maker").await;
    let report = attachment(&server, &token, &gone, "report.txt").await;
    let kept_before = shown(&server, &token, &kept).await;
    assert!(server.store.messages(&gone).unwrap().len() >= 3);
    assert!(!server.store.calls(&gone).unwrap().is_empty());

    let deleted = delete(&server, &gone, Some(&token)).await;
    assert_eq!(deleted.status, 204, "{}", deleted.text);
    assert!(deleted.text.is_empty());

    for (method, path) in [
        ("GET", format!("/v1/threads/{gone}")),
        ("DELETE", format!("/v1/threads/{gone}")),
        ("GET", format!("/v1/threads/{gone}/messages")),
        ("GET", format!("/v1/threads/{gone}/state")),
        ("GET", format!("/v1/threads/{gone}/files")),
        ("GET", format!("/v1/threads/{gone}/files{report}")),
        ("GET", format!("/v1/threads/{gone}/approvals")),
        ("GET", format!("/v1/threads/{gone}/variables/r1")),
        ("GET", format!("/v1/threads/{gone}/events")),
        ("POST", format!("/v1/threads/{gone}/stop")),
    ] {
        let answer = server
            .raw(method, &path, Some(&token), &[], Vec::new())
            .await;
        let detail = answer.problem(404);
        assert!(detail.contains(&gone), "{method} {path}: {detail}");
    }
    let sent = server
        .post(
            &format!("/v1/threads/{gone}/messages"),
            Some(&token),
            &json!({"message": "are you there?"}),
        )
        .await;
    sent.problem(404);
    let listed = server.get("/v1/threads", Some(&token)).await;
    let ids: Vec<&str> = listed.json["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [kept.as_str()]);
    assert!(matches!(
        server.store.thread(&gone),
        Err(StoreError::ThreadNotFound(_))
    ));
    assert!(matches!(
        server.store.messages(&gone),
        Err(StoreError::ThreadNotFound(_))
    ));

    assert_eq!(
        shown(&server, &token, &kept).await,
        kept_before,
        "the other thread is untouched"
    );
    let _ = std::fs::remove_dir_all(project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_deletions_change_nothing() {
    let project = project();
    let server = TestServer::start_on(&project).await;
    let admin = server.admin();
    let id = finished_thread(&server, &admin, "maker").await;
    let before = shown(&server, &admin, &id).await;

    let reader = server.token(&[Scope::Read], None);
    let detail = delete(&server, &id, Some(&reader)).await.problem(403);
    assert!(detail.contains("\"run\" scope"), "{detail}");
    let other_agent = server.token(&[Scope::Admin], Some(vec!["other"]));
    let detail = delete(&server, &id, Some(&other_agent)).await.problem(404);
    assert!(detail.contains(&format!("no thread {id}")), "{detail}");
    delete(&server, &id, None).await.problem(401);
    assert_eq!(shown(&server, &admin, &id).await, before);

    // A child thread (a sub-agent's) goes with its parent.
    let child = server
        .store
        .create_thread(NewThread {
            agent: "maker".into(),
            parent: Some(id.clone()),
            ..NewThread::default()
        })
        .unwrap()
        .id;
    assert_eq!(delete(&server, &id, Some(&admin)).await.status, 204);
    delete(&server, &child, Some(&admin)).await.problem(404);
    let _ = std::fs::remove_dir_all(project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_that_a_live_run_owns_is_not_deleted_under_it() {
    let project = project();
    let server = TestServer::start_on(&project).await;
    let token = server.admin();
    let id = server
        .create(&token, json!({"agent": "waiter", "message": "wait"}))
        .await;
    let mut stream = server.events(&id, &token, None).await;
    // The run owns the thread until its tool sees the flag file, which only this test makes.
    let owned = tokio::time::timeout(PATIENCE, async {
        loop {
            let got = server.get(&format!("/v1/threads/{id}"), Some(&token)).await;
            if let Some(owner) = got.json["owner"]["owner"].as_str() {
                return owner.to_owned();
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    });
    let owner = owned.await.expect("the run never owned the thread");
    let detail = delete(&server, &id, Some(&token)).await.problem(409);
    assert!(
        detail.contains(&format!("run {owner}"))
            && detail.contains("cannot be deleted while it runs"),
        "{detail}"
    );
    assert_eq!(server.store.thread(&id).unwrap().id, id);

    std::fs::write(project.join("flag"), b"").unwrap();
    let seen = stream.until("run_ended", PATIENCE).await;
    assert_eq!(seen.last().unwrap().data["status"], "done");
    let said: Vec<&str> = seen
        .iter()
        .filter(|e| e.event == "message")
        .filter_map(|e| e.data["content"].as_str())
        .collect();
    assert_eq!(
        said.last(),
        Some(&"waited"),
        "the run went on whole: {said:?}"
    );
    assert_eq!(delete(&server, &id, Some(&token)).await.status, 204);
    let _ = std::fs::remove_dir_all(project);
}
