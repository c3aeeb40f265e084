//! The project's tools over HTTP: listed with their schemas, kind, approval and the agents that
//! offer them; arguments checked exactly as a model's call is checked (repairs included); and a
//! tool called directly on a scratch thread, journaled like a model's call, waiting for a
//! person when it needs approval. Hostile bodies get a 4xx and store nothing.

mod common;

use common::*;
use serde_json::{json, Value};
use std::time::Duration;
use toolhost_server::auth::Scope;
use toolhost_store::{CallState, Role};

const PATIENCE: Duration = Duration::from_secs(60);
const CANARY: &str = "sk_live_canary_7f3a9c21";

fn names(list: &Value) -> Vec<&str> {
    list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

fn tool<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {list}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_is_listed_with_its_schemas_kind_approval_and_agents() {
    let server = TestServer::start().await;
    let reader = server.token(&[Scope::Read], None);
    let all = server.get("/v1/tools", Some(&reader)).await;
    assert_eq!(all.status, 200, "{}", all.text);
    assert_eq!(
        names(&all.json),
        [
            "create_ticket",
            "get_current_time",
            "get_weather",
            "process_payment",
            "run_code",
            "search_knowledge_base",
            "sentiment_analysis",
            "think"
        ]
    );
    let weather = tool(&all.json, "get_weather");
    assert_eq!(
        weather["description"],
        "Get the current weather for a location."
    );
    assert_eq!(
        weather["input_schema"]["properties"]["units"]["enum"],
        json!(["celsius", "fahrenheit"])
    );
    assert_eq!(weather["input_schema"]["required"], json!(["location"]));
    assert_eq!(weather["output_schema"], Value::Null);
    assert_eq!(weather["kind"], "process");
    assert_eq!(weather["activity"], "get_weather");
    assert_eq!(weather["needs_approval"], false);
    assert_eq!(weather["agents"], json!(["assistant", "reporter"]));
    let payment = tool(&all.json, "process_payment");
    assert_eq!(payment["needs_approval"], true);
    assert_eq!(payment["idempotent"], true);
    assert_eq!(payment["agents"], json!(["cashier"]));
    let latent = tool(&all.json, "sentiment_analysis");
    assert_eq!(latent["kind"], "latent");
    assert_eq!(
        latent["output_schema"]["required"],
        json!(["sentiment", "confidence"])
    );
    assert_eq!(latent["agents"], json!(["reporter"]));
    assert_eq!(tool(&all.json, "think")["kind"], "rust");
    assert_eq!(tool(&all.json, "think")["agents"], json!(["assistant"]));
    // The built-in run_code is a Rust tool no prompt of the example offers.
    assert_eq!(tool(&all.json, "run_code")["kind"], "rust");
    assert_eq!(tool(&all.json, "run_code")["agents"], json!([]));

    // A token limited to the cashier sees only what the cashier's prompt offers.
    let cashier = server.token(&[Scope::Read], Some(vec!["cashier"]));
    let some = server.get("/v1/tools", Some(&cashier)).await;
    assert_eq!(names(&some.json), ["process_payment"]);
    assert_eq!(
        tool(&some.json, "process_payment")["agents"],
        json!(["cashier"])
    );
    // The same answer each time.
    assert_eq!(server.get("/v1/tools", Some(&reader)).await.text, all.text);
    server.get("/v1/tools", None).await.problem(401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_are_checked_and_repaired_as_a_models_call_is() {
    let server = TestServer::start().await;
    let reader = server.token(&[Scope::Read], None);
    let path = "/v1/tools/get_weather/validate";

    let wrong = server
        .post(path, Some(&reader), &json!({"arguments": {"location": 42}}))
        .await;
    assert_eq!(wrong.status, 200, "{}", wrong.text);
    assert_eq!(wrong.json["valid"], false);
    assert_eq!(wrong.json["violations"][0]["pointer"], "/location");
    assert!(wrong.json["violations"][0]["message"]
        .as_str()
        .unwrap()
        .contains("string"));

    let fits = server
        .post(
            path,
            Some(&reader),
            &json!({"arguments": {"location": "Oslo"}}),
        )
        .await;
    assert_eq!(
        fits.json,
        json!({"valid": true, "arguments": {"location": "Oslo", "units": "celsius"}, "repairs": []})
    );

    let comma = server
        .post(
            path,
            Some(&reader),
            &json!({"argument_text": "{\"location\": \"Oslo\", \"units\": \"fahrenheit\",}"}),
        )
        .await;
    assert_eq!(comma.json["valid"], true, "{}", comma.text);
    assert_eq!(
        comma.json["arguments"],
        json!({"location": "Oslo", "units": "fahrenheit"})
    );
    let repairs = comma.json["repairs"].to_string();
    assert!(repairs.contains("trailing comma"), "{repairs}");

    let broken = server
        .post(
            path,
            Some(&reader),
            &json!({"argument_text": "{\"location\": "}),
        )
        .await;
    assert_eq!(broken.json["valid"], false, "{}", broken.text);
    let duplicate = server
        .post(
            path,
            Some(&reader),
            &json!({"argument_text": "{\"location\": \"Oslo\", \"location\": \"Rome\"}"}),
        )
        .await;
    assert_eq!(duplicate.json["valid"], false, "{}", duplicate.text);

    let unknown = server
        .post(
            "/v1/tools/teleport/validate",
            Some(&reader),
            &json!({"arguments": {}}),
        )
        .await;
    let detail = unknown.problem(404);
    assert!(detail.contains("\"teleport\""), "{detail}");
    assert!(detail.contains("get_weather, process_payment"), "{detail}");
    let cashier = server.token(&[Scope::Read], Some(vec!["cashier"]));
    let hidden = server
        .post(path, Some(&cashier), &json!({"arguments": {}}))
        .await;
    assert!(hidden
        .problem(404)
        .ends_with("(the tools there are: process_payment)"));
    let both = server
        .post(
            path,
            Some(&reader),
            &json!({"arguments": {}, "argument_text": "{}"}),
        )
        .await;
    assert!(both.problem(422).contains("not both"));
    let neither = server.post(path, Some(&reader), &json!({})).await;
    neither.problem(422);
    // An integer past 64 bits is refused, never rounded to another number.
    let huge = server
        .raw(
            "POST",
            path,
            Some(&reader),
            &[("content-type", "application/json")],
            br#"{"arguments": {"location": 123456789012345678901234567890}}"#.to_vec(),
        )
        .await;
    assert!(huge.problem(422).contains("does not fit in 64 bits"));
    assert_eq!(huge.json["pointer"], "/arguments/location");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_call_runs_on_a_scratch_thread_journaled_like_a_models_call() {
    let server = TestServer::start().await;
    let runner = server.token(&[Scope::Read, Scope::Run], None);
    let called = server
        .post(
            "/v1/tools/get_weather/call",
            Some(&runner),
            &json!({"argument_text": "{'location': 'Oslo',}"}),
        )
        .await;
    assert_eq!(called.status, 200, "{}", called.text);
    assert_eq!(called.json["status"], "done");
    assert_eq!(called.json["agent"], "assistant");
    assert_eq!(
        called.json["result"]["status"], "success",
        "{}",
        called.text
    );
    assert!(called.json["result"]["result"].to_string().contains("Oslo"));
    assert!(!called.json["repairs"].as_array().unwrap().is_empty());
    let thread = called.json["thread_id"].as_str().unwrap();
    let call = called.json["call_id"].as_str().unwrap();

    let stored = server.store.thread(thread).unwrap();
    assert_eq!(stored.tags, ["scratch"]);
    assert_eq!(stored.agent, "assistant");
    let journal = server.store.calls(thread).unwrap();
    assert_eq!(journal.len(), 1);
    assert_eq!(journal[0].call_id, call);
    assert_eq!(journal[0].state, CallState::Completed);
    // The call and its result, and no model reply: a scratch thread never asks a model.
    let messages = server.store.messages(thread).unwrap();
    let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::Assistant, Role::Tool]);
    assert_eq!(
        serde_json::from_str::<Value>(&messages[0].tool_calls[0].arguments).unwrap(),
        json!({"location": "Oslo"})
    );
    assert_eq!(
        messages[0].metadata.repairs[0].original,
        "{'location': 'Oslo',}"
    );
    let listed = server.get("/v1/threads?limit=10", Some(&runner)).await;
    assert_eq!(listed.json["threads"][0]["tags"], json!(["scratch"]));
    let message = server
        .post(
            &format!("/v1/threads/{thread}/messages"),
            Some(&runner),
            &json!({"message": "and now?"}),
        )
        .await;
    assert!(message.problem(409).contains("no model would answer"));
    assert!(server.store.queued(thread).unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_needs_approval_waits_until_the_approvals_endpoint_runs_it() {
    let server = TestServer::start().await;
    let token = server.admin();
    let called = server
        .post(
            "/v1/tools/process_payment/call",
            Some(&token),
            &json!({"arguments": {"amount": 20, "currency": "EUR"}, "secrets": {"PAYMENT_API_KEY": CANARY}}),
        )
        .await;
    assert_eq!(called.status, 202, "{}", called.text);
    assert_eq!(called.json["status"], "waiting");
    assert_eq!(called.json["waiting_for"], "approval");
    let thread = called.json["thread_id"].as_str().unwrap().to_owned();
    let call = called.json["call_id"].as_str().unwrap().to_owned();
    let decide = format!("/v1/threads/{thread}/approvals/{call}");
    assert_eq!(called.json["approval"]["decide"], decide);
    // Not run: journaled nothing, stored no result.
    assert!(server.store.calls(&thread).unwrap().is_empty());
    let waiting = server
        .get(&format!("/v1/threads/{thread}/approvals"), Some(&token))
        .await;
    assert_eq!(waiting.json["approvals"][0]["request"]["call_id"], call);

    let mut stream = server.events(&thread, &token, None).await;
    let approved = server
        .post(&decide, Some(&token), &json!({"decision": "approve"}))
        .await;
    assert_eq!(approved.status, 200, "{}", approved.text);
    // The stream replays the first run's end (paused for the approval) before this one's.
    let seen = stream.until_ended("done", PATIENCE).await;
    let result = seen
        .iter()
        .find(|e| e.event == "message" && e.data["role"] == "tool")
        .expect("the payment's result");
    assert!(result.data["content"]
        .as_str()
        .unwrap()
        .contains("\"transaction\": \"tx_"));
    let journal = server.store.calls(&thread).unwrap();
    assert_eq!(journal.len(), 1);
    assert_eq!(journal[0].state, CallState::Completed);
    // The run after the approval carried out the call and asked no model.
    let roles: Vec<Role> = server
        .store
        .messages(&thread)
        .unwrap()
        .iter()
        .map(|m| m.role)
        .collect();
    assert_eq!(roles, [Role::Assistant, Role::Tool]);

    let mut everything = called.text.clone();
    for path in [
        format!("/v1/threads/{thread}"),
        format!("/v1/threads/{thread}/messages"),
        format!("/v1/threads/{thread}/approvals"),
    ] {
        everything.push_str(&server.get(&path, Some(&token)).await.text);
    }
    assert!(everything.contains("process_payment"));
    assert!(!everything.contains(CANARY), "the secret came back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_calls_are_refused_with_what_and_where_and_store_nothing() {
    let server = TestServer::start().await;
    let token = server.admin();
    let path = "/v1/tools/get_weather/call";

    let wrong = server
        .post(path, Some(&token), &json!({"arguments": {"location": 42}}))
        .await;
    assert!(wrong.problem(422).contains("at /location"));
    assert_eq!(wrong.json["pointer"], "/arguments/location");
    let text = server
        .post(
            path,
            Some(&token),
            &json!({"argument_text": "{\"location\": "}),
        )
        .await;
    text.problem(422);
    assert_eq!(text.json["pointer"], "/argument_text");
    let unknown_field = server
        .post(
            path,
            Some(&token),
            &json!({"arguments": {"location": "Oslo"}, "run": true}),
        )
        .await;
    assert!(unknown_field.problem(422).contains("unknown field `run`"));
    let not_object = server
        .raw(
            "POST",
            path,
            Some(&token),
            &[("content-type", "application/json")],
            b"[1, 2]".to_vec(),
        )
        .await;
    not_object.problem(422);
    let nested = format!(
        r#"{{"arguments": {}{}}}"#,
        "[".repeat(5000),
        "]".repeat(5000)
    );
    let deep = server
        .raw(
            "POST",
            path,
            Some(&token),
            &[("content-type", "application/json")],
            nested.into_bytes(),
        )
        .await;
    assert!(deep.problem(400).contains("recursion limit"));
    let huge = json!({"argument_text": "x".repeat(100 * 1024)});
    server.post(path, Some(&token), &huge).await.problem(413);
    let elsewhere = server
        .post(
            path,
            Some(&token),
            &json!({"arguments": {"location": "Oslo"}, "agent": "cashier"}),
        )
        .await;
    assert!(elsewhere.problem(422).contains("does not offer tool"));
    // A tool no agent offers (the built-in run_code, which no prompt of the example offers).
    let unoffered = server
        .post(
            "/v1/tools/run_code/call",
            Some(&token),
            &json!({"arguments": {"code": "1"}}),
        )
        .await;
    let why = unoffered.problem(422);
    assert!(why.contains("cannot be called directly"), "{why}");

    let reader = server.token(&[Scope::Read], None);
    let read_only = server
        .post(
            path,
            Some(&reader),
            &json!({"arguments": {"location": "Oslo"}}),
        )
        .await;
    assert!(read_only.problem(403).contains("\"run\" scope"));
    let cashier = server.token(&[Scope::Run], Some(vec!["cashier"]));
    let other_agent = server
        .post(
            path,
            Some(&cashier),
            &json!({"arguments": {"location": "Oslo"}}),
        )
        .await;
    other_agent.problem(404);

    assert_eq!(
        server.store.threads(None).unwrap(),
        vec![],
        "nothing stored"
    );
}
