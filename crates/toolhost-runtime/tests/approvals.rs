//! Calls that need approval: the thread pauses durably at the call until a decision arrives; a
//! decision is bound to the call, its arguments and the tool definition, and every request and
//! decision is recorded.

mod common;

use common::{tool_texts, Project};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};
use toolhost_core::approval::Approval;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::AnyTool;
use toolhost_runtime::engine::{
    ApprovalHandler, RunOutcome, Runtime, StopReason, Verdict, VerdictFuture, Waiting,
    CHANGED_WHILE_WAITING,
};
use toolhost_store::{ApprovalRequest, Role, SqliteStore, Store, StoreError};

fn new_project(script: &str) -> Project {
    Project::with_files(&[
        (
            "agents/agents/clerk.json",
            r#"{"type": "ai_human", "sideA": {"prompt": "clerk"}}"#,
        ),
        (
            "agents/prompts/clerk.json",
            r#"{"toolDescription": "Pays.", "prompt": "You pay.", "model": "scripted", "tools": ["log", "pay"]}"#,
        ),
        (
            "agents/models/scripted.json",
            r#"{"provider": "test", "script": "script.jsonl"}"#,
        ),
        ("script.jsonl", script),
    ])
}

type Ran = Arc<Mutex<Vec<String>>>;

/// A tool that records each run as "NAME ARGS".
fn recording(name: &str, description: &str, ran: &Ran) -> DynamicTool {
    let ran = ran.clone();
    let label = name.to_owned();
    DynamicTool::new(name, description)
        .parameters(json!({
            "type": "object",
            "properties": {"amount": {"type": "integer", "minimum": 1}, "n": {"type": "integer"}},
        }))
        .handler(move |args: Value, _ctx| {
            let ran = ran.clone();
            let label = label.clone();
            async move {
                ran.lock().unwrap().push(format!("{label} {args}"));
                Ok::<_, ToolError>("done")
            }
        })
}

fn pay_tool(ran: &Ran, description: &str) -> AnyTool {
    recording("pay", description, ran)
        .approval(
            Approval::when(|ctx| ctx.args["amount"].as_i64().unwrap_or(0) > 10)
                .with_reason("moves more than 10")
                .with_reject_message("The payment was not approved."),
        )
        .build()
        .unwrap()
}

async fn runtime(root: &Path, store: Arc<dyn Store>, ran: &Ran) -> Runtime {
    let mut rt = Runtime::load(root, store).await.unwrap();
    rt.register_tool(recording("log", "Logs.", ran).build().unwrap());
    rt.register_tool(pay_tool(ran, "Pays."));
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    rt
}

const SCRIPT: &str = r#"
{"toolCalls": [{"name": "log", "arguments": {"n": 1}}, {"name": "pay", "arguments": {"amount": 50}}, {"name": "log", "arguments": {"n": 2}}]}
{"text": "Finished."}
"#;

fn open(project: &Project) -> Arc<dyn Store> {
    Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap())
}

