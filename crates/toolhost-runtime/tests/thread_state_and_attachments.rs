//! A tool reaches its thread through `ThreadState` (durable values, files, events, queued tools),
//! and the attachments it returns are stored under /attachments/ and linked to its result.

use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::{Attachment, NewAttachment, ToolContext, ToolResult};
use toolhost_runtime::engine::{Runtime, ThreadState};
use toolhost_store::path::normalize;
use toolhost_store::{Role, SqliteStore, Store};

fn project(script: &str, tools: &[&str]) -> PathBuf {
    let root = std::env::temp_dir().join(format!(
        "toolhost-state-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let prompt =
        json!({"toolDescription": "x", "prompt": "x", "model": "m", "tools": tools}).to_string();
    for (file, text) in [
        (
            "agents/agents/a.json",
            r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#.to_owned(),
        ),
        ("agents/prompts/p.json", prompt),
        (
            "agents/models/m.json",
            r#"{"provider": "test", "script": "s.jsonl"}"#.to_owned(),
        ),
        ("s.jsonl", script.to_owned()),
    ] {
        let path = root.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    root
}

fn chart_tool(data: &'static str) -> toolhost_core::AnyTool {
    DynamicTool::new("chart", "Draws a chart and notes it.")
        .handler(move |_args: Value, ctx: ToolContext| async move {
            let state = ctx
                .get::<ThreadState>()
                .ok_or_else(|| ToolError::new("no thread state"))?;
            state.set_value("charts", Some(json!(1))).await?;
            state
                .write_file("notes/chart.txt", b"drawn".to_vec(), Some("text/plain"))
                .await?;
            state
                .emit("chart_drawn", json!({"call": ctx.call_id()}))
                .await?;
            state.queue_tool("echo", json!({"text": "queued"})).await?;
            Ok::<_, ToolError>(ToolResult::success("Chart generated").with_attachment(
                NewAttachment {
                    name: "chart.png".into(),
                    mime_type: "image/png".into(),
                    data: data.into(),
                    width: Some(2),
                    height: Some(1),
                },
            ))
        })
        .build()
        .unwrap()
}

fn echo_tool() -> toolhost_core::AnyTool {
    DynamicTool::new("echo", "Echoes.")
        .parameters(json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}))
        .handler(|args: Value, _| async move { Ok::<_, ToolError>(args["text"].as_str().unwrap_or("").to_owned()) })
        .build()
        .unwrap()
}

async fn run(data: &'static str) -> (Arc<dyn Store>, String, PathBuf) {
    // The queued echo adds an assistant message, so the script's final text is its third turn.
    let root = project(
        "{\"toolCalls\": [{\"name\": \"chart\"}]}\n{\"text\": \"unused\"}\n{\"text\": \"done\"}\n",
        &["chart", "echo"],
    );
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&root, store.clone()).await.unwrap();
    rt.register_tool(chart_tool(data));
    rt.register_tool(echo_tool());
    let thread = rt.start_thread("a", "draw").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    (store, thread.id, root)
}

#[tokio::test]
async fn a_tool_writes_values_files_events_and_queues_a_tool_through_its_thread() {
    let (store, t, root) = run("iVBORw0KGgo=").await;
    assert_eq!(store.value(&t, "charts").unwrap(), Some(json!(1)));
    assert_eq!(
        store
            .read_file(&t, &normalize("/notes/chart.txt").unwrap())
            .unwrap(),
        b"drawn"
    );
    let events = store.events(&t, 0).unwrap();
    assert_eq!(events[0].kind.as_str(), "chart_drawn");
    let messages = store.messages(&t).unwrap();
    let echoed = messages
        .iter()
        .find(|m| m.role == Role::Tool && m.name.as_deref() == Some("echo"))
        .unwrap();
    assert_eq!(echoed.content.as_deref(), Some("queued"));
    assert!(store.queued(&t).unwrap().is_empty());
    let _ = std::fs::remove_dir_all(root);
}

