//! Middleware gets what spec 003 gives it, and may fail: each callback sees the value as
//! earlier middleware left it and as the runtime made it, the session turn and the call's ids
//! (the API's `toolCallId` and toolhost's `internalCallId`); an error raised by middleware is a
//! run error: the run stops with it, the thread is marked failed, and nothing of the step that
//! failed is stored as if it had gone well.

mod common;

use common::traces::SECRET;
use common::{call_answer, one_prompt_project, runtime_on, text_answer, ListModel};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_providers::{ModelRequest, ModelResponse};
use toolhost_runtime::engine::{
    CompletionRequestArgs, CompletionResponseArgs, Middleware, MiddlewareError, MiddlewareResult,
    MiddlewareScope, OutputReplacement, Runtime, RuntimeError, ToolInputArgs, ToolOutputArgs,
};
use toolhost_store::{Role, Store, ThreadStatus};

type Seen = Arc<Mutex<Vec<Value>>>;

/// Records what each callback is given; the first one registered changes every value, so the
/// second sees the change next to the original.
struct Recorder {
    seen: Seen,
    changes: bool,
}

impl Middleware for Recorder {
    fn completion_request(&self, a: &CompletionRequestArgs<'_>) -> MiddlewareResult<ModelRequest> {
        self.seen
            .lock()
            .unwrap()
            .push(json!({"stage": "request", "turn": a.turn,
            "messages": a.request.messages.len(), "original": a.original_request.messages.len(),
            "prompt": a.step.prompt, "agent": a.step.agent}));
        Ok(self.changes.then(|| {
            let mut r = a.request.clone();
            r.messages.push(r.messages[0].clone());
            r
        }))
    }
    fn completion_response(
        &self,
        a: &CompletionResponseArgs<'_>,
    ) -> MiddlewareResult<ModelResponse> {
        self.seen
            .lock()
            .unwrap()
            .push(json!({"stage": "response", "turn": a.turn,
            "text": a.response.text, "original": a.original_response.text,
            "sent": a.request.messages.len()}));
        Ok(self.changes.then(|| ModelResponse {
            text: a.response.text.as_ref().map(|t| format!("{t}!")),
            ..a.response.clone()
        }))
    }
    fn tool_input(&self, a: &ToolInputArgs<'_>) -> MiddlewareResult<Value> {
        self.seen
            .lock()
            .unwrap()
            .push(json!({"stage": "input", "tool": a.tool_name,
            "args": a.args, "original": a.original_args, "turn": a.turn,
            "tool_call_id": a.tool_call_id, "internal_call_id": a.internal_call_id}));
        Ok(self.changes.then(|| json!({"amount": 50})))
    }
    fn tool_output(&self, a: &ToolOutputArgs<'_>) -> MiddlewareResult<OutputReplacement> {
        self.seen
            .lock()
            .unwrap()
            .push(json!({"stage": "output", "tool": a.tool_name,
            "args": a.args, "result": a.result.model_text(),
            "original": a.original_result.model_text(), "turn": a.turn,
            "tool_call_id": a.tool_call_id, "internal_call_id": a.internal_call_id}));
        Ok(self
            .changes
            .then(|| OutputReplacement::Text(format!("{} (checked)", a.result.model_text()))))
    }
}

/// Fails at `stage`, with a message that quotes the thread's secret.
struct Fails {
    stage: &'static str,
}

impl Fails {
    fn check(&self, stage: &str) -> Result<(), MiddlewareError> {
        if self.stage == stage {
            return Err(format!("{stage} refused with key {SECRET}").into());
        }
        Ok(())
    }
}

impl Middleware for Fails {
    fn completion_request(&self, _: &CompletionRequestArgs<'_>) -> MiddlewareResult<ModelRequest> {
        self.check("completion_request").map(|()| None)
    }
    fn completion_response(
        &self,
        _: &CompletionResponseArgs<'_>,
    ) -> MiddlewareResult<ModelResponse> {
        self.check("completion_response").map(|()| None)
    }
    fn tool_input(&self, _: &ToolInputArgs<'_>) -> MiddlewareResult<Value> {
        self.check("tool_input").map(|()| None)
    }
    fn tool_output(&self, _: &ToolOutputArgs<'_>) -> MiddlewareResult<OutputReplacement> {
        self.check("tool_output").map(|()| None)
    }
}

