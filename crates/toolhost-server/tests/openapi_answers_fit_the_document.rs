//! The answers the handlers build are what the OpenAPI document says: real answers of a thread's
//! whole life (created, asking for a secret, waiting for an approval, done), of the tools and of
//! direct calls are validated against the document's schemas, with every documented object
//! closed to fields it does not list, so a field added to an answer and not to the document
//! fails here.

mod common;
mod maker;

use common::*;
use maker::{attachment, fetch, finished_thread, project};
use serde_json::{json, Value};
use std::time::Duration;

const PATIENCE: Duration = Duration::from_secs(60);

/// The document's schemas, closed: an object schema that lists its properties gets
/// `additionalProperties: false` unless it says otherwise.
struct Documented {
    doc: Value,
    components: Value,
}

fn close(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.contains_key("properties") && !map.contains_key("additionalProperties") {
                map.insert("additionalProperties".to_owned(), Value::Bool(false));
            }
            map.values_mut().for_each(close);
        }
        Value::Array(items) => items.iter_mut().for_each(close),
        _ => {}
    }
}

impl Documented {
    async fn of(server: &TestServer) -> Self {
        let doc = server.get("/v1/openapi.json", None).await.json;
        let mut components = doc["components"].clone();
        close(&mut components);
        Self { doc, components }
    }

    /// The documented answer of `operation_id` with `status`.
    fn response(&self, operation_id: &str, status: u16) -> &Value {
        let operation = self.doc["paths"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|item| item.as_object().unwrap().values())
            .find(|op| op["operationId"] == operation_id)
            .unwrap_or_else(|| panic!("no operation {operation_id}"));
        let response = &operation["responses"][status.to_string()];
        assert!(
            response.is_object(),
            "{operation_id} does not document status {status}"
        );
        response
    }

