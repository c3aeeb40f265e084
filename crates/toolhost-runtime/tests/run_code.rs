//! `runCode` in a thread: the built-in `run_code` tool a prompt offers to a model, and
//! `ThreadState::run_code` for Rust tools, under the runtime's limits and its cap on runs in
//! flight; a stop of the thread terminates a run under way.

mod common;

use common::traces::{assert_no_trace_in_files, SECRET};
use common::{call_answer, one_prompt_project, runtime_on, text_answer, ListModel};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::{ToolContext, ToolResult, ToolStatus};
use toolhost_runtime::engine::{RunOutcome, StopReason, ThreadState};
use toolhost_runtime::sandbox::{RunCode, RunResult, SandboxLimits};
use toolhost_runtime::variables::secrets::SecretKey;
use toolhost_runtime::variables::VariableValue;
use toolhost_store::{Role, Store};

/// The arguments of a `run_code` call running `source` with `args`.
fn code_call(source: &str, args: Value) -> String {
    json!({"source": source, "args": args}).to_string()
}

/// The stored results of the thread's calls to `tool`, in order.
fn results_of(store: &Arc<dyn Store>, thread: &str, tool: &str) -> Vec<ToolResult> {
    store
        .messages(thread)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::Tool && m.name.as_deref() == Some(tool))
        .map(|m| m.metadata.result.unwrap())
        .collect()
}

fn limits(deadline: Option<Duration>) -> SandboxLimits {
    SandboxLimits {
        deadline,
        ..SandboxLimits::default()
    }
}

/// How long a test waits for something it expects before it gives up.
const PATIENCE: Duration = Duration::from_secs(60);

/// Each `runCode` run is a process of its own, a child of this one. A test that waits for its
/// run's process takes this lock to write, so that no other test of this file starts one
/// meanwhile; the others take it to read.
static SANDBOX_PROCESSES: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

async fn sharing_the_sandbox() -> tokio::sync::RwLockReadGuard<'static, ()> {
    SANDBOX_PROCESSES.read().await
}

