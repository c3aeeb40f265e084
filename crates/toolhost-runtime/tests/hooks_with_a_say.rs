//! Hooks with a say over a call (catalogue AN-11, AN-13): a hook before the call, after input
//! middleware and the approval decision, lets it run, skips it with a result the model sees,
//! or cancels the run; a hook after a failed call may end the run. Each outcome is recorded on
//! the call's result.

mod common;

use common::{call_answer, one_prompt_project, runtime_on, text_answer, ListModel};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use toolhost_core::approval::Approval;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::ToolResult;
use toolhost_runtime::engine::{
    AfterFailure, BeforeCall, CallInfo, HookError, Runtime, RuntimeError, ToolHooks, Verdict,
};
use toolhost_store::{HookOutcome, Role, Store, ThreadStatus};

/// Skips `pay` calls of more than 100, cancels the run at `refund`, ends the run after a
/// failed `fail`; records the arguments it was shown.
struct Gatekeeper {
    shown: Arc<Mutex<Vec<Value>>>,
}

impl ToolHooks for Gatekeeper {
    fn before_call(&self, call: &CallInfo, args: &Value) -> Result<BeforeCall, HookError> {
        self.shown.lock().unwrap().push(args.clone());
        Ok(match call.tool.as_str() {
            "pay" if args["amount"].as_i64() > Some(100) => {
                BeforeCall::Skip("Payments over 100 need a second signature.".into())
            }
            "refund" => BeforeCall::Cancel("refunds are closed today".into()),
            _ => BeforeCall::Run,
        })
    }
    fn after_failure(&self, call: &CallInfo, _: &ToolResult) -> Result<AfterFailure, HookError> {
        Ok(if call.tool == "fail" {
            AfterFailure::EndRun("the ledger is inconsistent".into())
        } else {
            AfterFailure::GoOn
        })
    }
}

fn counting(name: &str, runs: Arc<AtomicUsize>, fails: bool) -> toolhost_core::AnyTool {
    DynamicTool::new(name, "Counts.")
        .parameters(json!({"type": "object", "properties": {"amount": {"type": "integer"}}}))
        .handler(move |_: Value, _| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                if fails {
                    return Err(ToolError::new("ledger write failed"));
                }
                Ok::<_, ToolError>("done".to_owned())
            }
        })
        .build()
        .unwrap()
}

struct Setup {
    rt: Runtime,
    store: Arc<dyn Store>,
    runs: Arc<AtomicUsize>,
    shown: Arc<Mutex<Vec<Value>>>,
    _project: common::Project,
}

async fn setup(
    answers: Vec<Result<toolhost_providers::ModelResponse, toolhost_providers::ModelError>>,
    approve_pay: bool,
) -> Setup {
    let project = one_prompt_project(&["pay", "refund", "fail"]);
    let (mut rt, store) = runtime_on(&project, ListModel::new(answers)).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let mut pay = DynamicTool::new("pay", "Pays.")
        .parameters(json!({"type": "object", "properties": {"amount": {"type": "integer"}}}))
        .handler({
            let runs = runs.clone();
            move |_: Value, _| {
                let runs = runs.clone();
                async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, ToolError>("paid".to_owned())
                }
            }
        });
    if approve_pay {
        pay = pay.approval(Approval::always());
    }
    rt.register_tool(pay.build().unwrap());
    rt.register_tool(counting("refund", runs.clone(), false));
    rt.register_tool(counting("fail", runs.clone(), true));
    let shown = Arc::new(Mutex::new(Vec::new()));
    rt.add_tool_hooks(Arc::new(Gatekeeper {
        shown: shown.clone(),
    }));
    Setup {
        rt,
        store,
        runs,
        shown,
        _project: project,
    }
}

fn results(store: &Arc<dyn Store>, thread: &str) -> Vec<toolhost_store::Message> {
    store
        .messages(thread)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::Tool)
        .collect()
}