fn pay_tool(runs: Arc<AtomicUsize>) -> toolhost_core::AnyTool {
    DynamicTool::new("pay", "Pays.")
        .parameters(json!({"type": "object", "properties": {"amount": {"type": "integer"}}}))
        // Declared so that a thread may be given it (the failing cases give it as a secret).
        .variable(toolhost_core::variables::VariableDecl::secret("KEY").optional())
        .handler(move |args: Value, _| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>(format!("paid {}", args["amount"]))
            }
        })
        .build()
        .unwrap()
}

async fn runtime(
    answers: Vec<Result<ModelResponse, toolhost_providers::ModelError>>,
) -> (Runtime, Arc<dyn Store>, Arc<AtomicUsize>, common::Project) {
    let (rt, store, runs, project, _) = runtime_and_model(answers).await;
    (rt, store, runs, project)
}

/// [`runtime`], and its model (which keeps each request).
async fn runtime_and_model(
    answers: Vec<Result<ModelResponse, toolhost_providers::ModelError>>,
) -> (
    Runtime,
    Arc<dyn Store>,
    Arc<AtomicUsize>,
    common::Project,
    Arc<ListModel>,
) {
    let project = one_prompt_project(&["pay"]);
    let model = ListModel::new(answers);
    let (mut rt, store) = runtime_on(&project, model.clone()).await;
    let runs = Arc::new(AtomicUsize::new(0));
    rt.register_tool(pay_tool(runs.clone()));
    (rt, store, runs, project, model)
}

