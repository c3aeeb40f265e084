//! A project whose tool makes files: agent `maker` calls `make_files`, a process activity that
//! returns two attachments (a short text and a binary of [`DATA_LEN`] bytes, several store
//! chunks long), and a download client that keeps the answer's headers and raw bytes.

#![allow(dead_code)]

use crate::common::{write_project, TestServer};
use bytes::Bytes;
use hyper::header::HeaderMap;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

/// The size of the binary attachment: more than two store chunks.
pub const DATA_LEN: usize = 4_000_000;

/// The binary attachment's bytes.
pub fn data() -> Vec<u8> {
    (0..DATA_LEN).map(|i| (i % 251) as u8).collect()
}

pub const REPORT: &[u8] = b"quarterly report\n";

const MAKE_FILES: &str = r#"import base64, json, sys
json.load(sys.stdin)
data = bytes(i % 251 for i in range(4000000))
attach = lambda name, mime, raw: {"name": name, "mimeType": mime, "data": base64.b64encode(raw).decode()}
print(json.dumps({"status": "success", "result": "made", "attachments": [
    attach("report.txt", "text/plain", b"quarterly report\n"),
    attach("data.bin", "application/x-made", data),
]}))
"#;

/// Waits (polling) until the file `flag` exists in the project folder, then succeeds.
const WAIT_FOR_FLAG: &str = r#"import json, os, sys, time
json.load(sys.stdin)
while not os.path.exists("flag"):
    time.sleep(0.02)
print(json.dumps({"status": "success", "result": "flag seen"}))
"#;

/// Agents `maker` and `other` (same prompt) that make files, and `waiter`, whose tool runs
/// until the project folder holds a file named `flag`.
pub fn project() -> PathBuf {
    let tool = |activity: &str| {
        json!({"type": "object", "description": "Does its job.",
               "properties": {"_activity": {"type": "string", "const": activity}},
               "additionalProperties": false})
        .to_string()
    };
    let prompt = |tool: &str, model: &str| {
        json!({"toolDescription": "Makes things.", "prompt": "You make things.",
               "model": model, "tools": [tool]})
        .to_string()
    };
    let agent = |prompt: &str| json!({"type": "ai_human", "sideA": {"prompt": prompt}}).to_string();
    let files = [
        ("agents/tools/make_files.json", tool("make_files")),
        ("agents/tools/wait_for_flag.json", tool("wait_for_flag")),
        (
            "agents/activities/make_files.json",
            r#"{"command": ["python3", "activities/make_files.py"], "timeoutMs": 60000, "env": ["PATH"], "maxOutputBytes": 8000000}"#.to_owned(),
        ),
        (
            "agents/activities/wait_for_flag.json",
            r#"{"command": ["python3", "activities/wait_for_flag.py"], "timeoutMs": 120000, "env": ["PATH"]}"#.to_owned(),
        ),
        ("activities/make_files.py", MAKE_FILES.to_owned()),
        ("activities/wait_for_flag.py", WAIT_FOR_FLAG.to_owned()),
        ("agents/prompts/maker.json", prompt("make_files", "maker_test")),
        ("agents/prompts/waiter.json", prompt("wait_for_flag", "waiter_test")),
        ("agents/agents/maker.json", agent("maker")),
        ("agents/agents/other.json", agent("maker")),
        ("agents/agents/waiter.json", agent("waiter")),
        (
            "agents/models/maker_test.json",
            r#"{"provider": "test", "script": "scripts/maker.jsonl"}"#.to_owned(),
        ),
        (
            "agents/models/waiter_test.json",
            r#"{"provider": "test", "script": "scripts/waiter.jsonl"}"#.to_owned(),
        ),
        (
            "scripts/maker.jsonl",
            "{\"toolCalls\": [{\"name\": \"make_files\", \"arguments\": {}}]}\n{\"text\": \"made\"}\n"
                .to_owned(),
        ),
        (
            "scripts/waiter.jsonl",
            "{\"toolCalls\": [{\"name\": \"wait_for_flag\", \"arguments\": {}}]}\n{\"text\": \"waited\"}\n"
                .to_owned(),
        ),
    ];
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
    write_project(&files)
}

pub const PATIENCE: Duration = Duration::from_secs(60);

/// Starts a thread of `agent` and waits until its run has ended.
pub async fn finished_thread(server: &TestServer, token: &str, agent: &str) -> String {
    let id = server
        .create(token, json!({"agent": agent, "message": "make them"}))
        .await;
    let ended = server
        .events(&id, token, None)
        .await
        .until("run_ended", PATIENCE)
        .await;
    assert_eq!(ended.last().unwrap().data["status"], "done", "{ended:?}");
    id
}

/// The files of a thread as the listing endpoint gives them, everything below `/`.
pub async fn listing(server: &TestServer, token: &str, thread: &str) -> Value {
    let answer = server
        .get(
            &format!("/v1/threads/{thread}/files?recursive=true"),
            Some(token),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.json["entries"].clone()
}

/// The path of the attachment `name` in the thread's listing.
pub async fn attachment(server: &TestServer, token: &str, thread: &str, name: &str) -> String {
    let entries = listing(server, token, thread).await;
    entries
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name && e["kind"] == "file")
        .unwrap_or_else(|| panic!("no {name} in {entries:#}"))["path"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// An answer with its headers and its body as raw bytes.
#[derive(Debug)]
pub struct Download {
    pub status: u16,
    pub headers: HeaderMap,
    pub bytes: Bytes,
}

impl Download {
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .map(|v| v.to_str().unwrap())
            .unwrap_or_else(|| panic!("no {name} header in {:?}", self.headers))
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.bytes).unwrap_or(Value::Null)
    }
}

/// `GET path` with `headers`, reading the whole body as bytes.
pub async fn fetch(
    server: &TestServer,
    path: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
) -> Download {
    let (status, headers, bytes) = server
        .exchange("GET", path, token, headers, Vec::new())
        .await;
    Download {
        status,
        headers,
        bytes,
    }
}
