//! What a call of an agent tool gives the child it starts (spec 001 §5, §7, catalogue SA-18):
//! `initAttachmentsProperty` copies files of the calling thread into the child, under
//! `/attachments/parent/`, in the transaction that creates it, and names them in its first
//! message; a path that is not a file of the caller is refused and no child starts.
//! `initAgentNameProperty` names the child (its `name:` tag).

mod common;

use common::{tool_texts, Project};
use serde_json::{json, Value};
use std::sync::Arc;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_runtime::engine::{Runtime, ThreadState};
use toolhost_store::{SqliteStore, Store};

/// `lead` saves a note, then calls `helper` with `files`; `helper`'s worker reads what it was
/// given and reports it.
fn project(files: Value) -> Project {
    let prompt = |model: &str, tools: Value, schema: Option<Value>| {
        let mut p =
            json!({"toolDescription": "x", "prompt": "Work.", "model": model, "tools": tools});
        if let Some(schema) = schema {
            p["requiredSchema"] = schema;
        }
        p.to_string()
    };
    let model = |script: &str| json!({"provider": "test", "script": script}).to_string();
    let entry = json!({"name": "helper", "initUserMessageProperty": "message",
        "initAttachmentsProperty": "files", "initAgentNameProperty": "who"});
    Project::with_files(&[
        ("agents/agents/lead.json", json!({"type": "ai_human", "sideA": {"prompt": "lead"}}).to_string()),
        ("agents/agents/helper.json", json!({
            "type": "dual_ai", "description": "Reads.", "maxSessionTurns": 2,
            "sideA": {"prompt": "worker", "sessionStop": {"name": "report", "messageProperty": "text"}},
            "sideB": {"prompt": "critic"}
        }).to_string()),
        ("agents/prompts/lead.json", prompt("lead", json!(["save", entry]), None)),
        ("agents/prompts/worker.json", prompt("worker", json!(["peek", "report"]), Some(json!({
            "type": "object",
            "properties": {
                "message": {"type": "string"},
                "who": {"type": "string"},
                "files": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["message", "who", "files"]
        })))),
        ("agents/prompts/critic.json", prompt("critic", json!([]), None)),
        ("agents/models/lead.json", model("lead.json")),
        ("agents/models/worker.json", model("worker.json")),
        ("agents/models/critic.json", model("critic.json")),
        ("lead.json", json!([
            {"toolCalls": [{"name": "save", "arguments": {}}]},
            {"toolCalls": [{"name": "helper", "arguments":
                {"message": "read the note", "who": "Ada", "files": files}}]},
            {"text": "done"}
        ]).to_string()),
        ("worker.json", json!([
            {"toolCalls": [{"name": "peek", "arguments": {}}]},
            {"toolCalls": [{"name": "report", "arguments": {"text": "read it"}}]}
        ]).to_string()),
        ("critic.json", json!([{"text": "unused"}]).to_string()),
    ])
}

async fn runtime(p: &Project) -> (Runtime, Arc<dyn Store>) {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&p.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&p.root, store.clone()).await.unwrap();
    let empty = json!({"type": "object", "properties": {}});
    rt.register_tool(
        DynamicTool::new("save", "Saves a note.")
            .parameters(empty.clone())
            .handler(|_: Value, ctx| async move {
                let state = ctx.get::<ThreadState>().unwrap();
                state
                    .write_file("/notes/a.txt", b"tide at six".to_vec(), Some("text/plain"))
                    .await
                    .map_err(|e| ToolError::new(e.to_string()))?;
                Ok::<_, ToolError>("saved".to_owned())
            })
            .build()
            .unwrap(),
    );
    rt.register_tool(
        DynamicTool::new("peek", "Reads what the parent gave.")
            .parameters(empty.clone())
            .handler(|_: Value, ctx| async move {
                let state = ctx.get::<ThreadState>().unwrap();
                let bytes = state
                    .read_file("/attachments/parent/notes/a.txt")
                    .await
                    .map_err(|e| ToolError::new(e.to_string()))?;
                Ok::<_, ToolError>(String::from_utf8(bytes).unwrap())
            })
            .build()
            .unwrap(),
    );
    rt.register_tool(
        DynamicTool::new("report", "Reports.")
            .parameters(json!({"type": "object", "properties": {"text": {"type": "string"}}}))
            .handler(|_: Value, _| async move { Ok::<_, ToolError>("reported".to_owned()) })
            .build()
            .unwrap(),
    );
    (rt, store)
}

#[tokio::test]
async fn the_files_a_call_names_are_copied_into_the_child_and_named_in_its_first_message() {
    let p = project(json!(["/notes/a.txt"]));
    let (rt, store) = runtime(&p).await;
    let lead = rt.start_thread("lead", "go").await.unwrap();
    rt.run(&lead.id).await.unwrap();

    let child = &store.threads(Some(&lead.id)).unwrap()[0];
    // initAgentNameProperty: the child is named by the call.
    assert!(
        child.tags.contains(&"name:Ada".to_owned()),
        "{:?}",
        child.tags
    );
    let first = store.messages(&child.id).unwrap().remove(0);
    let text = first.content.unwrap();
    assert!(
        text.starts_with("read the note")
            && text.contains("Attached: /attachments/parent/notes/a.txt (text/plain, 11 bytes)"),
        "{text}"
    );
    // The child's tool read the copy in its own file system.
    assert!(tool_texts(&store, &child.id).contains(&"tide at six".to_owned()));
    // The parent's file is where it was.
    let path = toolhost_store::path::normalize("/notes/a.txt").unwrap();
    assert_eq!(store.read_file(&lead.id, &path).unwrap(), b"tide at six");
    assert_eq!(tool_texts(&store, &lead.id)[1], "read it");
}

#[tokio::test]
async fn a_path_that_is_not_a_file_of_the_caller_is_refused_and_no_child_starts() {
    for (files, said) in [
        (
            json!(["/notes/missing.txt"]),
            "is not a file of this thread",
        ),
        (json!(["/notes"]), "is not a file of this thread"),
        (
            json!(["../../etc/passwd"]),
            "attachment \"../../etc/passwd\"",
        ),
    ] {
        let p = project(files);
        let (rt, store) = runtime(&p).await;
        let lead = rt.start_thread("lead", "go").await.unwrap();
        rt.run(&lead.id).await.unwrap();
        assert!(store.threads(Some(&lead.id)).unwrap().is_empty());
        let result = &tool_texts(&store, &lead.id)[1];
        assert!(result.contains(said), "{result}");
    }
}
