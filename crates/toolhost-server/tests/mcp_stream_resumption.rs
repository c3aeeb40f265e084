//! Resuming a 2025-11-25 session's call stream at `/mcp` (SEP-1699) with a real server on
//! loopback and raw HTTP: a server that lets go of a call's stream after `mcp_stream_hold`
//! closes it mid-call, and a GET with `Last-Event-ID` gets the call's answer, even when it comes
//! after the call ended (the answer is kept, not sent into the closed stream and lost).

mod common;

use common::*;
use serde_json::{json, Value};
use std::time::Duration;
use toolhost_server::auth::Scope;
use toolhost_store::CallState;

/// The `(id, data)` of each event of an event stream's text.
fn events(text: &str) -> Vec<(String, String)> {
    text.split("\n\n")
        .filter_map(|event| {
            let field = |name: &str| {
                event
                    .lines()
                    .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_owned()))
            };
            field("id:").map(|id| (id, field("data:").unwrap_or_default()))
        })
        .collect()
}

/// Posts `body` in session `session` (none for `initialize`).
async fn post(server: &TestServer, token: &str, session: Option<&str>, body: Value) -> Answer {
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    if let Some(session) = session {
        headers.push(("mcp-session-id", session));
    }
    server
        .raw(
            "POST",
            "/mcp",
            Some(token),
            &headers,
            body.to_string().into_bytes(),
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_the_server_let_go_of_is_resumed_with_the_answer_even_after_the_call_ended() {
    let server = TestServer::start_with(&mcp_example(), |config| {
        config.mcp_agent = Some("fixtures".to_owned());
        config.mcp_stream_hold = Some(Duration::from_millis(100));
    })
    .await;
    let token = server.token(&[Scope::Run], Some(vec!["fixtures"]));
    let session = initialized(&server, &token).await;

    // The call takes a second; its stream is let go of after 100 ms, with the priming event only.
    let call = post(
        &server,
        &token,
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": "test_reconnection", "arguments": {}}}),
    )
    .await;
    let seen = events(&call.text);
    assert!(
        !seen.is_empty() && seen.iter().all(|(_, data)| data.is_empty()),
        "only the priming event before the stream closed: {}",
        call.text
    );
    let last = seen.last().unwrap().0.clone();

    // The client reconnects only once the call has ended.
    let ended =
        async {
            loop {
                let done =
                    server.store.threads(None).unwrap().iter().any(|t| {
                        server.store.calls(&t.id).unwrap().iter().any(|c| {
                            c.tool == "test_reconnection" && c.state == CallState::Completed
                        })
                    });
                if done {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
    tokio::time::timeout(Duration::from_secs(20), ended)
        .await
        .expect("the call ends");
    // The journal holds the result before the answer is sent: give the answer the moment it
    // takes to be sent into the closed stream, so the GET comes after it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let resumed = resume(&server, &token, &session, &last).await;
    let answer = resumed
        .iter()
        .find_map(|(_, data)| serde_json::from_str::<Value>(data).ok())
        .unwrap_or_else(|| panic!("no answer on the resumed stream: {resumed:?}"));
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"], "Answered after a second.",
        "{answer}"
    );
    // Another session that learned the event id resumes nothing: a stream is its session's.
    let other = initialized(&server, &token).await;
    assert!(resume(&server, &token, &other, &last).await.is_empty());
    // An id the server never gave resumes nothing either.
    assert!(resume(&server, &token, &session, "someone-else/0")
        .await
        .is_empty());
}

/// A new initialized session; its id.
async fn initialized(server: &TestServer, token: &str) -> String {
    let opened = post(
        server,
        token,
        None,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
    )
    .await;
    let session = opened.header("mcp-session-id").unwrap().to_owned();
    post(
        server,
        token,
        Some(&session),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    session
}

/// The events a GET of session `session` with `Last-Event-ID: last` gets.
async fn resume(
    server: &TestServer,
    token: &str,
    session: &str,
    last: &str,
) -> Vec<(String, String)> {
    let resumed = server
        .raw(
            "GET",
            "/mcp",
            Some(token),
            &[
                ("accept", "text/event-stream"),
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-session-id", session),
                ("last-event-id", last),
            ],
            Vec::new(),
        )
        .await;
    events(&resumed.text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_ended_with_delete_is_answered_no_content_and_is_gone() {
    let server = TestServer::start_with(&mcp_example(), |config| {
        config.mcp_agent = Some("fixtures".to_owned());
    })
    .await;
    let token = server.token(&[Scope::Run], Some(vec!["fixtures"]));
    let session = initialized(&server, &token).await;
    let ended = server
        .raw(
            "DELETE",
            "/mcp",
            Some(&token),
            &[
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-session-id", session.as_str()),
            ],
            Vec::new(),
        )
        .await;
    // Not 202: the SDKs take "accepted" for a failure to end the session.
    assert_eq!(ended.status, 204, "{}", ended.text);
    let after = post(
        &server,
        &token,
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    )
    .await;
    assert_eq!(after.status, 404, "{}", after.text);
}