    /// Asserts that `answer` has a status `operation_id` documents and fits its schema.
    fn check(&self, operation_id: &str, answer: &Answer) {
        let response = self.response(operation_id, answer.status);
        let (media, schema) = response["content"]
            .as_object()
            .and_then(|c| c.iter().next())
            .map(|(media, content)| (media.clone(), content["schema"].clone()))
            .unwrap_or_else(|| panic!("{operation_id} {} has no content", answer.status));
        assert!(
            media == "*/*" || answer.content_type.starts_with(&media),
            "{operation_id}: {} is not {media}",
            answer.content_type
        );
        if !media.ends_with("json") {
            return;
        }
        let mut root = schema;
        close(&mut root);
        root["components"] = self.components.clone();
        let validator = jsonschema::validator_for(&root).expect("the schema compiles");
        let errors: Vec<String> = validator
            .iter_errors(&answer.json)
            .map(|e| format!("at {}: {e}", e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{operation_id} {} does not fit the document: {errors:?}\n{}",
            answer.status,
            answer.text
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_threads_answers_fit_the_document() {
    let server = TestServer::start().await;
    let documented = Documented::of(&server).await;
    let token = server.admin();
    let t = Some(token.as_str());

    documented.check("getHealth", &server.get("/health", None).await);
    documented.check("getReady", &server.get("/ready", None).await);
    documented.check("listAgents", &server.get("/v1/agents", t).await);
    documented.check("getMetrics", &server.get("/metrics", t).await);
    documented.check(
        "getOpenApiDocument",
        &server.get("/v1/openapi.json", None).await,
    );
    let created = server
        .post(
            "/v1/threads",
            t,
            &json!({"agent": "cashier", "message": "Charge 20 EUR"}),
        )
        .await;
    documented.check("createThread", &created);
    let id = created.json["thread"]["id"].as_str().unwrap().to_owned();
    let mut stream = server.events(&id, &token, None).await;
    stream.until("run_ended", PATIENCE).await;

    let thread = server.get(&format!("/v1/threads/{id}"), t).await;
    documented.check("getThread", &thread);
    let request = thread.json["waiting"]["variables"][0]["request_id"]
        .as_str()
        .expect("a variable request")
        .to_owned();
    let variables = format!("/v1/threads/{id}/variables/{request}");
    documented.check("getVariableRequest", &server.get(&variables, t).await);
    let given = server
        .post(
            &variables,
            t,
            &json!({"secrets": {"PAYMENT_API_KEY": "sk_test_1"}}),
        )
        .await;
    documented.check("giveVariables", &given);
    stream.until("run_ended", PATIENCE).await;

    let waiting = server.get(&format!("/v1/threads/{id}"), t).await;
    documented.check("getThread", &waiting);
    assert_eq!(
        waiting.json["waiting"]["approvals"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let approvals = server.get(&format!("/v1/threads/{id}/approvals"), t).await;
    documented.check("listApprovals", &approvals);
    let call = approvals.json["approvals"][0]["request"]["call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let decided = server
        .post(
            &format!("/v1/threads/{id}/approvals/{call}"),
            t,
            &json!({"decision": "approve"}),
        )
        .await;
    documented.check("decideApproval", &decided);
    stream.until("run_ended", PATIENCE).await;

    let messages = server.get(&format!("/v1/threads/{id}/messages"), t).await;
    documented.check("listMessages", &messages);
    assert!(messages.json["messages"].as_array().unwrap().len() > 2);
    documented.check("listThreads", &server.get("/v1/threads?limit=1", t).await);
    documented.check(
        "listFiles",
        &server.get(&format!("/v1/threads/{id}/files"), t).await,
    );
    let stop = server
        .post(&format!("/v1/threads/{id}/stop"), t, &json!({}))
        .await;
    documented.check("stopThread", &stop);
    let run = server
        .post(&format!("/v1/threads/{id}/run"), t, &json!({}))
        .await;
    documented.check("runThread", &run);
    // Problems fit the one Problem schema.
    documented.check("getThread", &server.get("/v1/threads/nope", t).await);
    documented.check(
        "createThread",
        &server.post("/v1/threads", t, &json!({"agent": 1})).await,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tools_answers_fit_the_document() {
    let server = TestServer::start().await;
    let documented = Documented::of(&server).await;
    let token = server.admin();
    let t = Some(token.as_str());

    documented.check("listTools", &server.get("/v1/tools", t).await);
    let validate = "/v1/tools/get_weather/validate";
    let valid = server
        .post(
            validate,
            t,
            &json!({"argument_text": "{'location': 'Oslo',}"}),
        )
        .await;
    assert_eq!(valid.json["valid"], true, "{}", valid.text);
    documented.check("validateArguments", &valid);
    let invalid = server
        .post(validate, t, &json!({"arguments": {"location": 42}}))
        .await;
    assert_eq!(invalid.json["valid"], false, "{}", invalid.text);
    documented.check("validateArguments", &invalid);
    let done = server
        .post(
            "/v1/tools/get_weather/call",
            t,
            &json!({"arguments": {"location": "Oslo"}}),
        )
        .await;
    assert_eq!(done.status, 200, "{}", done.text);
    documented.check("callTool", &done);
    let waiting = server
        .post(
            "/v1/tools/process_payment/call",
            t,
            &json!({"arguments": {"amount": 20, "currency": "EUR"}, "secrets": {"PAYMENT_API_KEY": "sk_test_1"}}),
        )
        .await;
    assert_eq!(waiting.status, 202, "{}", waiting.text);
    documented.check("callTool", &waiting);
    documented.check(
        "callTool",
        &server.post("/v1/tools/nope/call", t, &json!({})).await,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_threads_files_fit_the_document() {
    let server = TestServer::start_on(&project()).await;
    let documented = Documented::of(&server).await;
    let token = server.admin();
    let id = finished_thread(&server, &token, "maker").await;
    let listed = server
        .get(
            &format!("/v1/threads/{id}/files?recursive=true"),
            Some(&token),
        )
        .await;
    documented.check("listFiles", &listed);
    let report = attachment(&server, &token, &id, "report.txt").await;
    let path = format!("/v1/threads/{id}/files{report}");
    documented.check("downloadFile", &server.get(&path, Some(&token)).await);
    for (range, status) in [("bytes=0-3", 206), ("bytes=100000-", 416)] {
        let answer = fetch(&server, &path, Some(&token), &[("range", range)]).await;
        assert_eq!(answer.status, status, "{range}");
        let headers = documented.response("downloadFile", status)["headers"]
            .as_object()
            .expect("documented headers");
        for name in headers.keys() {
            assert!(
                answer.headers.contains_key(name.as_str()),
                "{range}: {name}"
            );
        }
    }
}

/// A thread in spec 004's mode (the quickstart's `reporter`): its state document, read from
/// its stored messages, is served as the document says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_threads_state_document_fits_the_document() {
    let server = TestServer::start().await;
    let documented = Documented::of(&server).await;
    let token = server.admin();
    let t = Some(token.as_str());
    let created = server
        .post(
            "/v1/threads",
            t,
            &json!({"agent": "reporter", "message": "Is it nice in Oslo?"}),
        )
        .await;
    documented.check("createThread", &created);
    let id = created.json["thread"]["id"].as_str().unwrap().to_owned();
    let mut stream = server.events(&id, &token, None).await;
    stream.until("run_ended", PATIENCE).await;
    let state = server.get(&format!("/v1/threads/{id}/state"), t).await;
    documented.check("getThreadState", &state);
    assert_eq!(
        state.json["state"]["mood"]["sentiment"], "positive",
        "{}",
        state.text
    );
    assert_eq!(
        state.json["state"]["weather"]["oslo"]["sky"], "cloudy",
        "{}",
        state.text
    );
    // A thread that remembered nothing has none.
    let plain = server
        .post(
            "/v1/threads",
            t,
            &json!({"agent": "cashier", "message": "hi"}),
        )
        .await;
    let plain_id = plain.json["thread"]["id"].as_str().unwrap().to_owned();
    let none = server
        .get(&format!("/v1/threads/{plain_id}/state"), t)
        .await;
    documented.check("getThreadState", &none);
    assert_eq!(none.json, json!({"state": null}));
}
