//! A thread has one owner at a time: a second run is refused and changes nothing, work sent
//! meanwhile is taken up by the owner, a stop reaches the owner from another runtime, a dead or
//! expired owner is taken over, and a run that lost its lease cannot write another word.

mod common;

use common::{call_answer, one_prompt_project, runtime_on, text_answer, ListModel};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::AnyTool;
use toolhost_providers::{ModelError, ModelResponse};
use toolhost_runtime::engine::{
    owner_process, Delivery, OwnerId, RunOutcome, Runtime, RuntimeError, StopReason,
    OUTCOME_UNKNOWN,
};
use toolhost_store::{CallState, LeaseClaim, Role, SqliteStore, Store, StoreError};

/// How long a held tool or model waits for its release before it gives up.
const PATIENCE: Duration = Duration::from_secs(60);

/// Holds a tool call or model request under way until the test lets it go: whatever it holds
/// signals `entered` when it starts, then waits for [`Gate::release`] (once released, the gate
/// stays open).
struct Gate {
    entered: tokio::sync::Notify,
    released: tokio::sync::watch::Sender<bool>,
}

impl Gate {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            entered: tokio::sync::Notify::new(),
            released: tokio::sync::watch::channel(false).0,
        })
    }

    /// Waits until what the gate holds has started (at most [`PATIENCE`]).
    async fn entered(&self) {
        tokio::time::timeout(PATIENCE, self.entered.notified())
            .await
            .expect("nothing reached the gate");
    }

    fn release(&self) {
        self.released.send_replace(true);
    }

    /// Signals `entered`, then waits for the release, for `abort` when given, or [`PATIENCE`].
    async fn hold(&self, abort: Option<&toolhost_core::tool::AbortSignal>) {
        self.entered.notify_one();
        let mut released = self.released.subscribe();
        let give_up = tokio::time::Instant::now() + PATIENCE;
        while !*released.borrow_and_update()
            && !abort.is_some_and(|a| a.is_aborted())
            && tokio::time::Instant::now() < give_up
        {
            let _ = tokio::time::timeout(Duration::from_millis(10), released.changed()).await;
        }
    }
}

/// A tool that counts its runs; with a gate it is held there until released or aborted,
/// without one it answers at once.
fn slow_tool(gate: Option<&Arc<Gate>>, runs: &Arc<AtomicUsize>) -> AnyTool {
    let runs = runs.clone();
    let gate = gate.cloned();
    DynamicTool::new("slow", "Takes its time.")
        .parameters(serde_json::json!({"type": "object", "properties": {}}))
        .handler(
            move |_: serde_json::Value, ctx: toolhost_core::ToolContext| {
                let runs = runs.clone();
                let gate = gate.clone();
                async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    if let Some(gate) = gate {
                        gate.hold(Some(ctx.abort_signal())).await;
                    }
                    Ok::<_, ToolError>("slept".to_owned())
                }
            },
        )
        .build()
        .unwrap()
}

/// A second runtime on the same database file, as a second process would have.
fn second_runtime(project: &common::Project, model: Arc<ListModel>) -> Runtime {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = block_on(Runtime::load(&project.root, store)).unwrap();
    rt.register_model("list", model);
    rt
}

/// Two runtimes on one database file, as two processes would have, both offering `slow`,
/// held at `gate`.
struct Two {
    first: Runtime,
    second: Runtime,
    store: Arc<dyn Store>,
    model: Arc<ListModel>,
    runs: Arc<AtomicUsize>,
    gate: Arc<Gate>,
    // Last: the folder goes after the runtimes that use it. Bind it when taking the others
    // out, or it goes at once.
    project: common::Project,
}

