//! The document and the routes do not drift apart: every documented operation is answered by its
//! handler on the real server (not by the "there is no endpoint" fallback, nor as a method the
//! path does not take), and the routes the API is known to have are exactly the documented ones.

mod common;

use common::TestServer;
use std::collections::BTreeSet;
use toolhost_server::auth::Scope;

/// Every route of the API, as the README's table lists them.
const KNOWN: [(&str, &str); 29] = [
    ("GET", "/health"),
    ("GET", "/ready"),
    ("GET", "/v1/openapi.json"),
    ("GET", "/v1/agents"),
    ("GET", "/v1/threads"),
    ("POST", "/v1/threads"),
    ("GET", "/v1/threads/{id}"),
    ("DELETE", "/v1/threads/{id}"),
    ("POST", "/v1/threads/{id}/stop"),
    ("POST", "/v1/threads/{id}/run"),
    ("GET", "/v1/threads/{id}/files"),
    ("GET", "/v1/threads/{id}/files/{path}"),
    ("GET", "/v1/threads/{id}/messages"),
    ("POST", "/v1/threads/{id}/messages"),
    ("GET", "/v1/threads/{id}/state"),
    ("GET", "/v1/threads/{id}/approvals"),
    ("POST", "/v1/threads/{id}/approvals/{call_id}"),
    ("POST", "/v1/threads/{id}/mcp-definitions/{tool}"),
    ("POST", "/v1/mcp-definitions/{tool}"),
    ("POST", "/v1/mcp/servers/{name}/login"),
    ("GET", "/v1/mcp/servers"),
    ("GET", "/v1/threads/{id}/variables/{request_id}"),
    ("POST", "/v1/threads/{id}/variables/{request_id}"),
    ("GET", "/v1/threads/{id}/events"),
    ("GET", "/v1/events"),
    ("GET", "/v1/tools"),
    ("POST", "/v1/tools/{name}/validate"),
    ("POST", "/v1/tools/{name}/call"),
    ("GET", "/metrics"),
];

/// The (method, path template) of every documented operation.
async fn documented(server: &TestServer) -> BTreeSet<(String, String)> {
    let doc = server.get("/v1/openapi.json", None).await.json;
    let mut all = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().unwrap().keys() {
            if ["get", "put", "post", "delete", "patch"].contains(&method.as_str()) {
                all.insert((method.to_uppercase(), path.clone()));
            }
        }
    }
    all
}

/// A concrete path for a template: ids no thread has, a file path with a slash in it.
fn concrete(template: &str) -> String {
    template
        .replace("{id}", "no-such-thread")
        .replace("{path}", "folder/file.txt")
        .replace("{call_id}", "no-such-call")
        .replace("{request_id}", "no-such-request")
        .replace("{name}", "no-such-tool")
}

/// Whether `server` answered `method path` with the fallback or as a method it does not take.
async fn unrouted(server: &TestServer, token: &str, method: &str, path: &str) -> Option<String> {
    // A Last-Event-ID no server sends: an event stream refuses it at once instead of streaming.
    let headers = [
        ("content-type", "application/json"),
        ("last-event-id", "not-an-id"),
    ];
    let body = if method == "POST" {
        b"{}".to_vec()
    } else {
        Vec::new()
    };
    let answer = server.raw(method, path, Some(token), &headers, body).await;
    let detail = answer.json["detail"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let fallback = answer.status == 404 && detail.starts_with("there is no endpoint");
    (fallback || answer.status == 405).then(|| format!("{} {detail}", answer.status))
}

#[tokio::test]
async fn the_documented_operations_are_the_known_routes() {
    let server = TestServer::start().await;
    let known: BTreeSet<(String, String)> = KNOWN
        .iter()
        .map(|(m, p)| ((*m).to_owned(), (*p).to_owned()))
        .collect();
    assert_eq!(documented(&server).await, known);
}

#[tokio::test]
async fn every_documented_operation_is_answered_by_its_handler() {
    let server = TestServer::start().await;
    let token = server.admin();
    let operations = documented(&server).await;
    assert!(!operations.is_empty());
    for (method, template) in &operations {
        let path = concrete(template);
        if let Some(answer) = unrouted(&server, &token, method, &path).await {
            panic!("{method} {template} (as {path}) is documented but not served: {answer}");
        }
    }
}

#[tokio::test]
async fn the_probe_tells_a_route_from_no_route() {
    let server = TestServer::start().await;
    let token = server.admin();
    for (method, path) in [
        ("GET", "/v1/nothing-here"),
        ("POST", "/health"),
        ("PUT", "/v1/threads"),
        ("GET", "/v1/threads/no-such-thread/files-and-more"),
    ] {
        assert!(
            unrouted(&server, &token, method, path).await.is_some(),
            "{method} {path} should not be served"
        );
    }
}

/// A body each documented request body accepts, so that what is checked is the token.
fn fitting_body(operation_id: &str) -> Vec<u8> {
    let body = match operation_id {
        "createThread" => r#"{"agent": "assistant", "message": "Weather in Oslo?"}"#,
        "sendMessage" => r#"{"message": "and in Bergen?"}"#,
        "decideApproval" => r#"{"decision": "approve"}"#,
        "validateArguments" | "callTool" => r#"{"arguments": {}}"#,
        _ => "{}",
    };
    body.as_bytes().to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_documented_security_is_what_the_server_asks_for() {
    let server = TestServer::start().await;
    let doc = server.get("/v1/openapi.json", None).await.json;
    let tokens: Vec<(&str, String)> = [Scope::Read, Scope::Run, Scope::Approve]
        .into_iter()
        .map(|s| (s.as_str(), server.token(&[s], None)))
        .collect();
    for (method, template) in documented(&server).await {
        let op = &doc["paths"][&template][method.to_lowercase()];
        let id = op["operationId"].as_str().unwrap();
        let path = concrete(&template);
        let headers = [
            ("content-type", "application/json"),
            ("last-event-id", "not-an-id"),
        ];
        let body = || {
            if method == "POST" {
                fitting_body(id)
            } else {
                Vec::new()
            }
        };
        let anonymous = server.raw(&method, &path, None, &headers, body()).await;
        let Some(security) = op.get("security") else {
            assert_ne!(anonymous.status, 401, "{id} is documented as public");
            continue;
        };
        assert_eq!(anonymous.status, 401, "{id}: {}", anonymous.text);
        let needed = security[0]["bearer"][0].as_str().unwrap();
        for (scope, token) in &tokens {
            let answer = server
                .raw(&method, &path, Some(token), &headers, body())
                .await;
            let refused = answer.status == 403;
            assert_eq!(
                refused,
                *scope != needed,
                "{id} with a {scope} token (documented: {needed}): {} {}",
                answer.status,
                answer.text
            );
        }
    }
}
