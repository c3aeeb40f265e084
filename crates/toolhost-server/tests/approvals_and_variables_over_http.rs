//! A person answers a paused thread over HTTP: the variables it asks for (secrets accepted and
//! never returned by any endpoint or event) and the approval of a call (approve or deny with a
//! message), each bound to what waits.

mod common;

use common::*;
use serde_json::{json, Value};
use std::time::Duration;

const PATIENCE: Duration = Duration::from_secs(60);
const CANARY: &str = "sk_live_canary_0b5e7d41";

/// Waits until the thread pauses (its run ended paused) and returns what it waits for.
async fn paused(server: &TestServer, id: &str, token: &str, stream: &mut EventStream) -> Value {
    let seen = stream.until("run_ended", PATIENCE).await;
    let ended = &seen.last().unwrap().data;
    assert_eq!(ended["status"], "paused", "{ended}");
    let got = server.get(&format!("/v1/threads/{id}"), Some(token)).await;
    assert_eq!(got.status, 200, "{}", got.text);
    got.json["waiting"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_thread_is_given_its_secret_then_approved_and_the_secret_never_comes_back() {
    let server = TestServer::start().await;
    let token = server.admin();
    let id = server
        .create(
            &token,
            json!({"agent": "cashier", "message": "Charge 20 EUR"}),
        )
        .await;
    let mut stream = server.events(&id, &token, None).await;
    let waiting = paused(&server, &id, &token, &mut stream).await;
    let request = waiting["variables"][0]["request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(waiting["variables"][0]["names"], json!(["PAYMENT_API_KEY"]));

    let path = format!("/v1/threads/{id}/variables/{request}");
    let asked = server.get(&path, Some(&token)).await;
    assert_eq!(asked.status, 200, "{}", asked.text);
    assert_eq!(
        asked.json["variables"],
        json!([{"name": "PAYMENT_API_KEY", "secret": true}])
    );
    let as_text = server
        .post(
            &path,
            Some(&token),
            &json!({"variables": {"PAYMENT_API_KEY": CANARY}}),
        )
        .await;
    assert!(as_text.problem(422).contains("is a secret"));
    let stranger = server
        .post(&path, Some(&token), &json!({"secrets": {"OTHER": "x"}}))
        .await;
    assert!(stranger.problem(422).contains("does not ask for \"OTHER\""));
    let given = server
        .post(
            &path,
            Some(&token),
            &json!({"secrets": {"PAYMENT_API_KEY": CANARY}}),
        )
        .await;
    assert_eq!(
        (given.status, &given.json),
        (200, &json!({"answered": true}))
    );
    let again = server
        .post(
            &path,
            Some(&token),
            &json!({"secrets": {"PAYMENT_API_KEY": "other"}}),
        )
        .await;
    assert!(again.problem(409).contains("answered already"));

    let waiting = paused(&server, &id, &token, &mut stream).await;
    let call = waiting["approvals"][0]["call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(waiting["approvals"][0]["tool"], "process_payment");
    let wrong = server
        .post(
            &format!("/v1/threads/{id}/approvals/{call}"),
            Some(&token),
            &json!({"decision": "approve", "message": "fine"}),
        )
        .await;
    assert!(wrong.problem(422).contains("a message goes with a denial"));
    let unknown = server
        .post(
            &format!("/v1/threads/{id}/approvals/no-such-call"),
            Some(&token),
            &json!({"decision": "approve"}),
        )
        .await;
    assert!(unknown
        .problem(409)
        .contains("no call of this thread waits"));
    let approved = server
        .post(
            &format!("/v1/threads/{id}/approvals/{call}"),
            Some(&token),
            &json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(approved.status, 200, "{}", approved.text);
    assert_eq!(approved.json["approval"]["decision"]["approved"], true);
    let seen = stream.until("run_ended", PATIENCE).await;
    assert_eq!(seen.last().unwrap().data["status"], "done");
    let result = seen
        .iter()
        .find(|e| e.event == "message" && e.data["role"] == "tool")
        .expect("the payment's result");
    assert!(result.data["content"]
        .as_str()
        .unwrap()
        .contains("\"transaction\": \"tx_"));

    // The secret is in no answer of any endpoint, and in no event.
    let mut everything = String::new();
    for path in [
        format!("/v1/threads/{id}"),
        format!("/v1/threads/{id}/messages"),
        format!("/v1/threads/{id}/state"),
        format!("/v1/threads/{id}/approvals"),
        format!("/v1/threads/{id}/variables/{request}"),
        "/v1/threads".to_owned(),
    ] {
        everything.push_str(&server.get(&path, Some(&token)).await.text);
    }
    let mut replay = server.events(&id, &token, None).await;
    for e in replay.until("status", PATIENCE).await {
        everything.push_str(&e.data.to_string());
    }
    assert!(everything.contains("process_payment"));
    assert!(!everything.contains(CANARY), "the secret came back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denial_with_a_message_is_what_the_model_is_told() {
    let server = TestServer::start().await;
    let token = server.admin();
    let id = server
        .create(
            &token,
            json!({"agent": "cashier", "message": "Charge 20 EUR", "secrets": {"PAYMENT_API_KEY": CANARY}}),
        )
        .await;
    let mut stream = server.events(&id, &token, None).await;
    let waiting = paused(&server, &id, &token, &mut stream).await;
    let call = waiting["approvals"][0]["call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let null = server
        .post(
            &format!("/v1/threads/{id}/approvals/{call}"),
            Some(&token),
            &json!({"decision": "approve", "arguments": null}),
        )
        .await;
    assert!(null.problem(422).contains("must be a JSON object"));
    assert_eq!(null.json["pointer"], "/arguments");
    let denied = server
        .post(
            &format!("/v1/threads/{id}/approvals/{call}"),
            Some(&token),
            &json!({"decision": "deny", "message": "Not today.", "reason": "over the daily budget"}),
        )
        .await;
    assert_eq!(denied.status, 200, "{}", denied.text);
    let seen = stream.until("run_ended", PATIENCE).await;
    let result = seen
        .iter()
        .find(|e| e.event == "message" && e.data["role"] == "tool")
        .expect("the denial's result");
    assert_eq!(result.data["content"], "Not today.");
    assert_eq!(result.data["status"], "error");
    // The decision keeps its own reason (the model sees it when there is no message).
    let decision = server
        .store
        .approvals(&id)
        .unwrap()
        .remove(0)
        .decision
        .unwrap();
    assert_eq!(decision.reason.as_deref(), Some("over the daily budget"));
    let again = server
        .post(
            &format!("/v1/threads/{id}/approvals/{call}"),
            Some(&token),
            &json!({"decision": "approve"}),
        )
        .await;
    again.problem(409);
}
