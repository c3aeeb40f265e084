//! A tool that asks while it runs (`state.elicit`, `state.sample` in a tool file) over `/mcp`,
//! with the official MCP SDK's Python client: under 2025-11-25 it gets the form and the sampling
//! request and its answers reach the tool; under 2026-07-28 it gets them in an `input_required`
//! answer and its retry runs the call again with the answers (each round journaled); a client
//! that declared neither capability leaves the tool with one sentence saying why, which the
//! conformance example's tools let fail the call.

mod common;

use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use toolhost_server::auth::Scope;

fn example() -> PathBuf {
    Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../examples/mcp-conformance")
}

/// What the client saw calling the asking tools in `mode` (see `http_client_asks.py`), and the
/// server.
async fn asked(mode: &str) -> (Value, TestServer) {
    let server = TestServer::start_with(&example(), |config| {
        config.mcp_agent = Some("fixtures".to_owned());
    })
    .await;
    let token = server.token(&[Scope::Run], Some(vec!["fixtures"]));
    let url = format!("http://{}/mcp", server.addr);
    let seen = python_client("http_client_asks.py", &[&url, &token, mode]).await;
    (seen, server)
}

/// What the client was asked and what the tools made of its answers, as in either protocol.
fn answered_as_asked(seen: &Value) {
    assert_eq!(seen["elicit"]["isError"], false, "{seen}");
    assert_eq!(
        seen["elicit"]["text"],
        r#"User response: action=accept, content={"username":"ada","email":"ada@example.com"}"#
    );
    assert_eq!(seen["forms"][0]["message"], "Who are you?");
    assert_eq!(
        seen["forms"][0]["schema"]["required"],
        json!(["username", "email"])
    );
    assert_eq!(seen["sample"]["text"], "LLM response: forty-two", "{seen}");
    assert_eq!(
        seen["samples"][0][0]["content"]["text"],
        "What is six times seven?"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_answers_gets_the_form_and_the_request_and_the_tool_its_answers() {
    let (seen, _server) = asked("answering").await;
    answered_as_asked(&seen);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_cannot_answer_leaves_the_tool_with_why() {
    let (seen, _server) = asked("silent").await;
    assert_eq!(seen["elicit"]["isError"], true, "{seen}");
    let why = seen["elicit"]["text"].as_str().unwrap();
    assert!(why.contains("cannot answer elicitation"), "{seen}");
    let why = seen["sample"]["text"].as_str().unwrap();
    assert!(why.contains("cannot answer sampling"), "{seen}");
    assert_eq!(seen["forms"], json!([]));
    assert_eq!(seen["samples"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_2026_07_28_the_answers_come_in_the_retry_and_the_call_runs_again() {
    let (seen, server) = asked("modern").await;
    answered_as_asked(&seen);
    // Each call ran twice: once to the question, once again with the answer.
    let mut rounds = std::collections::BTreeMap::<String, usize>::new();
    for thread in server.store.threads(None).unwrap() {
        for call in server.store.calls(&thread.id).unwrap() {
            *rounds.entry(call.tool).or_default() += 1;
        }
    }
    assert_eq!(rounds.get("test_elicitation"), Some(&2), "{rounds:?}");
    assert_eq!(rounds.get("test_sampling"), Some(&2), "{rounds:?}");
}

/// Under 2026-07-28 the request state an `input_required` answer gives is good only for the call
/// it was given for: with it and the answer, that call completes; for another tool it is refused
/// as a protocol error, before anything runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_state_is_good_only_for_its_own_call() {
    let project = example();
    let server = TestServer::start_with(&project, |config| {
        config.mcp_agent = Some("fixtures".to_owned());
    })
    .await;
    let token = server.token(&[Scope::Run], Some(vec!["fixtures"]));
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    });
    let call = |tool: &'static str, extra: Value| {
        let (server, token, meta) = (&server, token.clone(), meta.clone());
        async move {
            let mut params = json!({"name": tool, "arguments": {}, "_meta": meta});
            if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
                params.extend(extra);
            }
            mcp_request(server, &token, &[], "tools/call", tool, params).await
        }
    };
    let asked = call("test_input_required_result_elicitation", json!({})).await;
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    assert_eq!(
        result["inputRequests"]["user_name"]["method"],
        "elicitation/create"
    );
    let state = result["requestState"].as_str().unwrap().to_owned();
    let answer = json!({"user_name": {"action": "accept", "content": {"name": "Ada"}}});

    let elsewhere = call(
        "test_input_required_result_tampered_state",
        json!({"requestState": state, "inputResponses": answer}),
    )
    .await;
    assert_eq!(elsewhere["error"]["code"], -32602, "{elsewhere}");
    assert!(elsewhere["error"]["message"]
        .as_str()
        .unwrap()
        .contains("another call"));

    let answered = call(
        "test_input_required_result_elicitation",
        json!({"requestState": state, "inputResponses": answer}),
    )
    .await;
    assert_eq!(
        answered["result"]["content"][0]["text"], "Hello, Ada!",
        "{answered}"
    );
}
