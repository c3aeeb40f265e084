//! Middleware sees and may replace requests, responses, tool arguments and results, agent level
//! before prompt level in registration order; the approval check sees arguments changed by input
//! middleware; hooks see each call's end, and a failing hook changes nothing.

mod common;

use common::Project;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use toolhost_core::approval::Approval;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::ToolResult;
use toolhost_providers::{ModelRequest, ModelResponse};
use toolhost_runtime::engine::{
    AfterFailure, CallInfo, CompletionRequestArgs, CompletionResponseArgs, HookError, Middleware,
    MiddlewareResult, MiddlewareScope, OutputReplacement, RunOutcome, Runtime, ToolHooks,
    ToolInputArgs, ToolOutputArgs, Verdict, Waiting,
};
use toolhost_store::{Role, SqliteStore, Store};

fn new_project(script: &str) -> Project {
    Project::with_files(&[
        (
            "agents/agents/clerk.json",
            r#"{"type": "ai_human", "sideA": {"prompt": "clerk"}}"#,
        ),
        (
            "agents/prompts/clerk.json",
            r#"{"toolDescription": "Pays.", "prompt": "You pay.", "model": "scripted", "tools": ["pay", "fail"]}"#,
        ),
        (
            "agents/models/scripted.json",
            r#"{"provider": "test", "script": "script.jsonl"}"#,
        ),
        ("script.jsonl", script),
    ])
}

type Log = Arc<Mutex<Vec<String>>>;

/// Logs each call under its label; multiplies `amount` by 10 when `scale` is set.
struct Recorder {
    label: &'static str,
    log: Log,
    scale: bool,
    output: Option<&'static str>,
    response: Option<&'static str>,
}

impl Middleware for Recorder {
    fn completion_request(
        &self,
        _args: &CompletionRequestArgs<'_>,
    ) -> MiddlewareResult<ModelRequest> {
        self.log
            .lock()
            .unwrap()
            .push(format!("{} request", self.label));
        Ok(None)
    }
    fn completion_response(
        &self,
        args: &CompletionResponseArgs<'_>,
    ) -> MiddlewareResult<ModelResponse> {
        let Some(text) = self.response else {
            return Ok(None);
        };
        Ok(args.response.tool_calls.is_empty().then(|| ModelResponse {
            text: Some(text.to_owned()),
            ..args.response.clone()
        }))
    }
    fn tool_input(&self, args: &ToolInputArgs<'_>) -> MiddlewareResult<Value> {
        self.log.lock().unwrap().push(format!(
            "{} input {} {}",
            self.label, args.tool_name, args.args
        ));
        Ok(self
            .scale
            .then(|| json!({"amount": args.args["amount"].as_i64().unwrap_or(0) * 10})))
    }
    fn tool_output(&self, args: &ToolOutputArgs<'_>) -> MiddlewareResult<OutputReplacement> {
        let Some(text) = self.output else {
            return Ok(None);
        };
        Ok(Some(OutputReplacement::Result(ToolResult::success(
            format!("{text} ({})", args.result.model_text()),
        ))))
    }
}

async fn project_runtime(project: &Project, ran: &Log) -> (Runtime, Arc<dyn Store>) {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&project.root, store.clone()).await.unwrap();
    let r = ran.clone();
    rt.register_tool(
        DynamicTool::new("pay", "Pays.")
            .parameters(json!({"type": "object", "properties": {"amount": {"type": "integer", "maximum": 1000}}}))
            .approval(Approval::when(|ctx| ctx.args["amount"].as_i64().unwrap_or(0) > 10))
            .handler(move |args: Value, _ctx| {
                let r = r.clone();
                async move {
                    r.lock().unwrap().push(format!("pay {args}"));
                    Ok::<_, ToolError>("paid")
                }
            })
            .build()
            .unwrap(),
    );
    rt.register_tool(
        DynamicTool::new("fail", "Fails.")
            .handler(|_args: Value, _ctx| async { Err::<String, _>(ToolError::new("broken")) })
            .build()
            .unwrap(),
    );
    (rt, store)
}