#[tokio::test]
async fn attachments_are_stored_whole_and_the_result_refers_to_them() {
    let (store, t, root) = run("iVBORw0KGgo=").await;
    let messages = store.messages(&t).unwrap();
    let result_msg = messages
        .iter()
        .find(|m| m.name.as_deref() == Some("chart"))
        .unwrap();
    let result: ToolResult = result_msg.metadata.result.clone().unwrap();
    let Attachment::Ref(reference) = &result.attachments[0] else {
        panic!("expected a reference, got {:?}", result.attachments);
    };
    let call_id = result_msg.tool_call_id.as_deref().unwrap();
    assert_eq!(reference.path, format!("/attachments/{call_id}/chart.png"));
    assert_eq!(
        (reference.size, reference.width, reference.height),
        (8, Some(2), Some(1))
    );
    let bytes = store
        .read_file(&t, &normalize(&reference.path).unwrap())
        .unwrap();
    assert_eq!(bytes, [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a]);
    // Deleting the reply deletes the result and the attachment with it.
    let reply = messages
        .iter()
        .find(|m| m.tool_calls.iter().any(|c| c.id == call_id))
        .unwrap();
    store
        .apply(
            &t,
            vec![toolhost_store::Write::DeleteMessage(reply.id.clone())],
        )
        .unwrap();
    assert_eq!(
        store
            .stat(&t, &normalize(&reference.path).unwrap())
            .unwrap(),
        None
    );
    let _ = std::fs::remove_dir_all(root);
}

#[tokio::test]
async fn an_attachment_that_is_not_base64_makes_the_result_an_error_that_says_so() {
    let (store, t, root) = run("not base64!").await;
    let messages = store.messages(&t).unwrap();
    let result_msg = messages
        .iter()
        .find(|m| m.name.as_deref() == Some("chart"))
        .unwrap();
    assert_eq!(result_msg.status, Some(toolhost_store::ToolStatus::Error));
    assert!(
        result_msg
            .content
            .as_deref()
            .unwrap()
            .contains("attachment \"chart.png\" is not valid base64"),
        "{:?}",
        result_msg.content
    );
    assert!(store
        .readdir(&t, &normalize("/").unwrap())
        .unwrap()
        .iter()
        .all(|e| e.path != "/attachments"));
    let _ = std::fs::remove_dir_all(root);
}

#[tokio::test]
async fn a_tool_invokes_another_shares_the_run_context_and_sees_its_execution() {
    let root = project(
        "{\"toolCalls\": [{\"name\": \"relay\"}, {\"name\": \"relay\"}]}\n{\"text\": \"done\"}\n",
        &["relay", "echo"],
    );
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&root, store.clone()).await.unwrap();
    rt.register_tool(echo_tool());
    rt.register_tool(
        DynamicTool::new("relay", "Asks echo, counts its runs in the run's context.")
            .handler(|_args: Value, ctx: ToolContext| async move {
                let state = ctx
                    .get::<ThreadState>()
                    .ok_or_else(|| ToolError::new("no thread"))?;
                let runs = state
                    .context_value("runs")
                    .and_then(|v| v.as_u64())
                    .unwrap_or(0)
                    + 1;
                state.set_context_value("runs", Some(json!(runs)));
                let echoed = state.invoke_tool("echo", json!({"text": "inner"})).await;
                let missing = state.invoke_tool("nope", json!({})).await;
                let execution = state.execution();
                Ok::<_, ToolError>(format!(
                    "run {runs}: {} / {} / step {} side {} root {}",
                    echoed.model_text(),
                    missing.model_text(),
                    execution.step_count,
                    execution.side,
                    state.root_thread_id() == state.thread_id()
                ))
            })
            .build()
            .unwrap(),
    );
    let thread = rt.start_thread("a", "relay").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    let results: Vec<String> = store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.unwrap_or_default())
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results[0].starts_with("run 1: inner / ToolNotFoundError: Tool not found: nope"),
        "{results:?}"
    );
    assert!(results[1].starts_with("run 2: inner"), "{results:?}");
    assert!(
        results[1].ends_with("step 1 side a root true"),
        "{results:?}"
    );
    // The invoked tool is part of the call, not a call of its own.
    assert_eq!(store.calls(&thread.id).unwrap().len(), 2);
    let _ = std::fs::remove_dir_all(root);
}