#[tokio::test]
async fn each_callback_gets_the_value_now_the_original_the_turn_and_the_calls_ids() {
    let (mut rt, store, runs, _p, model) = runtime_and_model(vec![
        call_answer("wire-1", "pay", r#"{"amount": 5}"#),
        text_answer("done"),
    ])
    .await;
    let (first, second) = (Seen::default(), Seen::default());
    rt.add_middleware(
        MiddlewareScope::AllAgents,
        Arc::new(Recorder {
            seen: first,
            changes: true,
        }),
    );
    rt.add_middleware(
        MiddlewareScope::AllAgents,
        Arc::new(Recorder {
            seen: second.clone(),
            changes: false,
        }),
    );
    let thread = rt.start_thread("a", "pay five").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let call_id = store.calls(&thread.id).unwrap()[0].call_id.clone();
    let seen = second.lock().unwrap().clone();
    let at = |stage: &str, n: usize| -> Value {
        seen.iter()
            .filter(|v| v["stage"] == stage)
            .nth(n)
            .cloned()
            .unwrap()
    };
    // The request: the first middleware added a message; the original is the runtime's.
    let request = at("request", 0);
    assert_eq!(
        request["messages"].as_u64().unwrap(),
        request["original"].as_u64().unwrap() + 1
    );
    assert_eq!(
        (
            request["turn"].clone(),
            request["prompt"].clone(),
            request["agent"].clone()
        ),
        (json!(1), json!("p"), json!("a"))
    );
    // The input: changed arguments next to the model's, with both ids.
    let input = at("input", 0);
    assert_eq!(input["tool"], "pay");
    assert_eq!(input["args"], json!({"amount": 50}));
    assert_eq!(input["original"], json!({"amount": 5}));
    assert_eq!(input["turn"], 1);
    assert_eq!(input["tool_call_id"], "wire-1");
    assert_eq!(input["internal_call_id"], call_id.as_str());
    // The output: the call ran with the changed arguments; the result now and as the tool gave it.
    let output = at("output", 0);
    assert_eq!(output["args"], json!({"amount": 50}));
    assert_eq!(output["result"], "paid 50 (checked)");
    assert_eq!(output["original"], "paid 50");
    assert_eq!(
        (
            output["tool_call_id"].clone(),
            output["internal_call_id"].clone()
        ),
        (json!("wire-1"), json!(call_id))
    );
    // The response: changed text next to the model's, and the request it answers.
    let response = at("response", 1);
    assert_eq!(
        (response["text"].clone(), response["original"].clone()),
        (json!("done!"), json!("done"))
    );
    assert!(response["sent"].as_u64().unwrap() > 0);

    // A text replacement keeps the result's status; the stored reply is the changed one.
    let messages = store.messages(&thread.id).unwrap();
    let result = messages.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(result.content.as_deref(), Some("paid 50 (checked)"));
    assert_eq!(result.status, Some(toolhost_store::ToolStatus::Success));
    assert_eq!(messages.last().unwrap().content.as_deref(), Some("done!"));
    // Spec 003: what output middleware returns is what the model gets, with no note of the
    // changed arguments (that note is for people: the stored metadata keeps it).
    let requests = model.requests();
    let shown = requests[1]
        .iter()
        .find(|m| m.role == toolhost_providers::ChatRole::Tool)
        .unwrap();
    assert_eq!(shown.content.as_deref(), Some("paid 50 (checked)"));
    assert!(result.metadata.ran_with.is_some());
}

/// Runs a thread with `Fails { stage }` registered and the secret given as a thread variable;
/// returns the run error, the store, the thread and how often the tool ran.
async fn failing(stage: &'static str) -> (RuntimeError, Arc<dyn Store>, String, usize) {
    let (mut rt, store, runs, _p) = runtime(vec![
        call_answer("w1", "pay", r#"{"amount": 5}"#),
        text_answer("done"),
    ])
    .await;
    rt.set_secret_key(toolhost_runtime::variables::secrets::SecretKey::generate().unwrap());
    rt.add_middleware(MiddlewareScope::AllAgents, Arc::new(Fails { stage }));
    let thread = rt
        .start_thread_with(
            "a",
            "pay five",
            vec![toolhost_runtime::variables::VariableValue::secret(
                "KEY", SECRET,
            )],
        )
        .await
        .unwrap();
    let error = rt.run(&thread.id).await.unwrap_err();
    assert_eq!(
        store.thread(&thread.id).unwrap().status,
        ThreadStatus::Failed
    );
    let shown = error.to_string();
    assert!(shown.contains(stage), "{shown}");
    assert!(
        !shown.contains(SECRET),
        "the secret in the middleware's error is redacted: {shown}"
    );
    (error, store, thread.id, runs.load(Ordering::SeqCst))
}

#[tokio::test]
async fn a_failing_request_middleware_stops_the_run_before_anything_is_sent() {
    let (error, store, thread, runs) = failing("completion_request").await;
    assert!(matches!(
        error,
        RuntimeError::Middleware {
            stage: "completion_request",
            tool: None,
            ..
        }
    ));
    assert_eq!(
        store.messages(&thread).unwrap().len(),
        1,
        "only the person's message"
    );
    assert_eq!(runs, 0);
}

#[tokio::test]
async fn a_failing_response_middleware_stores_no_reply() {
    let (error, store, thread, runs) = failing("completion_response").await;
    assert!(matches!(
        error,
        RuntimeError::Middleware {
            stage: "completion_response",
            ..
        }
    ));
    assert_eq!(store.messages(&thread).unwrap().len(), 1);
    assert_eq!(runs, 0);
}

#[tokio::test]
async fn a_failing_input_middleware_answers_the_call_not_run_and_stops() {
    let (error, store, thread, runs) = failing("tool_input").await;
    assert!(
        matches!(&error, RuntimeError::Middleware { stage: "tool_input", tool: Some(t), .. } if t == "pay")
    );
    assert_eq!(runs, 0, "the tool never ran");
    let result = store
        .messages(&thread)
        .unwrap()
        .into_iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    assert_eq!(
        result.content.as_deref(),
        Some("the call was not run: the run stopped because tool_input middleware failed")
    );
}

#[tokio::test]
async fn a_failing_output_middleware_withholds_the_result_and_stops() {
    let (error, store, thread, runs) = failing("tool_output").await;
    assert!(
        matches!(&error, RuntimeError::Middleware { stage: "tool_output", tool: Some(t), .. } if t == "pay")
    );
    assert_eq!(runs, 1, "the tool ran once");
    let messages = store.messages(&thread).unwrap();
    let result = messages.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(
        result.content.as_deref(),
        Some("the result was withheld: the run stopped because tool_output middleware failed")
    );
    assert!(
        !messages
            .iter()
            .any(|m| m.content.as_deref() == Some("done")),
        "the model was not asked again"
    );
}
