//! Approvals as spec 003 defines them: `reason` and `rejectMessage` may be computed from the
//! call; a decision may carry its own reason, and a rejection's text is the decision's message,
//! else its reason, else the policy's reject message, else "Tool approval was rejected."
//! (AN-12); a request may bring its own approval handler, which wins over the runtime's, and a
//! policy for one request only; an error raised while evaluating `when`, `reason` or
//! `rejectMessage` stops the run with an error naming the tool.

mod common;

use common::{call_answer, one_prompt_project, runtime_on, text_answer, ListModel};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use toolhost_core::approval::Approval;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_runtime::engine::{
    ApprovalHandler, RunOutcome, RunRequest, Runtime, RuntimeError, Verdict, VerdictFuture, Waiting,
};
use toolhost_store::{ApprovalRequest, Role, Store, ThreadStatus};

fn pay(runs: Arc<AtomicUsize>, policy: Option<Approval>) -> toolhost_core::AnyTool {
    let mut tool = DynamicTool::new("pay", "Pays.")
        .parameters(json!({"type": "object", "properties": {"amount": {"type": "integer"}}}))
        .handler(move |args: Value, _| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>(format!("paid {}", args["amount"]))
            }
        });
    if let Some(policy) = policy {
        tool = tool.approval(policy);
    }
    tool.build().unwrap()
}

async fn runtime(
    policy: Option<Approval>,
) -> (Runtime, Arc<dyn Store>, Arc<AtomicUsize>, common::Project) {
    let project = one_prompt_project(&["pay"]);
    // Enough answers for two threads run one after the other: each calls `pay`, then answers.
    let model = ListModel::new(vec![
        call_answer("w1", "pay", r#"{"amount": 50}"#),
        call_answer("w2", "pay", r#"{"amount": 50}"#),
        text_answer("done"),
    ]);
    let (mut rt, store) = runtime_on(&project, model).await;
    let runs = Arc::new(AtomicUsize::new(0));
    rt.register_tool(pay(runs.clone(), policy));
    (rt, store, runs, project)
}

fn result_text(store: &Arc<dyn Store>, thread: &str) -> String {
    store
        .messages(thread)
        .unwrap()
        .into_iter()
        .find(|m| m.role == Role::Tool)
        .and_then(|m| m.content)
        .unwrap()
}

/// Waits at the call, then records `verdict` and runs on; returns the call's result text.
async fn decided(policy: Approval, verdict: Verdict) -> (String, ApprovalRequest) {
    let (rt, store, _, _p) = runtime(Some(policy)).await;
    let thread = rt.start_thread("a", "pay").await.unwrap();
    let RunOutcome::Paused(Waiting::Approval(request)) = rt.run(&thread.id).await.unwrap() else {
        panic!("the call did not wait for approval")
    };
    rt.decide(&thread.id, &request.call_id, verdict)
        .await
        .unwrap();
    rt.run(&thread.id).await.unwrap();
    (result_text(&store, &thread.id), request)
}

fn computed() -> Approval {
    Approval::always()
        .with_reason_fn(|c| Ok(format!("pays {} from the shared account", c.args["amount"])))
        .with_reject_message_fn(|c| Ok(format!("Paying {} was refused.", c.args["amount"])))
}

#[tokio::test]
async fn reason_and_reject_message_are_computed_from_the_call() {
    let (text, request) = decided(computed(), Verdict::deny("ann", None)).await;
    assert_eq!(
        request.reason.as_deref(),
        Some("pays 50 from the shared account")
    );
    assert_eq!(
        request.reject_message.as_deref(),
        Some("Paying 50 was refused.")
    );
    assert_eq!(text, "Paying 50 was refused.");
}

#[tokio::test]
async fn a_rejection_says_the_message_else_the_decisions_reason_else_the_policys_text() {
    let with_both = Verdict {
        reason: Some("over budget".into()),
        ..Verdict::deny("ann", Some("Not today.".into()))
    };
    assert_eq!(decided(computed(), with_both).await.0, "Not today.");
    let reason_only = Verdict {
        reason: Some("over budget".into()),
        ..Verdict::deny("ann", None)
    };
    assert_eq!(decided(computed(), reason_only).await.0, "over budget");
    assert_eq!(
        decided(computed(), Verdict::deny("ann", None)).await.0,
        "Paying 50 was refused."
    );
    assert_eq!(
        decided(Approval::always(), Verdict::deny("ann", None))
            .await
            .0,
        "Tool approval was rejected."
    );
}

/// Decides every request at once: approves or denies, saying who it is.
struct Handler {
    approves: bool,
    name: &'static str,
}

impl ApprovalHandler for Handler {
    fn decide<'a>(&'a self, _: &'a str, _: &'a ApprovalRequest) -> VerdictFuture<'a> {
        Box::pin(async move {
            Some(if self.approves {
                Verdict::approve(self.name)
            } else {
                Verdict::deny(self.name, Some(format!("denied by the {}", self.name)))
            })
        })
    }
}

