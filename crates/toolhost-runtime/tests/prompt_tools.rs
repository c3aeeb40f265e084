//! Prompt tools (spec 001 §4): a prompt named in another prompt's `tools` is offered as a tool
//! (its name, `toolDescription`, `requiredSchema` or a `message` argument); calling it runs the
//! prompt as a sub-prompt to its end on the same thread, nested under the call, and returns
//! what the entry's `SubpromptConfig` selects. Every model here is the scripted `test` model.

mod common;

use common::traces::{assert_no_trace_in_files, SECRET};
use common::{ping_tool, Project};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use toolhost_core::approval::Approval;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::variables::VariableDecl;
use toolhost_providers::{ChatRole, Model, ModelFuture, ModelRequest, ScriptedModel};
use toolhost_runtime::engine::ThreadState;
use toolhost_runtime::engine::{RunOutcome, Runtime, StopReason, Verdict, Waiting};
use toolhost_runtime::variables::secrets::SecretKey;
use toolhost_runtime::variables::VariableValue;
use toolhost_store::{Message, Role, SqliteStore, Store, ThreadStatus, ToolStatus, Write};

/// A scripted model that keeps every request it was sent.
struct Recorded {
    script: ScriptedModel,
    seen: Mutex<Vec<ModelRequest>>,
}

impl Recorded {
    fn new(turns: Value) -> Arc<Self> {
        Arc::new(Self {
            script: ScriptedModel::parse("test:x", "script.json", &turns.to_string()).unwrap(),
            seen: Mutex::new(Vec::new()),
        })
    }

    fn requests(&self) -> Vec<ModelRequest> {
        self.seen.lock().unwrap().clone()
    }
}

impl Model for Recorded {
    fn name(&self) -> &str {
        self.script.name()
    }

    fn complete<'a>(&'a self, request: &'a ModelRequest) -> ModelFuture<'a> {
        self.seen.lock().unwrap().push(request.clone());
        self.script.complete(request)
    }
}

/// A thread of agent `a`, whose prompt `lead` offers `offer` (the entry of its `tools`),
/// `ping` and `where`, on the scripted models `lead` and `helper`; `helper` is the prompt offered, whose
/// own tools are `ping` and `fail`.
struct Setup {
    rt: Runtime,
    store: Arc<dyn Store>,
    lead: Arc<Recorded>,
    helper: Arc<Recorded>,
    _project: Project,
}

fn setup(offer: Value, helper: Value, lead_turns: Value, helper_turns: Value) -> Setup {
    let project = Project::with_files(&[
        (
            "agents/agents/a.json",
            json!({"type": "ai_human", "sideA": {"prompt": "lead"}}).to_string(),
        ),
        (
            "agents/prompts/lead.json",
            json!({"toolDescription": "Leads.", "prompt": "Lead.", "model": "lead",
                "tools": [offer, "ping", "where"]})
            .to_string(),
        ),
        ("agents/prompts/helper.json", helper.to_string()),
    ]);
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&project.root, store.clone()).unwrap();
    rt.register_tool(ping_tool());
    rt.register_tool(where_tool());
    rt.register_tool(
        DynamicTool::new("fail", "Fails.")
            .parameters(json!({"type": "object", "properties": {}}))
            .handler(|_: Value, _| async move { Err::<String, _>(ToolError::new("disk full")) })
            .build()
            .unwrap(),
    );
    let lead = Recorded::new(lead_turns);
    let helper_model = Recorded::new(helper_turns);
    rt.register_model("lead", lead.clone());
    rt.register_model("helper", helper_model.clone());
    Setup {
        rt,
        store,
        lead,
        helper: helper_model,
        _project: project,
    }
}

/// A tool that answers the prompt path of its call (`state.execution().promptPath`).
fn where_tool() -> toolhost_core::AnyTool {
    DynamicTool::new("where", "Says where the call runs.")
        .parameters(json!({"type": "object", "properties": {}}))
        .handler(|_: Value, ctx| async move {
            let state = ctx.get::<ThreadState>().unwrap();
            Ok::<_, ToolError>(state.execution().prompt_path.join("/"))
        })
        .build()
        .unwrap()
}

fn helper_prompt(extra: Value) -> Value {
    let mut prompt = json!({"toolDescription": "Looks things up for you.",
        "prompt": "Help.", "model": "helper", "tools": ["ping", "fail"]});
    prompt
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    prompt
}