/// The live (not yet exited) child processes of this process.
fn live_children() -> Vec<u32> {
    let me = std::process::id();
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        // `pid (name) state ppid ...`; the name may hold spaces and parentheses.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let ppid = fields.next().and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(me) && state != Some("Z") && state != Some("X") {
            children.push(pid);
        }
    }
    children
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_models_run_code_call_returns_the_value_and_the_logs() {
    let _shared = sharing_the_sandbox().await;
    let project = one_prompt_project(&["run_code"]);
    let source = "export default (a, b) => { console.log('adding', a, b); return {sum: a + b}; }";
    let model = ListModel::new(vec![
        call_answer("c1", "run_code", &code_call(source, json!([2, 3]))),
        text_answer("done"),
    ]);
    let (rt, store) = runtime_on(&project, model.clone()).await;
    let thread = rt.start_thread("a", "go").await.unwrap();
    let outcome = rt.run(&thread.id).await.unwrap();
    assert!(matches!(outcome, RunOutcome::Done(_)), "{outcome:?}");
    let result = &results_of(&store, &thread.id, "run_code")[0];
    assert_eq!(result.status, ToolStatus::Success, "{result:?}");
    let run: Value = serde_json::from_str(result.model_text()).unwrap();
    assert_eq!(run["status"], "success");
    assert_eq!(run["result"], json!({"sum": 5}));
    assert_eq!(run["logs"][0]["message"], "adding 2 3");
    // The model saw the result in its next request.
    let seen = format!("{:?}", model.requests()[1]);
    assert!(seen.contains("sum"), "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_loop_is_stopped_at_the_deadline_and_the_thread_goes_on() {
    let _shared = sharing_the_sandbox().await;
    let project = one_prompt_project(&["run_code"]);
    let model = ListModel::new(vec![
        call_answer(
            "c1",
            "run_code",
            &code_call("export default () => { for (;;) {} }", json!([])),
        ),
        text_answer("the loop was stopped"),
        call_answer(
            "c2",
            "run_code",
            &code_call("export default () => 'after'", json!([])),
        ),
        text_answer("done"),
    ]);
    let (mut rt, store) = runtime_on(&project, model).await;
    rt.set_code_limits(limits(Some(Duration::from_millis(200))), 2)
        .unwrap();
    let thread = rt.start_thread("a", "go").await.unwrap();
    let outcome = rt.run(&thread.id).await.unwrap();
    assert!(matches!(outcome, RunOutcome::Done(_)), "{outcome:?}");
    // The run went on after the error: the model was asked again.
    let last = store.messages(&thread.id).unwrap().pop().unwrap();
    assert_eq!(last.content.as_deref(), Some("the loop was stopped"));
    // The thread's next code runs (with a deadline no machine's slowness comes near).
    rt.set_code_limits(limits(Some(PATIENCE)), 2).unwrap();
    let again = rt.send(&thread.id, "again").await.unwrap();
    assert!(
        matches!(
            again,
            toolhost_runtime::engine::Delivery::Ran(RunOutcome::Done(_))
        ),
        "{again:?}"
    );
    let results = results_of(&store, &thread.id, "run_code");
    assert_eq!(results[0].status, ToolStatus::Error);
    assert!(
        results[0].model_text().starts_with("DeadlineError"),
        "the error names the limit hit: {}",
        results[0].model_text()
    );
    let after: Value = serde_json::from_str(results[1].model_text()).unwrap();
    assert_eq!(after["result"], "after");
    let last = store.messages(&thread.id).unwrap().pop().unwrap();
    assert_eq!(last.content.as_deref(), Some("done"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_of_the_thread_terminates_a_running_run_code() {
    let _alone = SANDBOX_PROCESSES.write().await;
    let project = one_prompt_project(&["run_code"]);
    let model = ListModel::new(vec![
        call_answer(
            "c1",
            "run_code",
            &code_call("export default () => { for (;;) {} }", json!([])),
        ),
        text_answer("never asked"),
    ]);
    let (mut rt, store) = runtime_on(&project, model.clone()).await;
    // No deadline: only the stop can end the run.
    rt.set_code_limits(limits(None), 1).unwrap();
    let rt = Arc::new(rt);
    let thread = rt.start_thread("a", "go").await.unwrap();
    let before = live_children();
    let (runner, id) = (rt.clone(), thread.id.clone());
    let task = tokio::spawn(async move { runner.run(&id).await });
    // The stop comes once the call's intent is journaled and its run's process runs.
    let waiting = std::time::Instant::now();
    loop {
        let journaled = !store.calls(&thread.id).unwrap().is_empty();
        if journaled && live_children().iter().any(|c| !before.contains(c)) {
            break;
        }
        assert!(
            waiting.elapsed() < PATIENCE && !task.is_finished(),
            "the run_code call did not start its run (journaled: {journaled})"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(rt.stop(&thread.id).await);
    let outcome = tokio::time::timeout(PATIENCE, task)
        .await
        .expect("the stop ended the runaway run")
        .unwrap()
        .unwrap();
    assert_eq!(outcome, RunOutcome::Done(StopReason::Stopped));
    let result = &results_of(&store, &thread.id, "run_code")[0];
    assert_eq!(result.status, ToolStatus::Error);
    assert!(
        result.model_text().starts_with("TerminatedError"),
        "{}",
        result.model_text()
    );
    assert_eq!(model.requests().len(), 1, "the model was not asked again");
}

/// A Rust tool that runs two busy modules at once through its thread and returns when each ran.
fn twice_tool() -> toolhost_core::AnyTool {
    DynamicTool::new("twice", "Runs code twice at once.")
        .parameters(json!({"type": "object", "properties": {}}))
        .handler(|_: Value, ctx: ToolContext| async move {
            let state = ctx
                .get::<ThreadState>()
                .ok_or_else(|| ToolError::new("no thread state"))?;
            let busy = || RunCode {
                source: "export default (n) => { const start = Date.now(); \
                         while (Date.now() - start < 300) {} return [start, Date.now(), n * 2]; }"
                    .to_owned(),
                execute: toolhost_runtime::sandbox::Execute {
                    args: vec![json!(21)],
                    ..Default::default()
                },
                ..RunCode::default()
            };
            let (a, b) = tokio::join!(state.run_code(busy()), state.run_code(busy()));
            let value = |r: RunResult| {
                r.result()
                    .cloned()
                    .ok_or_else(|| ToolError::new(format!("{r:?}")))
            };
            Ok::<_, ToolError>(json!([value(a)?, value(b)?]).to_string())
        })
        .build()
        .unwrap()
}

async fn spans_of_twice(max_in_flight: usize) -> Vec<Vec<i64>> {
    let _shared = sharing_the_sandbox().await;
    let project = one_prompt_project(&["twice"]);
    let model = ListModel::new(vec![call_answer("t1", "twice", "{}"), text_answer("done")]);
    let (mut rt, store) = runtime_on(&project, model).await;
    rt.register_tool(twice_tool());
    rt.set_code_limits(SandboxLimits::default(), max_in_flight)
        .unwrap();
    let thread = rt.start_thread("a", "go").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    let result = &results_of(&store, &thread.id, "twice")[0];
    assert_eq!(result.status, ToolStatus::Success, "{result:?}");
    serde_json::from_str(result.model_text()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rust_tool_runs_code_through_its_thread_state() {
    let spans = spans_of_twice(2).await;
    assert_eq!(spans[0][2], 42);
    assert_eq!(spans[1][2], 42);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_past_the_in_flight_cap_wait_for_a_slot() {
    let spans = spans_of_twice(1).await;
    let (first, second) = if spans[0][0] <= spans[1][0] {
        (&spans[0], &spans[1])
    } else {
        (&spans[1], &spans[0])
    };
    assert!(
        second[0] >= first[1],
        "with a cap of one the second run started only after the first ended: {spans:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_printed_by_code_is_not_stored() {
    let _shared = sharing_the_sandbox().await;
    let project = one_prompt_project(&["run_code"]);
    // The prompt declares the secret the thread is given.
    std::fs::write(
        project.root.join("agents/prompts/p.json"),
        json!({"toolDescription": "x", "prompt": "Be brief.", "model": "list",
            "tools": ["run_code"],
            "variables": [{"name": "TOKEN", "type": "secret", "required": false}]})
        .to_string(),
    )
    .unwrap();
    // The model never sees the secret; the code builds it from its character codes, so only its
    // output holds it.
    let codes: Vec<u32> = SECRET.chars().map(u32::from).collect();
    let source = "export default (codes) => { const s = String.fromCharCode(...codes); \
                  console.log('token', s); return s; }";
    let model = ListModel::new(vec![
        call_answer("c1", "run_code", &code_call(source, json!([codes]))),
        text_answer("done"),
    ]);
    let (mut rt, store) = runtime_on(&project, model).await;
    rt.set_secret_key(SecretKey::generate().unwrap());
    let thread = rt
        .start_thread_with("a", "go", vec![VariableValue::secret("TOKEN", SECRET)])
        .await
        .unwrap();
    rt.run(&thread.id).await.unwrap();
    let result = &results_of(&store, &thread.id, "run_code")[0];
    assert!(!result.model_text().contains(SECRET), "{result:?}");
    drop(rt);
    drop(store);
    assert_no_trace_in_files(&project.root.join("t.db"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_tool_named_run_code_replaces_the_built_in() {
    let _shared = sharing_the_sandbox().await;
    let project = one_prompt_project(&["run_code"]);
    let model = ListModel::new(vec![
        call_answer(
            "c1",
            "run_code",
            &code_call("export default () => 1", json!([])),
        ),
        text_answer("done"),
    ]);
    let (mut rt, store) = runtime_on(&project, model).await;
    rt.register_tool(
        DynamicTool::new("run_code", "The project's own.")
            .parameters(json!({"type": "object", "properties": {"source": {"type": "string"}, "args": {"type": "array"}}}))
            .handler(|_: Value, _| async move { Ok::<_, ToolError>("project tool".to_owned()) })
            .build()
            .unwrap(),
    );
    let thread = rt.start_thread("a", "go").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    let result = &results_of(&store, &thread.id, "run_code")[0];
    assert_eq!(result.model_text(), "project tool");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_tool_file_named_run_code_replaces_the_built_in() {
    let _shared = sharing_the_sandbox().await;
    let tool = json!({
        "type": "object", "description": "The project's own code runner.",
        "properties": {"_activity": {"const": "own"}, "source": {"type": "string"}}
    });
    let activity = json!({"command": [
        "sh", "-c", "cat >/dev/null; echo '{\"status\": \"success\", \"result\": \"project file\"}'"
    ]});
    let project = common::Project::with_files(&[
        (
            "agents/agents/a.json",
            r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#.to_owned(),
        ),
        (
            "agents/prompts/p.json",
            json!({"toolDescription": "x", "prompt": "x", "model": "list", "tools": ["run_code"]})
                .to_string(),
        ),
        ("agents/tools/run_code.json", tool.to_string()),
        ("agents/activities/own.json", activity.to_string()),
    ]);
    let model = ListModel::new(vec![
        call_answer("c1", "run_code", &json!({"source": "x"}).to_string()),
        text_answer("done"),
    ]);
    let (rt, store) = runtime_on(&project, model).await;
    let thread = rt.start_thread("a", "go").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    let result = &results_of(&store, &thread.id, "run_code")[0];
    assert_eq!(result.model_text(), "project file", "{result:?}");
}
