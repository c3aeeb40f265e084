//! A program that fails quoting a secret on its standard error: what is stored and shown of its
//! output is redacted first and cut second, and a read that stopped at its byte cap inside the
//! secret keeps no piece of it. Real programs, a real SQLite file read back byte by byte.

mod common;

use common::traces::{assert_no_trace_in_files, traces, SECRET};
use common::{call_answer, text_answer, ListModel, Project};
use serde_json::json;
use std::sync::Arc;
use toolhost_core::{ToolResult, ToolStatus};
use toolhost_runtime::engine::Runtime;
use toolhost_runtime::variables::secrets::SecretKey;
use toolhost_runtime::variables::VariableValue;
use toolhost_store::{Role, SqliteStore, Store};

/// The stored result of the thread's one call: its message text and the whole result.
fn stored_result(store: &dyn Store, thread: &str) -> (String, ToolResult) {
    let message = store
        .messages(thread)
        .unwrap()
        .into_iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    (
        message.content.clone().unwrap_or_default(),
        message.metadata.result.unwrap(),
    )
}

/// A project whose tool `leak` runs the program `leak.py` with TOKEN declared.
fn leaking_project(program: &str, max_output_bytes: usize) -> Project {
    let tool = json!({
        "type": "object", "description": "Leaks.",
        "properties": {"_activity": {"const": "leak"}},
        "variables": [{"name": "TOKEN", "type": "secret", "required": true}]
    });
    let activity = json!({
        "command": ["python3", "leak.py"], "env": ["PATH"], "maxOutputBytes": max_output_bytes
    });
    Project::with_files(&[
        (
            "agents/agents/a.json",
            r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#.to_owned(),
        ),
        (
            "agents/prompts/p.json",
            json!({"toolDescription": "x", "prompt": "x", "model": "list", "tools": ["leak"]})
                .to_string(),
        ),
        ("agents/tools/leak.json", tool.to_string()),
        ("agents/activities/leak.json", activity.to_string()),
        ("leak.py", program.to_owned()),
    ])
}

async fn run_leak(project: &Project) -> (Runtime, Arc<dyn Store>, String) {
    let model = ListModel::new(vec![call_answer("w1", "leak", "{}"), text_answer("done")]);
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&project.root, store.clone()).await.unwrap();
    rt.register_model("list", model);
    rt.set_secret_key(SecretKey::generate().unwrap());
    let thread = rt
        .start_thread_with("a", "go", vec![VariableValue::secret("TOKEN", SECRET)])
        .await
        .unwrap();
    rt.run(&thread.id).await.unwrap();
    (rt, store, thread.id)
}

#[tokio::test]
async fn a_failing_program_s_stderr_is_redacted_before_its_tail_is_cut() {
    // 488 characters follow the secret: the 500-character tail begins 12 characters before
    // its end, inside it. Redacted first, the tail holds no piece of it.
    let program = r#"
import json, sys
token = json.load(sys.stdin)["variables"]["TOKEN"]
sys.stderr.write("x" * 300 + token + "y" * 488)
sys.exit(1)
"#;
    let project = leaking_project(program, 1 << 20);
    let (rt, store, thread) = run_leak(&project).await;
    let (error, result) = stored_result(store.as_ref(), &thread);
    assert_eq!(result.status, ToolStatus::Error);
    assert!(error.contains("exited with status 1: …yyy"), "{error}");
    for (what, trace) in traces() {
        assert!(
            !error.as_bytes().windows(trace.len()).any(|w| w == trace),
            "{what}: {error}"
        );
    }
    assert_no_trace_in_files(&project.root.join("t.db"));
    drop(rt);
}

#[tokio::test]
async fn a_capped_read_that_ends_inside_a_secret_keeps_no_piece_of_it() {
    // The cap of 1000 bytes ends 10 bytes into the secret, before redaction could see it whole.
    let program = r#"
import json, sys
token = json.load(sys.stdin)["variables"]["TOKEN"]
sys.stderr.write("x" * 990 + token + "y" * 5000)
sys.exit(2)
"#;
    let project = leaking_project(program, 1000);
    let (rt, store, thread) = run_leak(&project).await;
    let (error, _) = stored_result(store.as_ref(), &thread);
    assert!(error.contains("exited with status 2: …xxx"), "{error}");
    assert!(!error.contains(&SECRET[..4]), "{error}");
    assert_no_trace_in_files(&project.root.join("t.db"));
    drop(rt);
}

#[tokio::test]
async fn output_that_is_not_a_result_is_quoted_redacted_also_in_the_parse_error() {
    // The parse error itself quotes the value ("unknown variant `sk-…`"), and the output's tail
    // is quoted after it: both redacted.
    let program = r#"
import json, sys
token = json.load(sys.stdin)["variables"]["TOKEN"]
print(json.dumps({"status": token, "result": "z" * 190 + token}))
"#;
    let project = leaking_project(program, 1 << 20);
    let (rt, store, thread) = run_leak(&project).await;
    let (error, result) = stored_result(store.as_ref(), &thread);
    assert_eq!(result.status, ToolStatus::Error);
    assert!(error.contains("is not a ToolResult"), "{error}");
    assert!(error.contains("[redacted TOKEN]"), "{error}");
    for (what, trace) in traces() {
        assert!(
            !error.as_bytes().windows(trace.len()).any(|w| w == trace),
            "{what}: {error}"
        );
    }
    assert_no_trace_in_files(&project.root.join("t.db"));
    drop(rt);
}