/// The lead calls `helper` with `args`, then answers "thanks".
fn lead_calls(args: Value) -> Value {
    json!([{"toolCalls": [{"name": "helper", "arguments": args}]}, {"text": "thanks"}])
}

/// The helper pings, then answers "found it".
fn helper_pings() -> Value {
    json!([{"toolCalls": [{"name": "ping", "arguments": {}}]}, {"text": "found it"}])
}

impl Setup {
    async fn run(&self) -> (String, Vec<Message>) {
        let thread = self.rt.start_thread("a", "start").await.unwrap();
        let outcome = self.rt.run(&thread.id).await.unwrap();
        assert_eq!(outcome, RunOutcome::Done(StopReason::Response));
        (thread.id.clone(), self.store.messages(&thread.id).unwrap())
    }
}

/// The result the lead's call of `helper` got.
fn helper_result(messages: &[Message]) -> &Message {
    let call = messages
        .iter()
        .find(|m| m.depth == 0 && m.tool_calls.iter().any(|c| c.name == "helper"))
        .unwrap();
    let id = &call.tool_calls[0].id;
    let results: Vec<&Message> = messages
        .iter()
        .filter(|m| m.tool_call_id.as_ref() == Some(id))
        .collect();
    assert_eq!(results.len(), 1, "one result for the call");
    results[0]
}

#[tokio::test]
async fn a_prompt_is_offered_with_its_name_tool_description_and_a_message_argument() {
    let s = setup(
        json!("helper"),
        helper_prompt(json!({})),
        lead_calls(json!({"message": "find the key"})),
        helper_pings(),
    );
    let (_, messages) = s.run().await;
    let offered = &s.lead.requests()[0].tools;
    let tool = offered.iter().find(|t| t.name == "helper").unwrap();
    assert_eq!(tool.description, "Looks things up for you.");
    assert_eq!(tool.parameters["required"], json!(["message"]));
    assert_eq!(tool.parameters["properties"]["message"]["type"], "string");
    // The message argument is the sub-prompt's first message, under its own system text.
    let first = &s.helper.requests()[0].messages;
    assert_eq!(first[0].content.as_deref(), Some("Help."));
    assert_eq!(first[1].content.as_deref(), Some("find the key"));
    assert_eq!(
        first.len(),
        2,
        "the sub-prompt sees nothing of the lead's conversation"
    );
    // Its messages are nested under the call and the lead's model never sees them.
    let call_id = &messages[1].tool_calls[0].id;
    let nested: Vec<&Message> = messages.iter().filter(|m| m.depth == 1).collect();
    assert_eq!(
        nested.len(),
        4,
        "first message, ping call, ping result, answer"
    );
    assert!(nested.iter().all(|m| m.parent_id.as_ref() == Some(call_id)));
    // The lead's next request holds its own conversation only: system, user, call, result.
    let last_request = s.lead.requests().last().unwrap().messages.clone();
    let roles: Vec<ChatRole> = last_request.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            ChatRole::System,
            ChatRole::User,
            ChatRole::Assistant,
            ChatRole::Tool
        ]
    );
    assert_eq!(
        helper_result(&messages).content.as_deref(),
        Some("found it")
    );
}

#[tokio::test]
async fn required_schema_is_the_prompt_tools_arguments_and_their_json_is_the_first_message() {
    let schema = json!({"type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city", "days"]});
    let s = setup(
        json!("helper"),
        helper_prompt(json!({"requiredSchema": schema})),
        json!([{"toolCalls": [{"name": "helper", "arguments": {"city": "Oslo"}}]},
               {"toolCalls": [{"name": "helper", "arguments": {"city": "Oslo", "days": 2}}]},
               {"text": "thanks"}]),
        json!([{"text": "sunny"}]),
    );
    let (_, messages) = s.run().await;
    let tool = s.lead.requests()[0]
        .tools
        .iter()
        .find(|t| t.name == "helper")
        .cloned()
        .unwrap();
    assert_eq!(tool.parameters["required"], json!(["city", "days"]));
    // The call missing `days` was refused and its sub-prompt never ran.
    let results: Vec<&Message> = messages
        .iter()
        .filter(|m| m.role == Role::Tool && m.depth == 0)
        .collect();
    assert_eq!(results[0].status, Some(ToolStatus::Error));
    assert!(results[0].content.as_deref().unwrap().contains("days"));
    assert_eq!(s.helper.requests().len(), 1);
    let first = s.helper.requests()[0].messages[1].content.clone().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&first).unwrap(),
        json!({"city": "Oslo", "days": 2})
    );
    assert_eq!(results[1].content.as_deref(), Some("sunny"));
}

