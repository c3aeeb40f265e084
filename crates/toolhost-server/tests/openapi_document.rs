//! The OpenAPI document at `/v1/openapi.json`: served without a token as OpenAPI 3.1, one
//! operation per route the server answers (and no other), each with its id, summary, scope and
//! problem answers, bodies described by the types the handlers parse.

mod common;

use common::TestServer;
use serde_json::Value;
use std::collections::BTreeSet;

const METHODS: [&str; 5] = ["get", "put", "post", "delete", "patch"];

/// The operations that need no token.
const PUBLIC: [(&str, &str); 3] = [
    ("get", "/health"),
    ("get", "/ready"),
    ("get", "/v1/openapi.json"),
];

async fn document(server: &TestServer) -> Value {
    let answer = server.get("/v1/openapi.json", None).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.content_type, "application/json");
    answer.json
}

/// Every operation of the document: (method, path template, operation).
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut all = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in METHODS {
            if let Some(op) = item.get(method) {
                all.push((method.to_owned(), path.clone(), op.clone()));
            }
        }
    }
    all
}

/// Every `$ref` under `value`.
fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push(r.clone()),
                    _ => refs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

#[tokio::test]
async fn the_document_is_openapi_3_1_served_without_a_token() {
    let server = TestServer::start().await;
    let doc = document(&server).await;
    let version = doc["openapi"].as_str().unwrap();
    assert!(version.starts_with("3.1."), "{version}");
    assert_eq!(doc["info"]["title"], "toolhost");
    assert_eq!(doc["info"]["version"], env!("CARGO_PKG_VERSION"));
    let bearer = &doc["components"]["securitySchemes"]["bearer"];
    assert_eq!(bearer["type"], "http");
    assert_eq!(bearer["scheme"], "bearer");
    // Every reference points at a schema the document holds.
    let mut found = Vec::new();
    refs(&doc, &mut found);
    assert!(!found.is_empty());
    for r in found {
        let name = r
            .strip_prefix("#/components/schemas/")
            .unwrap_or_else(|| panic!("{r} is not a schema reference"));
        assert!(
            doc["components"]["schemas"].get(name).is_some(),
            "{r} points at no schema"
        );
    }
}

#[tokio::test]
async fn every_operation_has_an_id_a_summary_and_the_scope_it_needs() {
    let server = TestServer::start().await;
    let doc = document(&server).await;
    let mut ids = BTreeSet::new();
    for (method, path, op) in operations(&doc) {
        let id = op["operationId"].as_str().unwrap_or_default();
        assert!(!id.is_empty(), "{method} {path} has no operationId");
        assert!(ids.insert(id.to_owned()), "operationId {id} is used twice");
        let summary = op["summary"].as_str().unwrap_or_default();
        assert!(!summary.is_empty(), "{method} {path} has no summary");
        assert_eq!(
            op["tags"].as_array().map(Vec::len),
            Some(1),
            "{method} {path}"
        );
        if PUBLIC.contains(&(method.as_str(), path.as_str())) {
            assert!(op.get("security").is_none(), "{method} {path} is public");
            continue;
        }
        let security = op["security"].as_array().expect("security");
        assert_eq!(security.len(), 1, "{method} {path}");
        let scopes = security[0]["bearer"].as_array().expect("bearer scopes");
        assert_eq!(scopes.len(), 1, "{method} {path}");
        let scope = scopes[0].as_str().unwrap();
        assert!(
            ["read", "run", "approve", "admin"].contains(&scope),
            "{method} {path}: {scope}"
        );
        // What the handlers require, spot-checked per kind.
        let expected = match (method.as_str(), path.as_str()) {
            ("post", "/v1/threads/{id}/approvals/{call_id}") => "approve",
            ("post", "/v1/threads/{id}/mcp-definitions/{tool}") => "approve",
            ("post", "/v1/mcp-definitions/{tool}") => "approve",
            ("post", "/v1/tools/{name}/validate") => "read",
            ("post", "/v1/mcp/servers/{name}/login") => "admin",
            ("get", _) => "read",
            _ => "run",
        };
        assert_eq!(scope, expected, "{method} {path}");
    }
}

#[tokio::test]
async fn every_error_answer_is_one_problem_schema() {
    let server = TestServer::start().await;
    let doc = document(&server).await;
    let problem = &doc["components"]["schemas"]["Problem"];
    for field in ["type", "title", "status", "detail"] {
        assert!(problem["properties"].get(field).is_some(), "{field}");
        assert!(problem["required"]
            .as_array()
            .unwrap()
            .contains(&Value::from(field)));
    }
    assert!(problem["properties"].get("pointer").is_some());
    for (method, path, op) in operations(&doc) {
        let responses = op["responses"].as_object().unwrap();
        let public = PUBLIC.contains(&(method.as_str(), path.as_str()));
        let mut wanted = vec!["503"];
        if !public {
            wanted.extend(["401", "403", "500"]);
        }
        if op.get("requestBody").is_some() {
            wanted.extend(["400", "413", "415", "422"]);
        }
        for status in wanted {
            assert!(
                responses.contains_key(status),
                "{method} {path} lacks {status}"
            );
        }
        for (status, response) in responses {
            assert!(
                !response["description"].as_str().unwrap_or("").is_empty(),
                "{method} {path} {status}"
            );
            if status.as_str() >= "400" {
                let content = response["content"].as_object().unwrap();
                assert_eq!(content.len(), 1, "{method} {path} {status}");
                assert_eq!(
                    content["application/problem+json"]["schema"]["$ref"],
                    "#/components/schemas/Problem",
                    "{method} {path} {status}"
                );
            }
        }
    }
}