/// [`Two`] whose model gives `answers`.
fn two_runtimes(answers: Vec<Result<ModelResponse, ModelError>>) -> Two {
    let project = one_prompt_project(&["slow"]);
    let model = ListModel::new(answers);
    let runs = Arc::new(AtomicUsize::new(0));
    let gate = Gate::new();
    let (mut first, store) = block_on(runtime_on(&project, model.clone()));
    first.register_tool(slow_tool(Some(&gate), &runs));
    let mut second = second_runtime(&project, model.clone());
    second.register_tool(slow_tool(Some(&gate), &runs));
    Two {
        first,
        second,
        store,
        model,
        runs,
        gate,
        project,
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn a_second_run_is_refused_while_the_first_owns_the_thread() {
    let Two {
        first,
        second,
        store,
        model,
        runs,
        gate,
        project: _project,
    } = two_runtimes(vec![call_answer("c1", "slow", "{}"), text_answer("done")]);
    let thread = block_on(first.start_thread("a", "go")).unwrap();

    let (a, b) = block_on(async {
        tokio::join!(first.run(&thread.id), async {
            // The first run is inside its `slow` call.
            gate.entered().await;
            let before = store.messages(&thread.id).unwrap();
            let refused = second.run(&thread.id).await;
            gate.release();
            (refused, before)
        })
    });
    let (refused, before) = b;
    assert_eq!(a.unwrap(), RunOutcome::Done(StopReason::Response));
    match refused {
        Err(RuntimeError::ThreadBusy { thread: t, lease }) => {
            assert_eq!(t, thread.id);
            let (_, pid) = owner_process(&lease.owner).expect("owner names its process");
            assert_eq!(pid, std::process::id());
        }
        other => panic!("the second run was let in: {other:?}"),
    }
    let messages = store.messages(&thread.id).unwrap();
    assert!(messages.len() > before.len(), "the first run went on");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the tool ran once");
    assert!(
        !messages
            .iter()
            .any(|m| m.content.as_deref() == Some(OUTCOME_UNKNOWN)),
        "no call was declared unknown while it ran"
    );
    assert_eq!(model.requests().len(), 2);
    assert_eq!(
        store.lease(&thread.id).unwrap(),
        None,
        "released at the end"
    );
}

#[test]
fn a_message_sent_while_the_thread_runs_is_taken_by_its_owner() {
    let Two {
        first,
        second,
        store,
        model,
        gate,
        project: _project,
        ..
    } = two_runtimes(vec![
        call_answer("c1", "slow", "{}"),
        text_answer("answer to both"),
        text_answer("answer to the third"),
    ]);
    let thread = block_on(first.start_thread("a", "first")).unwrap();

    let (ran, sent) = block_on(async {
        tokio::join!(first.run(&thread.id), async {
            gate.entered().await;
            let sent = second.send(&thread.id, "second").await;
            gate.release();
            sent
        })
    });
    assert_eq!(ran.unwrap(), RunOutcome::Done(StopReason::Response));
    assert!(matches!(sent.unwrap(), Delivery::Queued(_)));
    // The owner asked the model once more, with the queued message in the conversation.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(format!("{:?}", requests[1]).contains("second"));

    // Sent to an idle thread, a message runs the next turn at once.
    let third = block_on(second.send(&thread.id, "third")).unwrap();
    assert_eq!(third, Delivery::Ran(RunOutcome::Done(StopReason::Response)));
    let texts: Vec<(Role, String)> = store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .filter(|m| m.role != Role::Tool && m.content.is_some())
        .map(|m| (m.role, m.content.unwrap()))
        .collect();
    let expected = [
        (Role::User, "first"),
        (Role::User, "second"),
        (Role::Assistant, "answer to both"),
        (Role::User, "third"),
        (Role::Assistant, "answer to the third"),
    ];
    let texts: Vec<(Role, &str)> = texts.iter().map(|(r, t)| (*r, t.as_str())).collect();
    assert_eq!(texts, expected);
    assert!(store.queued(&thread.id).unwrap().is_empty());
}

#[test]
fn a_stop_from_another_runtime_reaches_the_owner() {
    let Two {
        first,
        second,
        store,
        model,
        runs,
        gate,
        project,
    } = two_runtimes(vec![
        call_answer("c1", "slow", "{}"),
        call_answer("c2", "slow", "{}"),
        text_answer("never"),
    ]);
    let thread = block_on(first.start_thread("a", "go")).unwrap();

    // `slow` is not released: it ends when the stop reaches it as its abort signal.
    let (ran, asked) = block_on(async {
        tokio::join!(first.run(&thread.id), async {
            gate.entered().await;
            second.stop(&thread.id).await
        })
    });
    assert!(asked, "the stop found the owner");
    assert_eq!(ran.unwrap(), RunOutcome::Done(StopReason::Stopped));
    assert_eq!(model.requests().len(), 1, "no model request after the stop");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(
        !block_on(second.stop(&thread.id)),
        "nobody owns it any more"
    );
    // The next owner starts without the old request.
    let mut resumed = second_runtime(&project, model.clone());
    resumed.register_tool(slow_tool(None, &runs));
    let again = block_on(resumed.run(&thread.id)).unwrap();
    assert_eq!(again, RunOutcome::Done(StopReason::Response));
    assert_eq!(store.lease(&thread.id).unwrap(), None);
}

#[test]
fn an_expired_lease_is_taken_over_and_a_dead_owner_at_once() {
    let project = one_prompt_project(&[]);
    let model = ListModel::new(vec![text_answer("one"), text_answer("two")]);
    let (rt, store) = block_on(runtime_on(&project, model));
    let thread = block_on(rt.start_thread("a", "go")).unwrap();

    // Another machine's run, which stopped renewing.
    store
        .claim(
            &thread.id,
            &LeaseClaim {
                owner: "elsewhere:4242:abcdef01".into(),
                ttl_ms: 600_000,
                replacing: None,
            },
        )
        .unwrap();
    assert!(matches!(
        block_on(rt.run(&thread.id)),
        Err(RuntimeError::ThreadBusy { .. })
    ));
    // Its last renewal was for a millisecond, which has passed.
    store
        .renew(&thread.id, "elsewhere:4242:abcdef01", 1)
        .unwrap();
    std::thread::sleep(Duration::from_millis(10));
    assert_eq!(
        block_on(rt.run(&thread.id)).unwrap(),
        RunOutcome::Done(StopReason::Response)
    );

    // A process of this host that is gone: taken over without waiting for the lease.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = child.id();
    child.wait().unwrap();
    let this = OwnerId::new();
    let (host, _) = owner_process(this.as_str()).unwrap();
    store
        .claim(
            &thread.id,
            &LeaseClaim {
                owner: format!("{host}:{dead_pid}:deadbeef"),
                ttl_ms: 600_000,
                replacing: None,
            },
        )
        .unwrap();
    block_on(rt.queue_message(&thread.id, "again")).unwrap();
    assert_eq!(
        block_on(rt.run(&thread.id)).unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
}

#[test]
fn a_run_that_lost_its_lease_writes_nothing_more() {
    let project = one_prompt_project(&["slow"]);
    let model = ListModel::new(vec![call_answer("c1", "slow", "{}"), text_answer("done")]);
    let runs = Arc::new(AtomicUsize::new(0));
    let gate = Gate::new();
    let (mut rt, store) = block_on(runtime_on(&project, model));
    rt.register_tool(slow_tool(Some(&gate), &runs));
    let thread = block_on(rt.start_thread("a", "go")).unwrap();

    // `slow` is not released: it ends when the lost lease raises its abort signal.
    let (ran, ()) = block_on(async {
        tokio::join!(rt.run(&thread.id), async {
            // The run has journaled its call's intent and is inside it.
            gate.entered().await;
            let owner = store.lease(&thread.id).unwrap().unwrap().owner;
            store
                .claim(
                    &thread.id,
                    &LeaseClaim {
                        owner: "thief:1:00000000".into(),
                        ttl_ms: 600_000,
                        replacing: Some(owner),
                    },
                )
                .unwrap();
        })
    });
    match ran {
        Err(RuntimeError::Store(StoreError::LeaseLost { .. })) => {}
        other => panic!("a run without its lease went on: {other:?}"),
    }
    let calls = store.calls(&thread.id).unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].state,
        CallState::Intent,
        "its result was not written"
    );
    assert!(store
        .messages(&thread.id)
        .unwrap()
        .iter()
        .all(|m| m.role != Role::Tool));
    assert_eq!(
        store.lease(&thread.id).unwrap().unwrap().owner,
        "thief:1:00000000"
    );
}

/// A model held at `gate` before it answers like the list model it wraps.
struct SlowModel {
    inner: Arc<ListModel>,
    gate: Arc<Gate>,
}

impl toolhost_providers::Model for SlowModel {
    fn name(&self) -> &str {
        "slow-list"
    }

    fn complete<'a>(
        &'a self,
        request: &'a toolhost_providers::ModelRequest,
    ) -> toolhost_providers::ModelFuture<'a> {
        Box::pin(async move {
            self.gate.hold(None).await;
            self.inner.complete(request).await
        })
    }
}