#[tokio::test]
async fn include_text_response_false_leaves_the_answer_out() {
    let s = setup(
        json!({"name": "helper", "includeTextResponse": false, "includeToolCalls": true}),
        helper_prompt(json!({})),
        lead_calls(json!({"message": "go"})),
        helper_pings(),
    );
    let (_, messages) = s.run().await;
    let result: Value =
        serde_json::from_str(helper_result(&messages).content.as_deref().unwrap()).unwrap();
    assert!(result.get("response").is_none(), "{result}");
    assert!(result.get("toolCalls").is_some(), "{result}");
}

#[tokio::test]
async fn include_tool_calls_returns_each_call_with_its_arguments_and_result() {
    let s = setup(
        json!({"name": "helper", "includeToolCalls": true}),
        helper_prompt(json!({})),
        lead_calls(json!({"message": "go"})),
        helper_pings(),
    );
    let (_, messages) = s.run().await;
    let result: Value =
        serde_json::from_str(helper_result(&messages).content.as_deref().unwrap()).unwrap();
    assert_eq!(
        result,
        json!({"response": "found it", "toolCalls": [
            {"name": "ping", "arguments": {}, "status": "success", "result": "pong"}
        ]})
    );
}

#[tokio::test]
async fn include_errors_returns_the_failed_calls_of_the_sub_prompt() {
    let s = setup(
        json!({"name": "helper", "includeTextResponse": false, "includeErrors": true}),
        helper_prompt(json!({})),
        lead_calls(json!({"message": "go"})),
        json!([{"toolCalls": [{"name": "fail", "arguments": {}}, {"name": "ping", "arguments": {}}]},
               {"text": "could not"}]),
    );
    let (_, messages) = s.run().await;
    let result = helper_result(&messages);
    // The sub-prompt handled its tool's failure and answered: the call itself succeeded.
    assert_eq!(result.status, Some(ToolStatus::Success));
    let value: Value = serde_json::from_str(result.content.as_deref().unwrap()).unwrap();
    let errors = value["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{value}");
    assert_eq!(errors[0]["tool"], "fail");
    assert!(errors[0]["error"].as_str().unwrap().contains("disk full"));
    // A sub-prompt's failed call is a stored result like any other.
    assert!(messages.iter().any(|m| m.depth == 1
        && m.name.as_deref() == Some("fail")
        && m.status == Some(ToolStatus::Error)));
}

#[tokio::test]
async fn a_sub_prompt_that_uses_its_steps_without_answering_fails_the_call() {
    let s = setup(
        json!({"name": "helper", "includeErrors": true}),
        helper_prompt(json!({"maxSteps": 2})),
        lead_calls(json!({"message": "go"})),
        json!([{"toolCalls": [{"name": "ping", "arguments": {}}], "times": 5}]),
    );
    let (_, messages) = s.run().await;
    let result = helper_result(&messages);
    assert_eq!(result.status, Some(ToolStatus::Error));
    assert!(result
        .content
        .as_deref()
        .unwrap()
        .contains("used its 2 steps"));
    assert_eq!(s.helper.requests().len(), 2);
}

#[tokio::test]
async fn init_user_message_property_picks_the_argument_that_starts_the_sub_prompt() {
    let schema = json!({"type": "object",
        "properties": {"question": {"type": "string"}, "tone": {"type": "string"}},
        "required": ["question"]});
    let s = setup(
        json!({"name": "helper", "initUserMessageProperty": "question"}),
        helper_prompt(json!({"requiredSchema": schema})),
        lead_calls(json!({"question": "where is it?", "tone": "dry"})),
        json!([{"text": "here"}]),
    );
    s.run().await;
    let first = &s.helper.requests()[0].messages;
    assert_eq!(first[1].content.as_deref(), Some("where is it?"));
}

