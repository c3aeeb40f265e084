//! A sub-agent offered with `blocking: false` (catalogue SA-13): its call returns a reference
//! to the child thread at once, the child runs beside its parent, and its session result
//! reaches the parent as a queued message, exactly once, which starts the parent's next turn.

mod common;

use common::Project;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;
use toolhost_core::approval::Approval;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_runtime::engine::{RunOutcome, Runtime, StopReason, Verdict};
use toolhost_store::{Role, SqliteStore, Store, ThreadStatus};

/// Agent `lead` offers `research` without blocking; `research` (dual_ai) asks with `asker`,
/// and `finder` calls `note`, then ends the session with `report`.
fn project(lead_script: Value) -> Project {
    let prompt = |model: &str, tools: Value| {
        json!({"toolDescription": "x", "prompt": "Work.", "model": model, "tools": tools,
            "includeChat": true, "includePastTools": true})
        .to_string()
    };
    let model = |script: &str| json!({"provider": "test", "script": script}).to_string();
    let files = vec![
        ("agents/agents/lead.json".to_owned(), json!({"type": "ai_human", "sideA": {"prompt": "lead"}}).to_string()),
        ("agents/agents/research.json".to_owned(), json!({
            "type": "dual_ai", "description": "Researches a question.", "maxSessionTurns": 4,
            "sideA": {"prompt": "asker"},
            "sideB": {"prompt": "finder", "sessionStop": {"name": "report", "messageProperty": "text"}}
        }).to_string()),
        ("agents/prompts/lead.json".to_owned(), prompt("lead", json!([{"name": "research", "blocking": false}]))),
        ("agents/prompts/asker.json".to_owned(), prompt("asker", json!([]))),
        ("agents/prompts/finder.json".to_owned(), prompt("finder", json!(["note", "report"]))),
        ("agents/models/lead.json".to_owned(), model("lead.json")),
        ("agents/models/asker.json".to_owned(), model("asker.json")),
        ("agents/models/finder.json".to_owned(), model("finder.json")),
        ("lead.json".to_owned(), lead_script.to_string()),
        ("asker.json".to_owned(), json!([{"text": "please find it"}]).to_string()),
        ("finder.json".to_owned(), json!([
            {"toolCalls": [{"name": "note", "arguments": {}}]},
            {"toolCalls": [{"name": "report", "arguments": {"text": "the answer is 42"}}]}
        ]).to_string()),
    ];
    let files: Vec<(&str, String)> = files.iter().map(|(a, b)| (a.as_str(), b.clone())).collect();
    Project::with_files(&files)
}

fn lead_script() -> Value {
    json!([
        {"toolCalls": [{"name": "research", "arguments": {"message": "what is it?"}}]},
        {"text": "research started"},
        {"text": "the research says 42"}
    ])
}

/// Holds a `note` call: the call signals `entered` when it starts, then waits for `release`
/// (at most 60 s) before it counts itself.
#[derive(Default)]
struct Gate {
    entered: Notify,
    release: Notify,
}

/// With `approve_notes`, every `note` call waits for a person's decision; with `slow_notes`,
/// each waits at the gate.
async fn runtime_with(
    project: &Project,
    approve_notes: bool,
    slow_notes: Option<Arc<Gate>>,
) -> (Runtime, Arc<dyn Store>, Arc<AtomicUsize>) {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&project.root, store.clone()).await.unwrap();
    let notes = Arc::new(AtomicUsize::new(0));
    let counter = notes.clone();
    let mut note = DynamicTool::new("note", "Takes a note.")
        .parameters(json!({"type": "object", "properties": {}}))
        .handler(move |_: Value, _| {
            let counter = counter.clone();
            let gate = slow_notes.clone();
            async move {
                if let Some(gate) = gate {
                    gate.entered.notify_one();
                    let _ = tokio::time::timeout(
                        std::time::Duration::from_secs(60),
                        gate.release.notified(),
                    )
                    .await;
                }
                counter.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>("noted".to_owned())
            }
        });
    if approve_notes {
        note = note.approval(Approval::always());
    }
    rt.register_tool(note.build().unwrap());
    rt.register_tool(
        DynamicTool::new("report", "Reports the finding.")
            .parameters(json!({"type": "object", "properties": {"text": {"type": "string"}}}))
            .handler(|_: Value, _| async move { Ok::<_, ToolError>("reported".to_owned()) })
            .build()
            .unwrap(),
    );
    (rt, store, notes)
}

async fn runtime(
    project: &Project,
    approve_notes: bool,
) -> (Runtime, Arc<dyn Store>, Arc<AtomicUsize>) {
    runtime_with(project, approve_notes, None).await
}

fn user_texts(store: &Arc<dyn Store>, thread: &str) -> Vec<String> {
    store
        .messages(thread)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::User)
        .filter_map(|m| m.content)
        .collect()
}

