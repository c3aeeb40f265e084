//! `/mcp` on the server: an agent's tools over MCP's streamable HTTP, behind the API's tokens.
//! The official MCP SDK's Python client lists and calls them with a token that may run the
//! agent; no token, a token without the `run` scope or for another agent, and a foreign
//! `Host` are refused before any MCP is spoken.

mod common;

use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use toolhost_server::auth::Scope;

fn example() -> PathBuf {
    Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../examples/js-tools")
}

async fn server() -> TestServer {
    TestServer::start_with(&example(), |config| {
        config.mcp_agent = Some("assistant".to_owned());
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_python_client_lists_and_calls_over_http() {
    let server = server().await;
    let token = server.token(&[Scope::Run], Some(vec!["assistant"]));
    let url = format!("http://{}/mcp", server.addr);
    let seen = python_client("http_client.py", &[&url, &token]).await;
    assert_eq!(
        seen["tools"],
        json!([
            "create_ticket",
            "execute_step",
            "get_weather",
            "search_files",
            "start_workflow"
        ])
    );
    assert_eq!(seen["good"]["isError"], false, "{seen}");
    let weather: Value = serde_json::from_str(seen["good"]["text"][0].as_str().unwrap()).unwrap();
    assert_eq!(weather["location"], "Tromsø");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_needs_a_token_that_may_run_the_agent_and_a_local_host() {
    let server = server().await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}})
    .to_string()
    .into_bytes();
    let headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    let none = server
        .raw("POST", "/mcp", None, &headers, list.clone())
        .await;
    assert_eq!(none.status, 401, "{}", none.text);
    let read_only = server.token(&[Scope::Read], None);
    let answer = server
        .raw("POST", "/mcp", Some(&read_only), &headers, list.clone())
        .await;
    assert_eq!(answer.status, 403, "{}", answer.text);
    let other_agent = server.token(&[Scope::Run], Some(vec!["someone_else"]));
    let answer = server
        .raw("POST", "/mcp", Some(&other_agent), &headers, list.clone())
        .await;
    assert_eq!(answer.status, 403, "{}", answer.text);
    // DNS rebinding: a page of another site reaching this server by a name of its own.
    let token = server.token(&[Scope::Run], None);
    let foreign = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("host", "rebinding.example"),
    ];
    let answer = server
        .raw("POST", "/mcp", Some(&token), &foreign, list.clone())
        .await;
    assert_eq!(answer.status, 403, "{}", answer.text);
    // The same request from here is spoken to.
    let answer = server
        .raw("POST", "/mcp", Some(&token), &headers, list)
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert!(answer.text.contains("2025-11-25"), "{}", answer.text);
}

/// A call that needs a secret sends a client that can open a URL to the thread's page; the
/// secret given there (never through the client) lets the call go on, and its result carries
/// it only redacted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_is_given_on_the_threads_page_the_client_sends_its_user_to() {
    let (server, token, url) = keeper_server().await;
    let secret = "4417-0xdoor";
    let seen = python_client(
        "http_client_secret.py",
        &[&url, &token, "unlock", "DOOR_CODE", secret],
    )
    .await;
    let asked = seen["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{seen}");
    assert_eq!(asked[0]["mode"], "url");
    let page = asked[0]["url"].as_str().unwrap();
    assert!(
        page.starts_with(&format!("http://{}/#/t/", server.addr)),
        "{page}"
    );
    assert!(asked[0]["message"].as_str().unwrap().contains("DOOR_CODE"));
    assert_eq!(asked[0]["given"], 200, "{seen}");
    assert_eq!(seen["isError"], false, "{seen}");
    let text = seen["text"][0].as_str().unwrap();
    assert!(text.starts_with("unlock with "), "{text}");
    assert!(
        !text.contains(secret),
        "the secret reached the client: {text}"
    );
}

/// A server of [`keeper_project`] with `/mcp` serving `keeper`, a token that may run it, and the
/// URL of `/mcp`.
async fn keeper_server() -> (TestServer, String, String) {
    let project = keeper_project();
    let server = TestServer::start_with(&project, |config| {
        config.mcp_agent = Some("keeper".to_owned());
    })
    .await;
    let token = server.token(&[Scope::Run], Some(vec!["keeper"]));
    let url = format!("http://{}/mcp", server.addr);
    (server, token, url)
}

