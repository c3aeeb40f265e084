//! A tool whose property keys Anthropic refuses (`año_vehiculo`, `filter[id]`, `$top`) runs a
//! whole thread on Anthropic against a loopback server replaying wire payloads: the request
//! declares renamed keys, the model's call (made with those keys) reaches the tool with the
//! tool's own keys, the journal and the stored reply keep the tool's own keys, and the next
//! request sends the call back under the renamed ones.

mod common;

use common::Project;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use toolhost_core::tool::DynamicTool;
use toolhost_providers::{model_from_config, ModelConfig};
use toolhost_runtime::engine::{RunOutcome, Runtime, StopReason};
use toolhost_store::{SqliteStore, Store};

fn fixture(path: &str) -> String {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("run by cargo");
    let path = PathBuf::from(dir)
        .join("../toolhost-providers/tests/fixtures")
        .join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Answers each connection with the next JSON body and keeps each request body.
async fn replay(bodies: Vec<String>) -> (u16, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        for body in bodies {
            let (mut socket, _) = listener.accept().await.unwrap();
            let request = common::read_body(&mut socket).await;
            log.lock()
                .unwrap()
                .push(serde_json::from_slice(&request).unwrap());
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            socket.write_all(head.as_bytes()).await.unwrap();
            socket.write_all(body.as_bytes()).await.unwrap();
            socket.shutdown().await.ok();
        }
    });
    (port, seen)
}

/// The call as the tool declares it.
fn original_arguments() -> Value {
    json!({
        "año_vehiculo": 2019,
        "filter[id]": "A-7",
        "$top": 5,
        "where": {"$top": 2, "precio máx": 9000},
        "labels": {"_top": "kept"}
    })
}

#[tokio::test]
async fn the_tool_and_the_journal_see_the_tool_s_own_keys() {
    let (port, seen) = replay(vec![
        fixture("anthropic/tool_use_renamed_keys.json"),
        fixture("anthropic/text_no_usage.json"),
    ])
    .await;
    let project = Project::with_files(&[
        (
            "agents/agents/a.json",
            r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#,
        ),
        (
            "agents/prompts/p.json",
            r#"{"toolDescription": "x", "prompt": "Be brief.", "model": "wire", "tools": ["find_vehicles"]}"#,
        ),
    ]);
    let mut config = ModelConfig::new("anthropic", "m");
    config.base_url = Some(format!("http://127.0.0.1:{port}"));
    config.api_key_env = Some("WIRE_TEST_KEY".to_owned());
    let model = model_from_config(&config, |_| Some("sk-wire-test".to_owned())).unwrap();

    let received = Arc::new(Mutex::new(Vec::new()));
    let log = received.clone();
    let tool = DynamicTool::new("find_vehicles", "Find vehicles.")
        .parameters(json!({
            "type": "object",
            "properties": {
                "año_vehiculo": {"type": "integer"},
                "filter[id]": {"type": "string"},
                "$top": {"type": "integer"},
                "where": {
                    "type": "object",
                    "properties": {"$top": {"type": "integer"}, "precio máx": {"type": "number"}},
                    "required": ["$top"],
                    "additionalProperties": false
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}
            },
            "required": ["año_vehiculo", "filter[id]"],
            "additionalProperties": false
        }))
        .handler(move |args: Value, _| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push(args);
                Ok("no vehicles".to_owned())
            }
        })
        .build()
        .unwrap();

    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&project.root, store.clone()).await.unwrap();
    rt.register_model("wire", model);
    rt.register_tool(tool);
    let thread = rt.start_thread("a", "Vehicles of 2019?").await.unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );

    // The request declared the renamed keys.
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 2);
    let declared = &requests[0]["tools"][0]["input_schema"];
    let keys: Vec<&str> = declared["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["ano_vehiculo", "filter_id_", "_top", "where", "labels"]
    );

    // The tool got its own keys.
    assert_eq!(*received.lock().unwrap(), vec![original_arguments()]);

    // The journal and the stored reply keep them.
    let calls = store.calls(&thread.id).unwrap();
    assert_eq!(calls.len(), 1);
    let journaled: Value = serde_json::from_str(&calls[0].arguments).unwrap();
    assert_eq!(journaled, original_arguments());
    let messages = store.messages(&thread.id).unwrap();
    let reply = messages.iter().find(|m| !m.tool_calls.is_empty()).unwrap();
    let stored: Value = serde_json::from_str(&reply.tool_calls[0].arguments).unwrap();
    assert_eq!(stored, original_arguments());

    // The next request sent the call back under the keys the model was shown.
    let earlier = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["type"] == "tool_use")
        .unwrap();
    assert_eq!(earlier["input"]["ano_vehiculo"], 2019);
    assert_eq!(
        earlier["input"]["where"],
        json!({"_top": 2, "precio_max": 9000})
    );
    assert_eq!(earlier["input"]["labels"], json!({"_top": "kept"}));
}