#[tokio::test]
async fn agent_level_runs_before_prompt_level_and_approval_sees_the_changed_arguments() {
    let project = new_project(
        "{\"toolCalls\": [{\"name\": \"pay\", \"arguments\": {\"amount\": 5}}]}\n{\"text\": \"done\"}\n",
    );
    let ran: Log = Default::default();
    let log: Log = Default::default();
    let (mut rt, store) = project_runtime(&project, &ran).await;
    let mw = |label, scale| {
        Arc::new(Recorder {
            label,
            log: log.clone(),
            scale,
            output: None,
            response: None,
        })
    };
    // Registered prompt level first: it still runs after both agent levels.
    rt.add_middleware(MiddlewareScope::Prompt("clerk".into()), mw("prompt", false));
    rt.add_middleware(MiddlewareScope::AllAgents, mw("all", true));
    rt.add_middleware(MiddlewareScope::Agent("clerk".into()), mw("agent", false));
    rt.add_middleware(MiddlewareScope::Agent("other".into()), mw("other", false));
    let thread = rt.start_thread("clerk", "pay 5").await.unwrap();
    let outcome = rt.run(&thread.id).await.unwrap();
    // 5 needs no approval, but the middleware made it 50, and the approval check saw 50.
    let RunOutcome::Paused(Waiting::Approval(request)) = outcome else {
        panic!("expected an approval pause, got {outcome:?}");
    };
    assert_eq!(request.arguments, json!({"amount": 50}));
    assert!(ran.lock().unwrap().is_empty());
    assert_eq!(
        *log.lock().unwrap(),
        vec![
            "all request",
            "agent request",
            "prompt request",
            r#"all input pay {"amount":5}"#,
            r#"agent input pay {"amount":50}"#,
            r#"prompt input pay {"amount":50}"#,
        ]
    );
    // Approved and run, its result records that it ran with what the middleware made of it.
    rt.decide(&thread.id, &request.call_id, Verdict::approve("ann"))
        .await
        .unwrap();
    rt.run(&thread.id).await.unwrap();
    let result = store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .find(|m| m.tool_call_id.is_some())
        .unwrap();
    let ran_with = result.metadata.ran_with.unwrap();
    assert_eq!(ran_with.arguments, json!({"amount": 50}));
    assert_eq!(
        ran_with.edited_by,
        toolhost_store::ArgumentsEditor::Middleware
    );
}

/// Replaces results before they are stored, records the ends, and fails when told to.
struct Hooks {
    log: Log,
    fail: bool,
}

impl ToolHooks for Hooks {
    fn before_result_stored(
        &self,
        call: &CallInfo,
        result: &ToolResult,
    ) -> Result<Option<ToolResult>, HookError> {
        if self.fail {
            return Err("hook is down".into());
        }
        Ok((call.tool == "pay")
            .then(|| ToolResult::success(format!("{} [checked]", result.model_text()))))
    }
    fn after_success(&self, call: &CallInfo, _result: &ToolResult) -> Result<(), HookError> {
        self.log
            .lock()
            .unwrap()
            .push(format!("success {}", call.tool));
        if self.fail {
            return Err("hook is down".into());
        }
        Ok(())
    }
    fn after_failure(
        &self,
        call: &CallInfo,
        result: &ToolResult,
    ) -> Result<AfterFailure, HookError> {
        self.log
            .lock()
            .unwrap()
            .push(format!("failure {}: {}", call.tool, result.model_text()));
        Ok(AfterFailure::GoOn)
    }
}

#[tokio::test]
async fn output_middleware_and_hooks_shape_results_and_a_failing_hook_changes_nothing() {
    let script = r#"
{"toolCalls": [{"name": "pay", "arguments": {"amount": 3}}, {"name": "fail", "arguments": {}}]}
{"text": "All done."}
"#;
    for fail in [false, true] {
        let project = new_project(script);
        let ran: Log = Default::default();
        let log: Log = Default::default();
        let (mut rt, store) = project_runtime(&project, &ran).await;
        rt.add_middleware(
            MiddlewareScope::AllAgents,
            Arc::new(Recorder {
                label: "all",
                log: Default::default(),
                scale: false,
                output: Some("shaped"),
                response: Some("Rewritten reply."),
            }),
        );
        rt.add_tool_hooks(Arc::new(Hooks {
            log: log.clone(),
            fail,
        }));
        let thread = rt.start_thread("clerk", "pay 3").await.unwrap();
        assert!(matches!(
            rt.run(&thread.id).await.unwrap(),
            RunOutcome::Done(_)
        ));
        let messages = store.messages(&thread.id).unwrap();
        let results: Vec<String> = messages
            .iter()
            .filter(|m| m.role == Role::Tool)
            .map(|m| m.content.clone().unwrap_or_default())
            .collect();
        let pay = if fail {
            "shaped (paid)"
        } else {
            "shaped (paid) [checked]"
        };
        assert_eq!(results, vec![pay, "shaped (ToolCallError: broken)"]);
        // Output middleware made both successes; the hooks saw what it made.
        assert_eq!(*log.lock().unwrap(), vec!["success pay", "success fail"]);
        let reply = messages.last().unwrap();
        assert_eq!(reply.content.as_deref(), Some("Rewritten reply."));
    }
}