/// A project whose agent `keeper` offers `unlock` (needs the secret DOOR_CODE), `locate` (the
/// text variable REGION) and `pay` (needs approval); each says what it got.
fn keeper_project() -> PathBuf {
    let project = temp_dir();
    let files = [
        (
            "agents/tools/unlock.json",
            r#"{"type": "object", "description": "Unlocks the door.",
                "properties": {"_activity": {"const": "unlock"}},
                "variables": [{"name": "DOOR_CODE", "type": "secret", "required": true, "description": "The door code"}]}"#,
        ),
        (
            "agents/activities/unlock.json",
            r#"{"command": ["python3", "unlock.py"], "env": ["PATH"], "timeoutMs": 10000}"#,
        ),
        (
            "unlock.py",
            "import json, sys\ncall = json.load(sys.stdin)\nprint(json.dumps({'status': 'success', 'result': call['tool'] + ' with ' + ','.join(call['variables'].values())}))\n",
        ),
        (
            "agents/agents/keeper.json",
            r#"{"type": "ai_human", "sideA": {"prompt": "keeper"}}"#,
        ),
        (
            "agents/tools/locate.json",
            r#"{"type": "object", "description": "Says where it is.",
                "properties": {"_activity": {"const": "unlock"}},
                "variables": [{"name": "REGION", "type": "text", "required": true, "description": "Which region"}]}"#,
        ),
        (
            "agents/tools/pay.json",
            r#"{"type": "object", "description": "Pays the keeper.",
                "properties": {"_activity": {"const": "pay"}}}"#,
        ),
        (
            "agents/activities/pay.json",
            r#"{"command": ["python3", "unlock.py"], "env": ["PATH"], "timeoutMs": 10000, "approval": {"reason": "Moves money."}}"#,
        ),
        (
            "agents/prompts/keeper.json",
            r#"{"toolDescription": "x", "prompt": "Keep the door.", "model": "m", "tools": ["unlock", "locate", "pay"]}"#,
        ),
        (
            "agents/models/m.json",
            r#"{"provider": "test", "script": "m.jsonl"}"#,
        ),
        ("m.jsonl", "{\"text\": \"unused\"}\n"),
    ];
    for (file, text) in files {
        let path = project.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    project
}

/// Under 2026-07-28 (the official Python client's choice) a call asks within itself: an
/// approval and a text variable come back as forms in `input_required` results, a secret as the
/// thread's page, and each retry goes on with the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_2026_07_28_a_call_asks_with_input_required_and_goes_on_with_the_retry() {
    let (_server, token, url) = keeper_server().await;
    let secret = "7731-0xgate";
    let seen = python_client("http_client_rounds.py", &[&url, &token, secret]).await;
    assert_eq!(seen["protocol"], "2026-07-28", "{seen}");
    let asked = seen["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 3, "{seen}");
    assert_eq!(asked[0]["fields"], json!(["approve", "message"]), "{seen}");
    assert!(asked[0]["message"]
        .as_str()
        .unwrap()
        .contains("Moves money."));
    assert_eq!(asked[1]["fields"], json!(["REGION"]), "{seen}");
    assert_eq!(asked[2]["mode"], "url", "{seen}");
    let results = &seen["results"];
    for tool in ["pay", "locate", "unlock"] {
        assert_eq!(results[tool]["isError"], false, "{seen}");
    }
    assert_eq!(results["locate"]["text"][0], "locate with north");
    let unlocked = results["unlock"]["text"][0].as_str().unwrap();
    assert!(unlocked.starts_with("unlock with "), "{unlocked}");
    assert!(!unlocked.contains(secret), "{unlocked}");
}