#[tokio::test]
async fn init_attachments_property_passes_files_of_the_thread_and_refuses_others() {
    let schema = json!({"type": "object", "properties": {
        "message": {"type": "string"},
        "files": {"type": "array", "items": {"type": "string"}}}});
    let s = setup(
        json!({"name": "helper", "initUserMessageProperty": "message",
               "initAttachmentsProperty": "files"}),
        helper_prompt(json!({"requiredSchema": schema})),
        json!([{"toolCalls": [{"name": "helper", "arguments":
                    {"message": "read", "files": ["/attachments/missing.txt"]}}]},
               {"toolCalls": [{"name": "helper", "arguments":
                    {"message": "read", "files": ["/attachments/notes.txt"]}}]},
               {"text": "thanks"}]),
        json!([{"text": "read it"}]),
    );
    let thread = s.rt.start_thread("a", "start").await.unwrap();
    s.store
        .apply(
            &thread.id,
            vec![Write::WriteFile {
                path: toolhost_store::path::normalize("/attachments/notes.txt").unwrap(),
                bytes: b"hello".to_vec(),
                mime_type: Some("text/plain".into()),
                message_id: None,
            }],
        )
        .unwrap();
    s.rt.run(&thread.id).await.unwrap();
    let messages = s.store.messages(&thread.id).unwrap();
    let results: Vec<&Message> = messages
        .iter()
        .filter(|m| m.role == Role::Tool && m.depth == 0)
        .collect();
    // A path that is no file of the thread is refused, never passed on.
    assert_eq!(results[0].status, Some(ToolStatus::Error));
    assert!(results[0]
        .content
        .as_deref()
        .unwrap()
        .contains("missing.txt"));
    assert_eq!(s.helper.requests().len(), 1);
    let first = s.helper.requests()[0].messages[1].content.clone().unwrap();
    assert!(first.starts_with("read"), "{first}");
    assert!(
        first.contains("Attached: /attachments/notes.txt (text/plain, 5 bytes)"),
        "{first}"
    );
    assert_eq!(results[1].content.as_deref(), Some("read it"));
}

#[tokio::test]
async fn an_approval_inside_a_sub_prompt_pauses_the_thread_and_the_call_gets_one_result() {
    let s = setup(
        json!("helper"),
        helper_prompt(json!({"tools": ["guarded"]})),
        lead_calls(json!({"message": "go"})),
        json!([{"toolCalls": [{"name": "guarded", "arguments": {}}]}, {"text": "guarded ran"}]),
    );
    let mut rt = s.rt;
    let runs = Arc::new(Mutex::new(0));
    let counter = runs.clone();
    rt.register_tool(
        DynamicTool::new("guarded", "Needs approval.")
            .parameters(json!({"type": "object", "properties": {}}))
            .approval(Approval::always())
            .handler(move |_: Value, _| {
                let counter = counter.clone();
                async move {
                    *counter.lock().unwrap() += 1;
                    Ok::<_, ToolError>("done".to_owned())
                }
            })
            .build()
            .unwrap(),
    );
    let thread = rt.start_thread("a", "start").await.unwrap();
    let RunOutcome::Paused(Waiting::Approval(request)) = rt.run(&thread.id).await.unwrap() else {
        panic!("the thread should wait for the approval inside the sub-prompt");
    };
    assert_eq!(request.tool, "guarded");
    assert_eq!(
        s.store.thread(&thread.id).unwrap().status,
        ThreadStatus::Paused
    );
    // The lead's call is journaled and has no result while it waits.
    let messages = s.store.messages(&thread.id).unwrap();
    let lead_call = messages[1].tool_calls[0].id.clone();
    assert!(messages
        .iter()
        .all(|m| m.tool_call_id.as_ref() != Some(&lead_call)));
    rt.decide(&thread.id, &request.call_id, Verdict::approve("alice"))
        .await
        .unwrap();
    let outcome = rt.run(&thread.id).await.unwrap();
    assert_eq!(outcome, RunOutcome::Done(StopReason::Response));
    assert_eq!(*runs.lock().unwrap(), 1);
    let messages = s.store.messages(&thread.id).unwrap();
    assert_eq!(
        helper_result(&messages).content.as_deref(),
        Some("guarded ran")
    );
    // The sub-prompt's first message was stored once, and it was asked twice in all.
    assert_eq!(
        messages
            .iter()
            .filter(|m| m.depth == 1 && m.role == Role::User)
            .count(),
        1
    );
    assert_eq!(s.helper.requests().len(), 2);
}