#[test]
fn a_stop_while_the_model_answers_leaves_no_call_of_unknown_outcome() {
    let project = one_prompt_project(&["slow"]);
    let list = ListModel::new(vec![call_answer("c1", "slow", "{}"), text_answer("done")]);
    let runs = Arc::new(AtomicUsize::new(0));
    let gate = Gate::new();
    let (mut rt, store) = block_on(runtime_on(&project, list.clone()));
    rt.register_model(
        "list",
        Arc::new(SlowModel {
            inner: list.clone(),
            gate: gate.clone(),
        }),
    );
    rt.register_tool(slow_tool(None, &runs));
    let thread = block_on(rt.start_thread("a", "go")).unwrap();
    let (ran, asked) = block_on(async {
        tokio::join!(rt.run(&thread.id), async {
            // The model was asked; it answers once the stop was given.
            gate.entered().await;
            let asked = rt.stop(&thread.id).await;
            gate.release();
            asked
        })
    });
    assert!(asked);
    assert_eq!(ran.unwrap(), RunOutcome::Done(StopReason::Stopped));
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the call never started");
    // The answer that arrived after the stop is not kept: no reply whose call would never run.
    assert!(store
        .messages(&thread.id)
        .unwrap()
        .iter()
        .all(|m| m.role == Role::User));
    assert!(store
        .events(&thread.id, 0)
        .unwrap()
        .iter()
        .any(|e| e.kind == toolhost_store::EventKind::ReplyDiscarded));
    // Resumed, the model is asked again, and never hears of a call of unknown outcome.
    assert_eq!(
        block_on(rt.run(&thread.id)).unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    assert!(store
        .messages(&thread.id)
        .unwrap()
        .iter()
        .all(|m| m.content.as_deref() != Some(OUTCOME_UNKNOWN)));
}

#[test]
fn a_run_whose_lease_was_taken_over_in_its_own_process_cannot_write() {
    let project = one_prompt_project(&["slow"]);
    let model = ListModel::new(vec![call_answer("c1", "slow", "{}"), text_answer("done")]);
    let runs = Arc::new(AtomicUsize::new(0));
    let gate = Gate::new();
    let (mut rt, store) = block_on(runtime_on(&project, model));
    rt.register_tool(slow_tool(Some(&gate), &runs));
    let thread = block_on(rt.start_thread("a", "go")).unwrap();
    // `slow` is not released: the first run's call ends when its lost lease raises its abort
    // signal.
    let (first, second) = block_on(async {
        tokio::join!(rt.run(&thread.id), async {
            // The first run has journaled its call's intent and is inside it.
            gate.entered().await;
            // The first run's lease lapses (say its renewals stalled) ...
            let owner = store.lease(&thread.id).unwrap().unwrap().owner;
            store
                .claim(
                    &thread.id,
                    &LeaseClaim {
                        owner: "lapsed:1:00000000".into(),
                        ttl_ms: 1,
                        replacing: Some(owner),
                    },
                )
                .unwrap();
            tokio::time::sleep(Duration::from_millis(10)).await;
            // ... and a second run of the same runtime takes the thread.
            rt.run(&thread.id).await
        })
    });
    match first {
        Err(RuntimeError::Store(StoreError::LeaseLost { .. })) => {}
        other => panic!("the first run wrote without its lease: {other:?}"),
    }
    assert_eq!(second.unwrap(), RunOutcome::Done(StopReason::Response));
    let results: Vec<_> = store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::Tool)
        .collect();
    assert_eq!(results.len(), 1, "one result, written by the owner");
    assert_eq!(results[0].content.as_deref(), Some(OUTCOME_UNKNOWN));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn variables_given_while_the_owner_runs_are_taken_up_when_it_asks_for_them() {
    let project = one_prompt_project(&["slow", "regional"]);
    let model = ListModel::new(vec![
        call_answer("c1", "slow", "{}"),
        call_answer("c2", "regional", "{}"),
        text_answer("done"),
    ]);
    let runs = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(std::sync::Mutex::new(None::<String>));
    let regional = {
        let seen = seen.clone();
        DynamicTool::new("regional", "Needs REGION.")
            .parameters(serde_json::json!({"type": "object", "properties": {}}))
            .variable(toolhost_core::variables::VariableDecl::text("REGION"))
            .handler(
                move |_: serde_json::Value, ctx: toolhost_core::ToolContext| {
                    let seen = seen.clone();
                    async move {
                        let state = ctx.get::<toolhost_runtime::engine::ThreadState>().unwrap();
                        *seen.lock().unwrap() = state.env("REGION").map(str::to_owned);
                        Ok::<_, ToolError>("ok".to_owned())
                    }
                },
            )
            .build()
            .unwrap()
    };
    let gate = Gate::new();
    let (mut rt, store) = block_on(runtime_on(&project, model.clone()));
    rt.register_tool(slow_tool(Some(&gate), &runs));
    rt.register_tool(regional.clone());
    let mut other = second_runtime(&project, model.clone());
    other.register_tool(regional);
    let thread = block_on(rt.start_thread("a", "go")).unwrap();
    let (ran, given) = block_on(async {
        tokio::join!(rt.run(&thread.id), async {
            gate.entered().await;
            let given = other
                .set_variables(
                    &thread.id,
                    vec![toolhost_runtime::variables::VariableValue::text(
                        "REGION", "north",
                    )],
                )
                .await;
            gate.release();
            given
        })
    });
    given.unwrap();
    assert_eq!(ran.unwrap(), RunOutcome::Done(StopReason::Response));
    assert_eq!(seen.lock().unwrap().as_deref(), Some("north"));
    assert!(store
        .variable_requests(&thread.id)
        .unwrap()
        .iter()
        .all(|r| r.answered_at.is_some()));
}

#[test]
fn the_leases_of_many_runs_at_once_are_kept_while_they_run() {
    const RUNS: usize = 8;
    let ttl = Duration::from_millis(1500);
    let mut answers: Vec<_> = (0..RUNS)
        .map(|i| call_answer(&format!("c{i}"), "slow", "{}"))
        .collect();
    answers.extend((0..RUNS).map(|_| text_answer("done")));
    let Two {
        mut first,
        store,
        runs,
        gate,
        project: _project,
        ..
    } = two_runtimes(answers);
    first.set_lease_ttl(ttl);
    block_on(async {
        let mut threads = Vec::new();
        for _ in 0..RUNS {
            threads.push(first.start_thread("a", "go").await.unwrap().id);
        }
        let all = futures::future::join_all(threads.iter().map(|t| first.run(t)));
        let (outcomes, ()) = tokio::join!(all, async {
            // Every run holds its thread inside `slow`...
            while runs.load(Ordering::SeqCst) < RUNS {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            // ...for several lives of a lease: each is still held by its run, renewed.
            tokio::time::sleep(ttl * 3).await;
            let now = toolhost_store::now_millis();
            for t in &threads {
                let lease = store.lease(t).unwrap().expect("the run holds its thread");
                assert!(
                    lease.is_live(now),
                    "the lease of {t} lapsed while its run ran"
                );
                assert!(lease.since + (ttl * 3).as_millis() as i64 <= now);
            }
            gate.release();
        });
        for outcome in outcomes {
            assert_eq!(outcome.unwrap(), RunOutcome::Done(StopReason::Response));
        }
        for t in &threads {
            assert_eq!(store.lease(t).unwrap(), None, "given up when the run ended");
        }
    });
}
