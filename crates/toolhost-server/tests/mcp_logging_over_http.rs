//! A served call's console reaches its MCP client as log messages while it runs: under
//! 2025-11-25 from the session's `logging/setLevel` (info until set), under 2026-07-28 only for
//! a request that opts in through its `_meta`. Checked with the official Python SDK's client.

mod common;

use common::*;
use serde_json::json;
use std::path::PathBuf;
use toolhost_server::auth::Scope;

/// A project whose agent `talker` offers `chatty`, a tool file that writes one line at each
/// console level.
fn talker_project() -> PathBuf {
    write_project(&[
        (
            "agents/tools/chatty.js",
            "import { defineTool } from '@standardagents/spec';\n\
             export default defineTool({ description: 'Talks while it works.', execute: async () => {\n\
               console.debug('looking around');\n\
               console.log('found', { items: 2 });\n\
               console.warn('one is odd');\n\
               console.error('one is broken');\n\
               return 'done talking';\n\
             } });\n",
        ),
        (
            "agents/agents/talker.json",
            r#"{"type": "ai_human", "sideA": {"prompt": "talker"}}"#,
        ),
        (
            "agents/prompts/talker.json",
            r#"{"toolDescription": "x", "prompt": "Talk.", "model": "m", "tools": ["chatty"]}"#,
        ),
        (
            "agents/models/m.json",
            r#"{"provider": "test", "script": "m.jsonl"}"#,
        ),
        ("m.jsonl", "{\"text\": \"unused\"}\n"),
    ])
}

/// The levels of the log messages one call sent, checking each names the tool.
async fn logged(url: &str, token: &str, mode: &str, level: &str) -> Vec<(String, String)> {
    let seen = python_client("http_client_logs.py", &[url, token, "chatty", mode, level]).await;
    assert_eq!(seen["text"], json!(["done talking"]), "{seen}");
    seen["logs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|log| {
            assert_eq!(log["logger"], "chatty", "{log}");
            (
                log["level"].as_str().unwrap().to_owned(),
                log["data"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn levels(logs: &[(String, String)]) -> Vec<&str> {
    logs.iter().map(|(level, _)| level.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calls_console_reaches_the_client_at_the_level_it_asked_for() {
    let server = TestServer::start_with(&talker_project(), |config| {
        config.mcp_agent = Some("talker".to_owned());
    })
    .await;
    let token = server.token(&[Scope::Run], None);
    let url = format!("http://{}/mcp", server.addr);

    let all = logged(&url, &token, "legacy", "debug").await;
    assert_eq!(levels(&all), ["debug", "info", "warning", "error"]);
    assert_eq!(all[0].1, "looking around");
    assert_eq!(all[1].1, "found {\"items\":2}");
    // Until the client sets a level, debug lines stay behind.
    let default = logged(&url, &token, "legacy", "none").await;
    assert_eq!(levels(&default), ["info", "warning", "error"]);
    let errors = logged(&url, &token, "legacy", "error").await;
    assert_eq!(levels(&errors), ["error"]);

    // 2026-07-28: only a request that opts in.
    let warnings = logged(&url, &token, "modern", "warning").await;
    assert_eq!(levels(&warnings), ["warning", "error"]);
    let none = logged(&url, &token, "modern", "none").await;
    assert_eq!(none, Vec::<(String, String)>::new());
}