#[tokio::test]
async fn a_secret_in_a_sub_prompt_is_redacted_like_anywhere_else() {
    let s = setup(
        json!({"name": "helper", "includeToolCalls": true}),
        helper_prompt(json!({"tools": ["leak"]})),
        lead_calls(json!({"message": format!("use {SECRET}")})),
        json!([{"toolCalls": [{"name": "leak", "arguments": {}}]}, {"text": "used it"}]),
    );
    let mut rt = s.rt;
    rt.register_tool(
        DynamicTool::new("leak", "Returns the token.")
            .parameters(json!({"type": "object", "properties": {}}))
            .variable(VariableDecl::secret("TOKEN"))
            .handler(|_: Value, ctx| async move {
                let state = ctx.get::<ThreadState>().unwrap();
                Ok::<_, ToolError>(format!("token={}", state.env("TOKEN").unwrap()))
            })
            .build()
            .unwrap(),
    );
    rt.set_secret_key(SecretKey::generate().unwrap());
    let thread = rt
        .start_thread_with("a", "go", vec![VariableValue::secret("TOKEN", SECRET)])
        .await
        .unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    // Neither model was sent the secret, and the call's result does not hold it.
    let sent = format!("{:?}{:?}", s.lead.requests(), s.helper.requests());
    assert!(!sent.contains(SECRET));
    let messages = s.store.messages(&thread.id).unwrap();
    let result = helper_result(&messages).content.clone().unwrap();
    assert!(result.contains("token="), "{result}");
    assert!(!result.contains(SECRET), "{result}");
    drop(rt);
    drop(s.store);
    assert_no_trace_in_files(&s._project.root.join("t.db"));
}

#[tokio::test]
async fn prompt_path_grows_when_a_call_runs_inside_a_sub_prompt() {
    let s = setup(
        json!("helper"),
        helper_prompt(json!({"tools": ["where"]})),
        json!([{"toolCalls": [{"name": "where", "arguments": {}}]},
               {"toolCalls": [{"name": "helper", "arguments": {"message": "go"}}]},
               {"text": "thanks"}]),
        json!([{"toolCalls": [{"name": "where", "arguments": {}}]}, {"text": "ok"}]),
    );
    let rt = s.rt;
    let thread = rt.start_thread("a", "start").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    let paths: Vec<(u32, String)> = s
        .store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .filter(|m| m.name.as_deref() == Some("where"))
        .map(|m| (m.depth, m.content.unwrap_or_default()))
        .collect();
    assert_eq!(
        paths,
        [(0, "lead".to_owned()), (1, "lead/helper".to_owned())]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_inside_a_sub_prompt_ends_it_and_the_call_gets_one_result_saying_so() {
    let s = setup(
        json!("helper"),
        helper_prompt(json!({"tools": ["wait", "ping"]})),
        lead_calls(json!({"message": "go"})),
        json!([{"toolCalls": [{"name": "wait", "arguments": {}}, {"name": "ping", "arguments": {}}]},
               {"text": "never"}]),
    );
    let mut rt = s.rt;
    let started = Arc::new(tokio::sync::Notify::new());
    let signal = started.clone();
    rt.register_tool(
        DynamicTool::new("wait", "Waits until the run is stopped.")
            .parameters(json!({"type": "object", "properties": {}}))
            .handler(move |_: Value, ctx: toolhost_core::ToolContext| {
                let signal = signal.clone();
                async move {
                    signal.notify_one();
                    while !ctx.abort_signal().is_aborted() {
                        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    }
                    Ok::<_, ToolError>("noticed the stop".to_owned())
                }
            })
            .build()
            .unwrap(),
    );
    let rt = Arc::new(rt);
    let thread = rt.start_thread("a", "start").await.unwrap();
    let (runner, id) = (rt.clone(), thread.id.clone());
    let task = tokio::spawn(async move { runner.run(&id).await });
    started.notified().await;
    assert!(rt.stop(&thread.id).await);
    assert_eq!(
        task.await.unwrap().unwrap(),
        RunOutcome::Done(StopReason::Stopped)
    );
    // Neither model was asked again; every call has one result, the call that had not started
    // says it did not run, and the lead's call says its sub-prompt was stopped.
    assert_eq!(s.lead.requests().len(), 1);
    assert_eq!(s.helper.requests().len(), 1);
    let messages = s.store.messages(&thread.id).unwrap();
    for m in &messages {
        for c in &m.tool_calls {
            let n = messages
                .iter()
                .filter(|r| r.tool_call_id.as_ref() == Some(&c.id))
                .count();
            assert_eq!(n, 1, "call {} of {} has {n} results", c.id, c.name);
        }
    }
    let result = helper_result(&messages);
    assert_eq!(result.status, Some(ToolStatus::Error));
    assert!(result.content.as_deref().unwrap().contains("stopped"));
    assert_eq!(
        s.store.thread(&thread.id).unwrap().status,
        ThreadStatus::Idle
    );
}
