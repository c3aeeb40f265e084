//! Attachments across threads (spec 001 §7): the files a sub-agent's session ends with are
//! copied into the parent's file system under paths of its own, and the parent's call gets
//! references valid there; a path that is not a file of the child is refused, never passed on.

mod common;

use common::Project;
use serde_json::{json, Value};
use std::sync::Arc;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::{Attachment, ToolResult};
use toolhost_runtime::engine::{Runtime, ThreadState};
use toolhost_store::path::normalize;
use toolhost_store::{Role, SqliteStore, Store};

/// `lead` offers `research` (blocking or not); its `finder` draws a file, then ends the session
/// with `report`, whose `files` are the session's attachments.
fn project(blocking: bool, reported: Value) -> Project {
    let prompt = |model: &str, tools: Value| {
        json!({"toolDescription": "x", "prompt": "Work.", "model": model, "tools": tools,
            "includeChat": true, "includePastTools": true})
        .to_string()
    };
    let model = |script: &str| json!({"provider": "test", "script": script}).to_string();
    Project::with_files(&[
        ("agents/agents/lead.json", json!({"type": "ai_human", "sideA": {"prompt": "lead"}}).to_string()),
        ("agents/agents/research.json", json!({
            "type": "dual_ai", "description": "Draws.", "maxSessionTurns": 4,
            "sideA": {"prompt": "asker"},
            "sideB": {"prompt": "finder", "sessionStop": {
                "name": "report", "messageProperty": "text", "attachmentsProperty": "files"}}
        }).to_string()),
        ("agents/prompts/lead.json", prompt("lead", json!([{"name": "research", "blocking": blocking}]))),
        ("agents/prompts/asker.json", prompt("asker", json!([]))),
        ("agents/prompts/finder.json", prompt("finder", json!(["draw", "report"]))),
        ("agents/models/lead.json", model("lead.json")),
        ("agents/models/asker.json", model("asker.json")),
        ("agents/models/finder.json", model("finder.json")),
        ("lead.json", json!([
            {"toolCalls": [{"name": "research", "arguments": {"message": "draw the bay"}}]},
            {"text": "thanks"},
            {"text": "thanks again"}
        ]).to_string()),
        ("asker.json", json!([{"text": "please draw it"}]).to_string()),
        ("finder.json", json!([
            {"toolCalls": [{"name": "draw", "arguments": {}}]},
            {"toolCalls": [{"name": "report", "arguments": {"text": "drawn", "files": reported}}]}
        ]).to_string()),
    ])
}

async fn runtime(p: &Project) -> (Runtime, Arc<dyn Store>) {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&p.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&p.root, store.clone()).await.unwrap();
    rt.register_tool(
        DynamicTool::new("draw", "Draws a map into /out/map.txt.")
            .parameters(json!({"type": "object", "properties": {}}))
            .handler(|_: Value, ctx| async move {
                let state = ctx.get::<ThreadState>().unwrap();
                state
                    .write_file(
                        "/out/map.txt",
                        b"~~ the bay ~~".to_vec(),
                        Some("text/plain"),
                    )
                    .await
                    .map_err(|e| ToolError::new(e.to_string()))?;
                Ok::<_, ToolError>("drawn".to_owned())
            })
            .build()
            .unwrap(),
    );
    rt.register_tool(
        DynamicTool::new("report", "Reports.")
            .parameters(json!({"type": "object", "properties": {
                "text": {"type": "string"}, "files": {"type": "array", "items": {"type": "string"}}}}))
            .handler(|_: Value, _| async move { Ok::<_, ToolError>("reported".to_owned()) })
            .build()
            .unwrap(),
    );
    (rt, store)
}

#[tokio::test]
async fn a_childs_session_files_reach_the_parent_under_paths_valid_in_its_file_system() {
    let p = project(true, json!(["/out/map.txt"]));
    let (rt, store) = runtime(&p).await;
    let lead = rt.start_thread("lead", "go").await.unwrap();
    rt.run(&lead.id).await.unwrap();
    let child = store.threads(Some(&lead.id)).unwrap().remove(0);

    let result_message = store
        .messages(&lead.id)
        .unwrap()
        .into_iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    let result: ToolResult = result_message.metadata.result.clone().unwrap();
    assert!(result.is_success(), "{result:?}");
    let [Attachment::Ref(reference)] = result.attachments.as_slice() else {
        panic!("expected one reference, got {:?}", result.attachments)
    };
    let expected = format!("/attachments/subagents/{}/out/map.txt", child.id);
    assert_eq!(reference.path, expected);
    assert_eq!(reference.mime_type, "text/plain");
    assert_eq!(reference.name, "map.txt");
    // The reference names a file of the parent, with the child's bytes.
    let copied = store
        .read_file(&lead.id, &normalize(&expected).unwrap())
        .unwrap();
    assert_eq!(copied, b"~~ the bay ~~");
    // The child keeps its own file where it was.
    let own = store
        .read_file(&child.id, &normalize("/out/map.txt").unwrap())
        .unwrap();
    assert_eq!(own, b"~~ the bay ~~");
}

#[tokio::test]
async fn a_non_blocking_childs_files_are_named_in_the_message_it_delivers() {
    let p = project(false, json!(["/out/map.txt"]));
    let (rt, store) = runtime(&p).await;
    let lead = rt.start_thread("lead", "go").await.unwrap();
    rt.run(&lead.id).await.unwrap();
    let child = store.threads(Some(&lead.id)).unwrap().remove(0);
    let expected = format!("/attachments/subagents/{}/out/map.txt", child.id);
    let delivered = store
        .messages(&lead.id)
        .unwrap()
        .into_iter()
        .rev()
        .filter(|m| m.role == Role::User)
        .find_map(|m| m.content)
        .unwrap();
    assert!(
        delivered.contains(&format!("Attached: {expected} (text/plain, 13 bytes)")),
        "{delivered}"
    );
    assert!(store
        .stat(&lead.id, &normalize(&expected).unwrap())
        .unwrap()
        .is_some());
}

#[tokio::test]
async fn a_path_that_is_not_a_file_of_the_child_is_refused_and_nothing_is_passed_on() {
    let p = project(true, json!(["/out/missing.txt"]));
    let (rt, store) = runtime(&p).await;
    let lead = rt.start_thread("lead", "go").await.unwrap();
    rt.run(&lead.id).await.unwrap();
    let result = store
        .messages(&lead.id)
        .unwrap()
        .into_iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    let text = result.content.unwrap();
    assert!(
        text.contains("\"/out/missing.txt\" is not a file of the sub-agent's thread"),
        "{text}"
    );
    let copied = store
        .readdir(&lead.id, &normalize("/").unwrap())
        .unwrap_or_default();
    assert!(copied.is_empty(), "{copied:?}");
}
