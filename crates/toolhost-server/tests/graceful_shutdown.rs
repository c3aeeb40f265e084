//! Shutdown lets the operation under way finish and be stored, stops the run before its next
//! model request, and releases the thread, so that any process can take it up later.

mod common;

use common::*;
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_mid_call_stores_the_result_and_releases_the_thread() {
    // It naps until the test lets it end (the file `release`, made once the shutdown began), or
    // a minute at most.
    let project = napping_project(
        "touch started; n=0; while [ ! -e release ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n+1)); done; echo '{\"status\": \"success\", \"result\": \"napped\"}'",
    );
    let server = TestServer::start_on(&project).await;
    let token = server.admin();
    let store = server.store.clone();
    let id = server
        .create(&token, json!({"agent": "slow", "message": "take a nap"}))
        .await;
    // Wait (a guard, not a measure) until the program runs: it marks that in the project folder
    // (its working folder). A stop before it starts would answer the call "not run" instead.
    let mut waited = 0;
    while !project.join("started").exists() {
        assert!(waited < 6000, "the call never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
        waited += 1;
    }
    assert!(
        store.lease(&id).unwrap().is_some(),
        "the run owns the thread"
    );

    // A client follows the thread: its stream must not hold the shutdown open.
    let mut stream = server.events(&id, &token, None).await;
    stream.until("message", Duration::from_secs(60)).await;

    // A guard against a hang, not a measure: a stream that held the shutdown would never end.
    // The stream's end says the shutdown began (its runs were asked to stop at the same step):
    // only then does the program end.
    let (data, rest) = tokio::join!(
        async {
            tokio::time::timeout(Duration::from_secs(120), server.shutdown_keeping_data())
                .await
                .expect("the shutdown ended although a stream was open")
        },
        async {
            let rest = stream.until("error", Duration::from_secs(60)).await;
            std::fs::write(project.join("release"), b"").unwrap();
            rest
        }
    );
    assert!(
        rest.last().unwrap().data["detail"]
            .as_str()
            .unwrap()
            .contains("shutting down"),
        "{rest:?}"
    );
    assert!(
        stream.next_within("the end of the stream").await.is_none(),
        "the stream ended"
    );

    assert_eq!(store.lease(&id).unwrap(), None, "the thread was released");
    let calls = store.calls(&id).unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].state, toolhost_store::CallState::Completed);
    let messages = store.messages(&id).unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last.content.as_deref(), Some("napped"), "{messages:#?}");
    assert!(
        messages
            .iter()
            .all(|m| m.content.as_deref() != Some("rested")),
        "no model request after the stop"
    );

    // Another server on the same data leaves the stopped thread as it is until it is run.
    let again = TestServer::restart(&project, data).await;
    let token = again.admin();
    assert_eq!(again.store.messages(&id).unwrap().len(), messages.len());
    let mut stream = again.events(&id, &token, None).await;
    let resumed = again
        .post(&format!("/v1/threads/{id}/run"), Some(&token), &json!({}))
        .await;
    assert_eq!(resumed.status, 202, "{}", resumed.text);
    // The first server's run ended "stopped"; this one ends on the model's answer.
    loop {
        let seen = stream.until("run_ended", Duration::from_secs(60)).await;
        if seen.last().unwrap().data["reason"] == "response" {
            break;
        }
    }
    let last = again.store.messages(&id).unwrap().pop().unwrap();
    assert_eq!(last.content.as_deref(), Some("rested"), "the turn went on");
    let _ = std::fs::remove_dir_all(project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_left_without_its_run_is_taken_up_when_the_server_starts() {
    // A thread created and never run (its server went away before the run started).
    let data = temp_dir();
    let store: std::sync::Arc<dyn toolhost_store::Store> =
        std::sync::Arc::new(toolhost_store::SqliteStore::open(&data.join("toolhost.db")).unwrap());
    let runtime = toolhost_runtime::engine::Runtime::load(&quickstart(), store.clone())
        .await
        .unwrap();
    let thread = runtime.start_thread("assistant", "Weather?").await.unwrap();
    drop(runtime);
    assert_eq!(store.messages(&thread.id).unwrap().len(), 1);

    let runtime = toolhost_runtime::engine::Runtime::load(&quickstart(), store.clone())
        .await
        .unwrap();
    let server = toolhost_server::Server::new(
        std::sync::Arc::new(runtime),
        toolhost_server::ServerConfig::default(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(server.run(listener, async {
        let _ = stopped.await;
    }));
    // A guard against a hang, not a measure.
    let mut waited = 0;
    while store.thread(&thread.id).unwrap().status != toolhost_store::ThreadStatus::Done {
        assert!(waited < 6000, "the thread was not taken up");
        tokio::time::sleep(Duration::from_millis(10)).await;
        waited += 1;
    }
    let messages = store.messages(&thread.id).unwrap();
    assert_eq!(messages.len(), 7, "{messages:#?}");
    let _ = stop.send(());
    within("the end of the server after its stop", served)
        .await
        .unwrap()
        .unwrap();
    let _ = std::fs::remove_dir_all(data);
}
