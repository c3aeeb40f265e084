//! `POST /v1/mcp-definitions/{tool}` (and the same from a thread's page): a person accepts, over
//! the API, the definition an MCP server now gives a tool the project pinned before. Calls of
//! the tool are refused in every thread, new ones included, while the project's pin differs, and
//! go through once it is accepted. A real MCP server (the official Python SDK, `toolhost`'s test
//! server) runs as the project's `notes`.

mod common;

use common::*;
use serde_json::{json, Value};
use std::time::Duration;
use toolhost_server::auth::Scope;

const PATIENCE: Duration = Duration::from_secs(60);

/// The text and status of the thread's last tool result.
fn last_result(server: &TestServer, thread: &str) -> (String, String) {
    let messages = server.store.messages(thread).unwrap();
    let last = messages
        .iter()
        .rev()
        .find(|m| m.role == toolhost_store::Role::Tool)
        .unwrap();
    (
        last.content.clone().unwrap_or_default(),
        format!("{:?}", last.status),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_definition_is_accepted_over_the_api_and_the_calls_go_through_again() {
    let project = notes_project();
    let server = TestServer::start_on(&project).await;
    let admin = server.admin();
    let thread = server
        .create(&admin, json!({"agent": "main", "message": "first"}))
        .await;
    let mut events = server.events(&thread, &admin, None).await;
    events.until_ended("done", PATIENCE).await;
    assert_eq!(last_result(&server, &thread).0, "2");

    // The server described the tool differently since the project pinned it.
    let stale = json!({"description": "0", "inputSchema": "0", "outputSchema": "0"});
    let plant_stale_pin = || {
        toolhost_runtime::mcp::accept_definition(server.store.as_ref(), "notes.add", &stale)
            .unwrap()
    };
    plant_stale_pin();
    let sent = server
        .post(
            &format!("/v1/threads/{thread}/messages"),
            Some(&admin),
            &json!({"message": "second"}),
        )
        .await;
    assert_eq!(sent.status, 202, "{}", sent.text);
    events.until_ended("done", PATIENCE).await;
    let (text, status) = last_result(&server, &thread);
    assert!(status.contains("Error"), "{status}");
    assert!(text.contains("changed this tool"), "{text}");

    // A thread that never called the tool is refused too: the pin is the project's.
    let fresh = server
        .create(&admin, json!({"agent": "main", "message": "first"}))
        .await;
    let mut fresh_events = server.events(&fresh, &admin, None).await;
    fresh_events.until_ended("done", PATIENCE).await;
    let (text, status) = last_result(&server, &fresh);
    assert!(status.contains("Error"), "{status}");
    assert!(
        text.contains("since the project first used it")
            && text.contains("POST /v1/mcp-definitions/notes.add"),
        "{text}"
    );

    // Who may accept, and what.
    let path = "/v1/mcp-definitions/notes.add";
    let reader = server.token(&[Scope::Read], None);
    server
        .post(path, Some(&reader), &Value::Null)
        .await
        .problem(403);
    // A token limited to one agent would change what every agent's threads call.
    let limited = server.token(&[Scope::Approve], Some(vec!["main"]));
    server
        .post(path, Some(&limited), &Value::Null)
        .await
        .problem(403);
    server
        .post("/v1/mcp-definitions/notes.nope", Some(&admin), &Value::Null)
        .await
        .problem(404);
    let accepted = server.post(path, Some(&admin), &Value::Null).await;
    assert_eq!(accepted.status, 204, "{}", accepted.text);

    let sent = server
        .post(
            &format!("/v1/threads/{thread}/messages"),
            Some(&admin),
            &json!({"message": "third"}),
        )
        .await;
    assert_eq!(sent.status, 202, "{}", sent.text);
    events.until_ended("done", PATIENCE).await;
    let (text, status) = last_result(&server, &thread);
    assert_eq!((text.as_str(), status.contains("Success")), ("6", true));

    // From a thread's page: the same acceptance, for the project.
    plant_stale_pin();
    let from_thread = format!("/v1/threads/{fresh}/mcp-definitions/notes.add");
    server
        .post(&from_thread, Some(&reader), &Value::Null)
        .await
        .problem(403);
    let accepted = server.post(&from_thread, Some(&admin), &Value::Null).await;
    assert_eq!(accepted.status, 204, "{}", accepted.text);
    let pinned = server
        .store
        .credential(&toolhost_runtime::mcp::pin_record("notes.add"))
        .unwrap()
        .unwrap();
    assert_ne!(pinned.value, stale.to_string());
}