#[tokio::test]
async fn a_non_blocking_call_returns_a_reference_and_the_result_arrives_later_as_a_message() {
    let p = project(lead_script());
    let (rt, store, notes) = runtime(&p, false).await;
    let lead = rt.start_thread("lead", "find it").await.unwrap();
    let outcome = rt.run(&lead.id).await.unwrap();
    assert_eq!(outcome, RunOutcome::Done(StopReason::Response));

    let children = store.threads(Some(&lead.id)).unwrap();
    assert_eq!(children.len(), 1);
    let child = &children[0];
    assert!(
        child.tags.iter().any(|t| t == "detached"),
        "{:?}",
        child.tags
    );
    assert_eq!(child.status, ThreadStatus::Done);
    assert_eq!(notes.load(Ordering::SeqCst), 1);

    // The call's result is the reference, not the child's answer.
    let messages = store.messages(&lead.id).unwrap();
    let result = messages.iter().find(|m| m.role == Role::Tool).unwrap();
    let reference: Value = serde_json::from_str(result.content.as_deref().unwrap()).unwrap();
    assert_eq!(reference["reference"], child.id.as_str());
    assert_eq!(reference["status"], "running");
    assert!(!result.content.as_deref().unwrap().contains("the answer is"));

    // The model answered the reference first, then the child's result arrived as a user
    // message and the lead's next turn answered it.
    let users = user_texts(&store, &lead.id);
    assert_eq!(users.len(), 2, "{users:?}");
    assert!(
        users[1].contains(&child.id) && users[1].contains("the answer is 42"),
        "{users:?}"
    );
    let answers: Vec<_> = messages
        .iter()
        .filter(|m| m.role == Role::Assistant && m.tool_calls.is_empty())
        .filter_map(|m| m.content.clone())
        .collect();
    assert_eq!(answers, ["research started", "the research says 42"]);
    assert!(store.queued(&lead.id).unwrap().is_empty());

    // Running the lead and the child again delivers nothing twice and runs nothing twice.
    rt.run(&child.id).await.unwrap();
    rt.run(&lead.id).await.unwrap();
    assert_eq!(user_texts(&store, &lead.id).len(), 2);
    assert_eq!(notes.load(Ordering::SeqCst), 1);
    assert_eq!(store.threads(Some(&lead.id)).unwrap().len(), 1);
}

#[tokio::test]
async fn a_child_that_waited_for_a_person_delivers_its_result_when_its_own_run_ends() {
    let p = project(lead_script());
    let (rt, store, notes) = runtime(&p, true).await;
    let lead = rt.start_thread("lead", "find it").await.unwrap();
    rt.run(&lead.id).await.unwrap();

    // The child waits for a decision on `note`; the lead's turn ended without its result.
    let child = store.threads(Some(&lead.id)).unwrap().remove(0);
    assert_eq!(
        store.thread(&child.id).unwrap().status,
        ThreadStatus::Paused
    );
    assert_eq!(user_texts(&store, &lead.id).len(), 1);
    assert_eq!(notes.load(Ordering::SeqCst), 0);

    // Approved in the child, the child's own run ends its session, delivers to the lead and
    // runs the lead's next turn.
    let request = store.approvals(&child.id).unwrap().remove(0).request;
    rt.decide(&child.id, &request.call_id, Verdict::approve("ann"))
        .await
        .unwrap();
    rt.run(&child.id).await.unwrap();
    assert_eq!(notes.load(Ordering::SeqCst), 1);
    let users = user_texts(&store, &lead.id);
    assert_eq!(users.len(), 2, "{users:?}");
    assert!(users[1].contains("the answer is 42"));
    let last = store.messages(&lead.id).unwrap().pop().unwrap();
    assert_eq!(last.content.as_deref(), Some("the research says 42"));
}

#[tokio::test]
async fn a_parent_run_cut_off_while_its_child_runs_picks_the_child_up_and_delivers_once() {
    let p = project(lead_script());
    let gate = Arc::new(Gate::default());
    let (rt, store, notes) = runtime_with(&p, false, Some(gate.clone())).await;
    let lead = rt.start_thread("lead", "find it").await.unwrap();
    // The run is dropped while the child's slow `note` runs: like a process that died.
    let cut = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        tokio::select! {
            outcome = rt.run(&lead.id) => panic!("the run ended before it was cut off: {outcome:?}"),
            () = gate.entered.notified() => {}
        }
    })
    .await;
    assert!(cut.is_ok(), "the child's `note` did not start within 60 s");
    // Released now, a `note` that outlived its run would count itself.
    gate.release.notify_one();
    let child = store.threads(Some(&lead.id)).unwrap().remove(0);
    assert_ne!(store.thread(&child.id).unwrap().status, ThreadStatus::Done);
    assert_eq!(user_texts(&store, &lead.id).len(), 1);

    // The lead's next run finds the child, runs it to its end and takes its result up once.
    let (rt, _, _) = runtime_with(&p, false, None).await;
    rt.run(&lead.id).await.unwrap();
    assert_eq!(store.thread(&child.id).unwrap().status, ThreadStatus::Done);
    let users = user_texts(&store, &lead.id);
    assert_eq!(users.len(), 2, "{users:?}");
    assert!(users[1].contains("the answer is 42"));
    rt.run(&lead.id).await.unwrap();
    assert_eq!(user_texts(&store, &lead.id).len(), 2);
    assert_eq!(store.threads(Some(&lead.id)).unwrap().len(), 1);
    // The note cut off with the first run counted nothing; the second run's counter is its own.
    assert_eq!(notes.load(Ordering::SeqCst), 0);
}