#[tokio::test]
async fn a_requests_own_handler_wins_over_the_runtimes() {
    let (mut rt, store, runs, _p) = runtime(Some(Approval::always())).await;
    rt.set_approval_handler(Arc::new(Handler {
        approves: true,
        name: "runtime handler",
    }));
    let thread = rt.start_thread("a", "pay").await.unwrap();
    let request = RunRequest::default().with_approval_handler(Arc::new(Handler {
        approves: false,
        name: "request handler",
    }));
    rt.run_with(&thread.id, request).await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(
        result_text(&store, &thread.id),
        "denied by the request handler"
    );
    let decision = store
        .approvals(&thread.id)
        .unwrap()
        .remove(0)
        .decision
        .unwrap();
    assert_eq!(decision.decided_by, "request handler");
}

#[tokio::test]
async fn a_policy_given_with_a_request_applies_to_that_request_only() {
    // The tool needs no approval of its own; the request asks for one.
    let (rt, store, runs, _p) = runtime(None).await;
    let thread = rt.start_thread("a", "pay").await.unwrap();
    let request = RunRequest::default().with_approval(
        "pay",
        Approval::always().with_reason("this request checks payments"),
    );
    let outcome = rt.run_with(&thread.id, request).await.unwrap();
    let RunOutcome::Paused(Waiting::Approval(asked)) = outcome else {
        panic!("expected a pause, got {outcome:?}")
    };
    assert_eq!(
        asked.reason.as_deref(),
        Some("this request checks payments")
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // Another thread of the same runtime, run without the request, runs the call at once.
    let other = rt.start_thread("a", "pay").await.unwrap();
    rt.run(&other.id).await.unwrap();
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "{:#?}",
        store.messages(&other.id).unwrap()
    );
    assert!(store.approvals(&other.id).unwrap().is_empty());
}

async fn failing_policy(policy: Approval, part: &str) {
    let (rt, store, runs, _p) = runtime(Some(policy)).await;
    let thread = rt.start_thread("a", "pay").await.unwrap();
    let error = rt.run(&thread.id).await.unwrap_err();
    match &error {
        RuntimeError::ApprovalPolicy {
            tool,
            part: failed,
            message,
        } => {
            assert_eq!((tool.as_str(), *failed), ("pay", part));
            assert!(message.contains("cannot decide"), "{message}");
        }
        other => panic!("expected an approval policy error, got {other}"),
    }
    assert!(error.to_string().contains("\"pay\""), "{error}");
    assert_eq!(
        store.thread(&thread.id).unwrap().status,
        ThreadStatus::Failed
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert!(result_text(&store, &thread.id).starts_with("the call was not run"));
}

#[tokio::test]
async fn an_error_in_when_reason_or_reject_message_stops_the_run_naming_the_tool() {
    failing_policy(
        Approval::try_when(|_| Err("cannot decide: no budget".into())),
        "when",
    )
    .await;
    failing_policy(
        Approval::always().with_reason_fn(|_| Err("cannot decide the words".into())),
        "reason",
    )
    .await;
    failing_policy(
        Approval::always().with_reject_message_fn(|_| Err("cannot decide the words".into())),
        "rejectMessage",
    )
    .await;
}