async fn paused_at_pay(
    rt: &Runtime,
    store: &Arc<dyn Store>,
    ran: &Ran,
) -> (String, ApprovalRequest) {
    let thread = rt.start_thread("clerk", "pay the bill").await.unwrap();
    let outcome = rt.run(&thread.id).await.unwrap();
    let RunOutcome::Paused(Waiting::Approval(request)) = outcome else {
        panic!("expected a pause for approval, got {outcome:?}");
    };
    assert_eq!(request.tool, "pay");
    assert_eq!(request.arguments, json!({"amount": 50}));
    assert_eq!(request.reason.as_deref(), Some("moves more than 10"));
    // The call before it ran; the call after it waits with it.
    assert_eq!(*ran.lock().unwrap(), vec![r#"log {"n":1}"#.to_owned()]);
    assert_eq!(
        store.thread(&thread.id).unwrap().status,
        toolhost_store::ThreadStatus::Paused
    );
    (thread.id, request)
}

#[tokio::test]
async fn a_call_waits_durably_and_runs_once_approved_also_after_a_restart() {
    let project = new_project(SCRIPT);
    let ran: Ran = Default::default();
    let store = open(&project);
    let rt = runtime(&project.root, store.clone(), &ran).await;
    let (thread, request) = paused_at_pay(&rt, &store, &ran).await;
    // Running again without a decision changes nothing.
    assert!(matches!(
        rt.run(&thread).await.unwrap(),
        RunOutcome::Paused(Waiting::Approval(_))
    ));
    drop(rt);
    drop(store);

    // Another runtime on the same file (as after a restart) decides and continues.
    let store = open(&project);
    let rt = runtime(&project.root, store.clone(), &ran).await;
    rt.decide(&thread, &request.call_id, Verdict::approve("alice"))
        .await
        .unwrap();
    assert_eq!(
        rt.run(&thread).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    assert_eq!(
        *ran.lock().unwrap(),
        vec![
            r#"log {"n":1}"#.to_owned(),
            r#"pay {"amount":50}"#.to_owned(),
            r#"log {"n":2}"#.to_owned()
        ]
    );
    // A decision is made once: replaying it is refused.
    let replay = rt
        .decide(&thread, &request.call_id, Verdict::approve("mallory"))
        .await;
    assert!(matches!(
        replay,
        Err(toolhost_runtime::engine::RuntimeError::Store(
            StoreError::DecisionRefused { .. }
        ))
    ));
    // The request and the decision are recorded with who decided, and shown as events.
    let records = store.approvals(&thread).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].decision.as_ref().unwrap().decided_by, "alice");
    let kinds: Vec<String> = store
        .events(&thread, 0)
        .unwrap()
        .into_iter()
        .map(|e| e.kind.to_string())
        .collect();
    assert_eq!(kinds, vec!["approval_requested", "approval_decided"]);
}

#[tokio::test]
async fn a_denial_tells_the_model_the_message_or_the_policy_text() {
    for (message, expected) in [
        (
            Some("Too expensive today.".to_owned()),
            "Too expensive today.",
        ),
        (None, "The payment was not approved."),
    ] {
        let project = new_project(SCRIPT);
        let ran: Ran = Default::default();
        let store = open(&project);
        let rt = runtime(&project.root, store.clone(), &ran).await;
        let (thread, request) = paused_at_pay(&rt, &store, &ran).await;
        rt.decide(&thread, &request.call_id, Verdict::deny("bob", message))
            .await
            .unwrap();
        rt.run(&thread).await.unwrap();
        assert!(!ran.lock().unwrap().iter().any(|r| r.starts_with("pay")));
        assert_eq!(tool_texts(&store, &thread), vec!["done", expected, "done"]);
    }
}

#[tokio::test]
async fn edited_arguments_are_validated_again_and_then_used() {
    let project = new_project(SCRIPT);
    let ran: Ran = Default::default();
    let store = open(&project);
    let rt = runtime(&project.root, store.clone(), &ran).await;
    let (thread, request) = paused_at_pay(&rt, &store, &ran).await;
    let mut bad = Verdict::approve("carol");
    bad.edited_arguments = Some(json!({"amount": 0}));
    let refused = rt.decide(&thread, &request.call_id, bad).await.unwrap_err();
    assert!(
        refused.to_string().contains("edited arguments are invalid"),
        "{refused}"
    );
    // The call still waits.
    assert!(store.approvals(&thread).unwrap()[0].decision.is_none());
    let mut good = Verdict::approve("carol");
    good.edited_arguments = Some(json!({"amount": 20}));
    rt.decide(&thread, &request.call_id, good).await.unwrap();
    rt.run(&thread).await.unwrap();
    assert!(ran
        .lock()
        .unwrap()
        .contains(&r#"pay {"amount":20}"#.to_owned()));
}

#[tokio::test]
async fn a_decision_for_another_call_or_a_redefined_tool_is_refused() {
    let project = new_project(SCRIPT);
    let ran: Ran = Default::default();
    let store = open(&project);
    let rt = runtime(&project.root, store.clone(), &ran).await;
    let (thread, request) = paused_at_pay(&rt, &store, &ran).await;
    // A decision named for a call that does not wait.
    assert!(rt
        .decide(&thread, "call_elsewhere", Verdict::approve("eve"))
        .await
        .is_err());
    // The tool is redefined (its description changed) before anyone decides.
    let mut rt = runtime(&project.root, store.clone(), &ran).await;
    rt.register_tool(pay_tool(&ran, "Pays, now to another bank."));
    let err = rt
        .decide(&thread, &request.call_id, Verdict::approve("eve"))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("changed since the call asked for approval"),
        "{err}"
    );
    assert!(store.approvals(&thread).unwrap()[0].decision.is_none());
    // Run on, the call is closed as not run (what a person would approve is not what would
    // run), the request is marked decided by toolhost, and the thread goes on.
    assert_eq!(
        rt.run(&thread).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    assert!(!ran.lock().unwrap().iter().any(|r| r.starts_with("pay")));
    assert!(tool_texts(&store, &thread).contains(&CHANGED_WHILE_WAITING.to_owned()));
    let decision = store.approvals(&thread).unwrap()[0]
        .decision
        .clone()
        .unwrap();
    assert!(!decision.approved);
    assert_eq!(decision.decided_by, "toolhost");
}

/// Approves every request, "always", and counts how often it was asked.
struct AlwaysYes(Mutex<u32>);

impl ApprovalHandler for AlwaysYes {
    fn decide<'a>(&'a self, _thread: &'a str, _request: &'a ApprovalRequest) -> VerdictFuture<'a> {
        *self.0.lock().unwrap() += 1;
        Box::pin(async {
            let mut verdict = Verdict::approve("handler");
            verdict.always = true;
            Some(verdict)
        })
    }
}

#[tokio::test]
async fn a_handler_decides_at_once_and_an_always_decision_covers_later_calls() {
    let project = new_project(
        r#"
{"toolCalls": [{"name": "pay", "arguments": {"amount": 50}}]}
{"toolCalls": [{"name": "pay", "arguments": {"amount": 70}}, {"name": "pay", "arguments": {"amount": 5}}]}
{"text": "Finished."}
"#,
    );
    let ran: Ran = Default::default();
    let store = open(&project);
    let mut rt = runtime(&project.root, store.clone(), &ran).await;
    let handler = Arc::new(AlwaysYes(Mutex::new(0)));
    rt.set_approval_handler(handler.clone());
    let thread = rt.start_thread("clerk", "pay twice").await.unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    assert_eq!(ran.lock().unwrap().len(), 3);
    // Asked once; the second large payment was covered by "always"; the small one needed none.
    assert_eq!(*handler.0.lock().unwrap(), 1);
    let records = store.approvals(&thread.id).unwrap();
    assert_eq!(records.len(), 2);
    assert_eq!(
        records[1].decision.as_ref().unwrap().decided_by,
        "always, as decided by handler"
    );
}

#[tokio::test]
async fn the_model_learns_that_its_call_ran_with_arguments_edited_at_approval() {
    let project = common::one_prompt_project(&["pay"]);
    let model = common::ListModel::new(vec![
        common::call_answer("w1", "pay", r#"{"amount": 50}"#),
        common::text_answer("Paid 20."),
    ]);
    let (mut rt, store) = common::runtime_on(&project, model.clone()).await;
    let ran: Ran = Default::default();
    rt.register_tool(pay_tool(&ran, "Pays."));
    let thread = rt.start_thread("a", "pay").await.unwrap();
    let RunOutcome::Paused(Waiting::Approval(request)) = rt.run(&thread.id).await.unwrap() else {
        panic!("expected a pause for approval");
    };
    let mut verdict = Verdict::approve("carol");
    verdict.edited_arguments = Some(json!({"amount": 20}));
    rt.decide(&thread.id, &request.call_id, verdict)
        .await
        .unwrap();
    rt.run(&thread.id).await.unwrap();
    assert_eq!(
        *ran.lock().unwrap(),
        vec![r#"pay {"amount":20}"#.to_owned()]
    );
    // The call keeps what the model wrote; its result records what ran, and the model is told.
    let messages = store.messages(&thread.id).unwrap();
    let call = &messages
        .iter()
        .find(|m| m.role == Role::Assistant)
        .unwrap()
        .tool_calls[0];
    assert_eq!(call.arguments, r#"{"amount": 50}"#);
    let result = messages.iter().find(|m| m.role == Role::Tool).unwrap();
    let ran_with = result.metadata.ran_with.clone().unwrap();
    assert_eq!(ran_with.arguments, json!({"amount": 20}));
    assert_eq!(
        ran_with.edited_by,
        toolhost_store::ArgumentsEditor::Approval
    );
    let seen = &model.requests()[1];
    let shown = seen.iter().find(|m| m.tool_call_id.is_some()).unwrap();
    assert_eq!(
        shown.content.as_deref(),
        Some("[the call ran with arguments edited at approval: {\"amount\":20}]\ndone")
    );
}