/// The request body schema of `operation_id`.
fn body_schema<'a>(doc: &'a Value, operation_id: &str) -> &'a Value {
    operations_ref(doc)
        .into_iter()
        .find(|op| op["operationId"] == operation_id)
        .map(|op| &op["requestBody"]["content"]["application/json"]["schema"])
        .unwrap_or_else(|| panic!("no operation {operation_id}"))
}

fn operations_ref(doc: &Value) -> Vec<&Value> {
    doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| METHODS.iter().filter_map(|m| item.get(*m)))
        .collect()
}

fn names(value: &Value) -> BTreeSet<String> {
    match value {
        Value::Object(map) => map.keys().cloned().collect(),
        Value::Array(items) => items
            .iter()
            .filter_map(|v| v.as_str().map(String::from))
            .collect(),
        _ => BTreeSet::new(),
    }
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test]
async fn request_bodies_are_the_handlers_types_and_refuse_unknown_fields() {
    let server = TestServer::start().await;
    let doc = document(&server).await;
    let bodies: BTreeSet<String> = operations_ref(&doc)
        .into_iter()
        .filter(|op| op.get("requestBody").is_some())
        .map(|op| op["operationId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        bodies,
        set(&[
            "createThread",
            "sendMessage",
            "decideApproval",
            "giveVariables",
            "validateArguments",
            "callTool"
        ])
    );
    for id in &bodies {
        let schema = body_schema(&doc, id);
        assert_eq!(schema["type"], "object", "{id}");
        assert_eq!(schema["additionalProperties"], false, "{id}");
    }
    let create = body_schema(&doc, "createThread");
    assert_eq!(
        names(&create["properties"]),
        set(&["agent", "message", "variables", "secrets"])
    );
    assert_eq!(names(&create["required"]), set(&["agent", "message"]));
    assert_eq!(
        create["properties"]["secrets"]["additionalProperties"]["type"],
        "string"
    );
    let decide = body_schema(&doc, "decideApproval");
    assert_eq!(
        names(&decide["properties"]),
        set(&["decision", "message", "reason", "arguments", "always"])
    );
    assert_eq!(names(&decide["required"]), set(&["decision"]));
    assert_eq!(
        names(&decide["properties"]["decision"]["enum"]),
        set(&["approve", "deny"])
    );
    let call = body_schema(&doc, "callTool");
    assert_eq!(
        names(&call["properties"]),
        set(&[
            "arguments",
            "argument_text",
            "agent",
            "variables",
            "secrets"
        ])
    );
}

#[tokio::test]
async fn parameters_streams_and_downloads_are_described() {
    let server = TestServer::start().await;
    let doc = document(&server).await;
    let params = |path: &str, method: &str| -> BTreeSet<String> {
        doc["paths"][path][method]["parameters"]
            .as_array()
            .unwrap_or(&Vec::new())
            .iter()
            .map(|p| {
                format!(
                    "{}:{}",
                    p["in"].as_str().unwrap(),
                    p["name"].as_str().unwrap()
                )
            })
            .collect()
    };
    assert_eq!(
        params("/v1/threads", "get"),
        set(&[
            "query:agent",
            "query:status",
            "query:parent",
            "query:limit",
            "query:cursor"
        ])
    );
    assert_eq!(
        params("/v1/threads/{id}/messages", "get"),
        set(&["path:id", "query:after", "query:limit"])
    );
    assert_eq!(
        params("/v1/threads/{id}/files", "get"),
        set(&["path:id", "query:path", "query:recursive"])
    );
    assert_eq!(
        params("/v1/threads/{id}/approvals/{call_id}", "post"),
        set(&["path:id", "path:call_id"])
    );
    assert_eq!(
        params("/v1/threads/{id}/files/{path}", "get"),
        set(&["path:id", "path:path", "header:Range"])
    );
    assert_eq!(
        params("/v1/threads/{id}/events", "get"),
        set(&["path:id", "header:Last-Event-ID"])
    );
    // Every path parameter is required, as OpenAPI wants.
    for op in operations_ref(&doc) {
        for p in op["parameters"].as_array().unwrap_or(&Vec::new()) {
            if p["in"] == "path" {
                assert_eq!(p["required"], true, "{}", op["operationId"]);
            }
        }
    }
    for path in ["/v1/events", "/v1/threads/{id}/events"] {
        let ok = &doc["paths"][path]["get"]["responses"]["200"]["content"];
        assert_eq!(names(ok), set(&["text/event-stream"]), "{path}");
    }
    let download = &doc["paths"]["/v1/threads/{id}/files/{path}"]["get"]["responses"];
    for status in ["200", "206", "416"] {
        assert!(download.get(status).is_some(), "{status}");
    }
    assert!(download["206"]["headers"].get("Content-Range").is_some());
    assert!(download["416"]["headers"].get("Content-Range").is_some());
    let created = &doc["paths"]["/v1/threads"]["post"]["responses"]["201"];
    assert_eq!(
        created["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/ThreadCreated"
    );
}
