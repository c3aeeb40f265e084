//! `Runtime::stop` takes effect after the operation under way: a stop raised while a tool runs
//! ends the run once the calls have their results, without asking the model again; a stop
//! raised while the model answers keeps no reply whose calls would never run (an event records
//! it), and the thread asks again when it is resumed; parallel calls that had not started when
//! the stop came do not start. A stopped thread never holds a call without a result.

mod common;

use common::{
    call_answer, one_prompt_project, ping_tool, runtime_on, text_answer, within, ListModel,
};
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_providers::{Model, ModelFuture, ModelRequest, ModelResponse, ModelToolCall};
use toolhost_runtime::engine::{RunOutcome, StopReason, NOT_RUN_STOPPED, PARALLEL_CAP};
use toolhost_store::{EventKind, Role, Store, ThreadStatus};

/// Every call of the thread's replies has a result.
fn every_call_answered(store: &Arc<dyn Store>, thread: &str) {
    let messages = store.messages(thread).unwrap();
    let answered: HashSet<&str> = messages
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    for m in &messages {
        for call in &m.tool_calls {
            assert!(
                answered.contains(call.id.as_str()),
                "call {} has no result",
                call.id
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_while_a_tool_runs_ends_the_run_without_asking_the_model_again() {
    let project = one_prompt_project(&["wait", "ping"]);
    let model = ListModel::new(vec![
        call_answer("w1", "wait", "{}"),
        call_answer("w2", "ping", "{}"),
        text_answer("done"),
    ]);
    let (mut rt, store) = runtime_on(&project, model.clone()).await;
    let started = Arc::new(Notify::new());
    let signal = started.clone();
    rt.register_tool(
        DynamicTool::new("wait", "Waits until the run is stopped.")
            .parameters(serde_json::json!({"type": "object", "properties": {}}))
            .handler(
                move |_: serde_json::Value, ctx: toolhost_core::ToolContext| {
                    let signal = signal.clone();
                    async move {
                        signal.notify_one();
                        while !ctx.abort_signal().is_aborted() {
                            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                        }
                        Ok::<_, ToolError>("noticed the stop".to_owned())
                    }
                },
            )
            .build()
            .unwrap(),
    );
    rt.register_tool(ping_tool());
    let rt = Arc::new(rt);
    let thread = rt.start_thread("a", "go").await.unwrap();
    let (runner, id) = (rt.clone(), thread.id.clone());
    let task = tokio::spawn(async move { runner.run(&id).await });
    within("the start of the wait tool", started.notified()).await;
    assert!(rt.stop(&thread.id).await);
    assert_eq!(
        within("the end of the stopped run", task)
            .await
            .unwrap()
            .unwrap(),
        RunOutcome::Done(StopReason::Stopped)
    );
    assert_eq!(model.requests().len(), 1, "the model was not asked again");
    every_call_answered(&store, &thread.id);
    let last = store.messages(&thread.id).unwrap().pop().unwrap();
    assert_eq!(last.content.as_deref(), Some("noticed the stop"));
    assert_eq!(store.thread(&thread.id).unwrap().status, ThreadStatus::Idle);
}

/// A model whose first answer (`first`) arrives only once `release` is notified; it notifies
/// `asked` when the request comes. Later answers are `later`.
struct SlowModel {
    asked: Arc<Notify>,
    release: Arc<Notify>,
    requests: Mutex<usize>,
    first: ModelResponse,
    later: ModelResponse,
}

impl SlowModel {
    fn new(first: ModelResponse, later: ModelResponse) -> Arc<Self> {
        Arc::new(SlowModel {
            asked: Arc::new(Notify::new()),
            release: Arc::new(Notify::new()),
            requests: Mutex::new(0),
            first,
            later,
        })
    }
}

fn calls(name: &str) -> ModelResponse {
    ModelResponse {
        tool_calls: vec![ModelToolCall {
            id: "w1".into(),
            name: name.into(),
            arguments: "{}".into(),
        }],
        ..ModelResponse::default()
    }
}

fn text(text: &str) -> ModelResponse {
    ModelResponse {
        text: Some(text.into()),
        ..ModelResponse::default()
    }
}

impl Model for SlowModel {
    fn name(&self) -> &str {
        "slow"
    }

    fn complete<'a>(&'a self, _request: &'a ModelRequest) -> ModelFuture<'a> {
        Box::pin(async move {
            let n = {
                let mut n = self.requests.lock().unwrap();
                *n += 1;
                *n
            };
            if n > 1 {
                return Ok(self.later.clone());
            }
            self.asked.notify_one();
            within(
                "the test's release of the model's first answer",
                self.release.notified(),
            )
            .await;
            Ok(self.first.clone())
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_that_arrives_after_a_stop_is_not_stored_and_is_asked_for_again() {
    let project = one_prompt_project(&["ping"]);
    let slow = SlowModel::new(calls("ping"), text("done"));
    let (mut rt, store) = runtime_on(&project, ListModel::new(Vec::new())).await;
    rt.register_model("list", slow.clone());
    rt.register_tool(ping_tool());
    let rt = Arc::new(rt);
    let thread = rt.start_thread("a", "go").await.unwrap();
    let (runner, id) = (rt.clone(), thread.id.clone());
    let task = tokio::spawn(async move { runner.run(&id).await });
    within("the model's first request", slow.asked.notified()).await;
    assert!(rt.stop(&thread.id).await);
    slow.release.notify_one();
    assert_eq!(
        within("the end of the stopped run", task)
            .await
            .unwrap()
            .unwrap(),
        RunOutcome::Done(StopReason::Stopped)
    );
    // Only the user's message is stored: no reply whose call would never run.
    let messages = store.messages(&thread.id).unwrap();
    assert!(
        messages.iter().all(|m| m.role == Role::User),
        "{messages:?}"
    );
    let discarded: Vec<_> = store
        .events(&thread.id, 0)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == EventKind::ReplyDiscarded)
        .collect();
    assert_eq!(discarded.len(), 1);
    assert_eq!(discarded[0].data["tools"], serde_json::json!(["ping"]));
    assert_eq!(store.thread(&thread.id).unwrap().status, ThreadStatus::Idle);

    // Resumed, the thread asks again and goes on.
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    assert_eq!(*slow.requests.lock().unwrap(), 2);
    every_call_answered(&store, &thread.id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_calls_that_did_not_start_before_a_stop_are_not_started_after_it() {
    let project = one_prompt_project(&["wait"]);
    std::fs::write(
        project.root.join("agents/prompts/p.json"),
        r#"{"toolDescription": "x", "prompt": "Be brief.", "model": "list", "tools": ["wait"], "parallelToolCalls": true}"#,
    )
    .unwrap();
    let calls = (0..PARALLEL_CAP + 2)
        .map(|i| ModelToolCall {
            id: format!("w{i}"),
            name: "wait".into(),
            arguments: "{}".into(),
        })
        .collect();
    let model = ListModel::new(vec![
        Ok(ModelResponse {
            tool_calls: calls,
            ..ModelResponse::default()
        }),
        text_answer("done"),
    ]);
    let (mut rt, store) = runtime_on(&project, model.clone()).await;
    let started = Arc::new(AtomicUsize::new(0));
    let count = started.clone();
    rt.register_tool(
        DynamicTool::new("wait", "Waits until the run is stopped.")
            .parameters(serde_json::json!({"type": "object", "properties": {}}))
            .handler(
                move |_: serde_json::Value, ctx: toolhost_core::ToolContext| {
                    let count = count.clone();
                    async move {
                        count.fetch_add(1, Ordering::SeqCst);
                        while !ctx.abort_signal().is_aborted() {
                            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                        }
                        Ok::<_, ToolError>("noticed the stop".to_owned())
                    }
                },
            )
            .build()
            .unwrap(),
    );
    let rt = Arc::new(rt);
    let thread = rt.start_thread("a", "go").await.unwrap();
    let (runner, id) = (rt.clone(), thread.id.clone());
    let task = tokio::spawn(async move { runner.run(&id).await });
    within("the start of the first parallel calls", async {
        while started.load(Ordering::SeqCst) < PARALLEL_CAP {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(rt.stop(&thread.id).await);
    assert_eq!(
        within("the end of the stopped run", task)
            .await
            .unwrap()
            .unwrap(),
        RunOutcome::Done(StopReason::Stopped)
    );
    assert_eq!(started.load(Ordering::SeqCst), PARALLEL_CAP);
    let texts: Vec<String> = store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.unwrap())
        .collect();
    let mut expected = vec!["noticed the stop".to_owned(); PARALLEL_CAP];
    expected.extend(vec![NOT_RUN_STOPPED.to_owned(); 2]);
    assert_eq!(texts, expected);
    assert_eq!(model.requests().len(), 1);
    every_call_answered(&store, &thread.id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_between_refused_answers_ends_the_retries() {
    let project = one_prompt_project(&["ping"]);
    // Every answer is malformed (a call without a tool name).
    let slow = SlowModel::new(calls(""), calls(""));
    let (mut rt, store) = runtime_on(&project, ListModel::new(Vec::new())).await;
    rt.register_model("list", slow.clone());
    rt.register_tool(ping_tool());
    let rt = Arc::new(rt);
    let thread = rt.start_thread("a", "go").await.unwrap();
    let (runner, id) = (rt.clone(), thread.id.clone());
    let task = tokio::spawn(async move { runner.run(&id).await });
    within("the model's first request", slow.asked.notified()).await;
    assert!(rt.stop(&thread.id).await);
    slow.release.notify_one();
    assert_eq!(
        within("the end of the stopped run", task)
            .await
            .unwrap()
            .unwrap(),
        RunOutcome::Done(StopReason::Stopped)
    );
    assert_eq!(*slow.requests.lock().unwrap(), 1, "no retry after the stop");
    assert!(store
        .messages(&thread.id)
        .unwrap()
        .iter()
        .all(|m| m.role == Role::User));
    assert_eq!(store.thread(&thread.id).unwrap().status, ThreadStatus::Idle);
}