/// The files a served call attached reach an MCP client: an image inline as image content, a
/// PDF as a resource link the client reads with `resources/read` in the same session (and
/// finds in `resources/list`); a file URI of another agent's thread is not found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_a_call_attached_come_as_image_content_and_resource_links() {
    let project = temp_dir();
    let pdf = "%PDF-1.4 a report";
    let files = [
        (
            "agents/agents/filer.json".to_owned(),
            r#"{"type": "ai_human", "sideA": {"prompt": "filer"}}"#.to_owned(),
        ),
        (
            "agents/prompts/filer.json".to_owned(),
            r#"{"toolDescription": "x", "prompt": "File.", "model": "m", "tools": ["file_report"]}"#
                .to_owned(),
        ),
        (
            "agents/models/m.json".to_owned(),
            r#"{"provider": "test", "script": "m.jsonl"}"#.to_owned(),
        ),
        ("m.jsonl".to_owned(), "{\"text\": \"unused\"}\n".to_owned()),
        (
            "agents/tools/file_report.js".to_owned(),
            format!(
                "import {{ defineTool }} from '@standardagents/spec';\n\
                 export default defineTool({{\n\
                   description: 'Files the report.',\n\
                   execute: async () => ({{ status: 'success', result: 'filed', attachments: [\n\
                     {{ name: 'q3 report.pdf', mimeType: 'application/pdf', data: '{}' }},\n\
                     {{ name: 'dot.png', mimeType: 'image/png', data: '{PIXEL}' }},\n\
                   ] }}),\n\
                 }});\n",
                base64_of(pdf.as_bytes())
            ),
        ),
    ];
    for (path, text) in files {
        let path = project.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let server = TestServer::start_with(&project, |config| {
        config.mcp_agent = Some("filer".to_owned());
    })
    .await;
    let token = server.token(&[Scope::Run, Scope::Read], Some(vec!["filer"]));
    let other = server
        .store
        .create_thread(toolhost_store::NewThread {
            agent: "somebody-else".into(),
            ..toolhost_store::NewThread::default()
        })
        .unwrap()
        .id;
    let other_uri = format!("toolhost://threads/{other}/files/attachments/x.txt");
    let url = format!("http://{}/mcp", server.addr);
    let seen = python_client(
        "http_client_call.py",
        &[&url, &token, "file_report", &other_uri],
    )
    .await;
    let content = seen["result"]["content"].as_array().unwrap();
    assert_eq!(
        content[0],
        json!({"type": "text", "text": "filed"}),
        "{seen}"
    );
    let link = &content[1];
    assert_eq!(link["type"], "resource_link", "{seen}");
    assert_eq!(link["name"], "q3 report.pdf");
    assert_eq!(link["mimeType"], "application/pdf");
    assert_eq!(link["size"], pdf.len());
    assert_eq!(content[2]["type"], "image", "{seen}");
    assert_eq!(content[2]["data"], PIXEL);
    assert_eq!(content[2]["mimeType"], "image/png");
    let uri = link["uri"].as_str().unwrap();
    assert!(
        uri.starts_with("toolhost://threads/") && uri.ends_with("/q3%20report.pdf"),
        "{uri}"
    );
    let read = &seen["read"][uri]["contents"][0];
    assert_eq!(read["mimeType"], "application/pdf", "{seen}");
    assert_eq!(read["blob"], base64_of(pdf.as_bytes()), "{seen}");
    let listed: Vec<&str> = seen["listed"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert!(listed.contains(&uri), "{listed:?}");
    let refused = seen["other"].as_str().unwrap_or_default();
    assert!(refused.contains("no file"), "{seen}");
    let _ = std::fs::remove_dir_all(project);
}

/// A 1×1 PNG, as base64.
const PIXEL: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A tool whose argument is marked `x-mcp-header` (SEP-2243): a call must carry the argument in
/// its `Mcp-Param-*` header too, the same value (plain, or base64 in `=?base64?…?=`); a call
/// whose header is missing or says otherwise is refused before the tool runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_marked_argument_must_match_its_header() {
    let project = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap())
        .join("../../examples/mcp-conformance");
    let server = TestServer::start_with(&project, |config| {
        config.mcp_agent = Some("fixtures".to_owned());
    })
    .await;
    let token = server.token(&[Scope::Run], Some(vec!["fixtures"]));
    let call = |header: Option<&'static str>| {
        let server = &server;
        let token = token.clone();
        async move {
            let headers: Vec<(&str, &str)> = header
                .map(|h| vec![("mcp-param-region", h)])
                .unwrap_or_default();
            mcp_request(
                server,
                &token,
                &headers,
                "tools/call",
                "test_header_region",
                json!({"name": "test_header_region", "arguments": {"region": "north"}}),
            )
            .await
        }
    };
    let listed = mcp_request(&server, &token, &[], "tools/list", "", json!({})).await;
    let tool = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "test_header_region")
        .cloned()
        .unwrap();
    assert_eq!(
        tool["inputSchema"]["properties"]["region"]["x-mcp-header"],
        "Region"
    );
    let plain = call(Some("north")).await;
    assert!(
        plain["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("north")),
        "{plain}"
    );
    // "north" in base64.
    let encoded = call(Some("=?base64?bm9ydGg=?=")).await;
    assert!(encoded.get("result").is_some(), "{encoded}");
    for refused in [call(None).await, call(Some("south")).await] {
        assert!(refused.get("error").is_some(), "{refused}");
    }
    let journal = server.store.threads(None).unwrap();
    let runs: usize = journal
        .iter()
        .map(|t| server.store.calls(&t.id).unwrap().len())
        .sum();
    assert_eq!(runs, 2, "the refused calls never ran");
}