#[tokio::test]
async fn a_skipped_call_is_answered_with_the_hooks_reason_and_does_not_run() {
    let s = setup(
        vec![
            call_answer("w1", "pay", r#"{"amount": 500}"#),
            call_answer("w2", "pay", r#"{"amount": 5}"#),
            text_answer("done"),
        ],
        false,
    )
    .await;
    let thread = s.rt.start_thread("a", "pay").await.unwrap();
    s.rt.run(&thread.id).await.unwrap();
    assert_eq!(
        s.runs.load(Ordering::SeqCst),
        1,
        "only the small payment ran"
    );
    let results = results(&s.store, &thread.id);
    assert_eq!(
        results[0].content.as_deref(),
        Some("Payments over 100 need a second signature.")
    );
    assert_eq!(
        results[0].metadata.hook,
        Some(HookOutcome::Skipped {
            reason: "Payments over 100 need a second signature.".into()
        })
    );
    assert_eq!(results[1].content.as_deref(), Some("paid"));
    assert_eq!(results[1].metadata.hook, None);
}

#[tokio::test]
async fn the_hook_before_a_call_sees_it_after_the_approval_decision() {
    // The call waits for approval first; only once approved does the hook see it.
    let s = setup(
        vec![
            call_answer("w1", "pay", r#"{"amount": 500}"#),
            text_answer("done"),
        ],
        true,
    )
    .await;
    let thread = s.rt.start_thread("a", "pay").await.unwrap();
    s.rt.run(&thread.id).await.unwrap();
    assert!(
        s.shown.lock().unwrap().is_empty(),
        "not before the decision"
    );
    let request = s.store.approvals(&thread.id).unwrap().remove(0).request;
    s.rt.decide(&thread.id, &request.call_id, Verdict::approve("ann"))
        .await
        .unwrap();
    s.rt.run(&thread.id).await.unwrap();
    assert_eq!(*s.shown.lock().unwrap(), vec![json!({"amount": 500})]);
    assert_eq!(
        s.runs.load(Ordering::SeqCst),
        0,
        "approved, then skipped by the hook"
    );
}

#[tokio::test]
async fn a_hook_that_cancels_stops_the_run_and_the_thread_can_go_on() {
    let s = setup(
        vec![call_answer("w1", "refund", "{}"), text_answer("done")],
        false,
    )
    .await;
    let thread = s.rt.start_thread("a", "refund").await.unwrap();
    let error = s.rt.run(&thread.id).await.unwrap_err();
    assert!(
        matches!(&error, RuntimeError::Cancelled { tool, reason } if tool == "refund" && reason == "refunds are closed today"),
        "{error}"
    );
    assert_eq!(s.runs.load(Ordering::SeqCst), 0);
    let results = results(&s.store, &thread.id);
    assert_eq!(
        results[0].metadata.hook,
        Some(HookOutcome::Cancelled {
            reason: "refunds are closed today".into()
        })
    );
    assert!(results[0]
        .content
        .as_deref()
        .unwrap()
        .contains("a hook cancelled it"));
    assert_eq!(
        s.store.thread(&thread.id).unwrap().status,
        ThreadStatus::Idle
    );
}

#[tokio::test]
async fn a_hook_after_a_failure_may_end_the_run_and_the_failure_is_stored() {
    let s = setup(
        vec![call_answer("w1", "fail", "{}"), text_answer("done")],
        false,
    )
    .await;
    let thread = s.rt.start_thread("a", "fail").await.unwrap();
    let error = s.rt.run(&thread.id).await.unwrap_err();
    assert!(
        matches!(&error, RuntimeError::EndedByHook { tool, .. } if tool == "fail"),
        "{error}"
    );
    assert_eq!(s.runs.load(Ordering::SeqCst), 1);
    let results = results(&s.store, &thread.id);
    assert!(results[0]
        .content
        .as_deref()
        .unwrap()
        .contains("ledger write failed"));
    assert_eq!(
        results[0].metadata.hook,
        Some(HookOutcome::RunEnded {
            reason: "the ledger is inconsistent".into()
        })
    );
    assert_eq!(
        s.store.thread(&thread.id).unwrap().status,
        ThreadStatus::Failed
    );
    let messages = s.store.messages(&thread.id).unwrap();
    assert!(!messages
        .iter()
        .any(|m| m.content.as_deref() == Some("done")));
}
