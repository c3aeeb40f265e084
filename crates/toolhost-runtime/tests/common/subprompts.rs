//! Helpers of the prompt-tool tests: a thread of agent `a` whose prompt `lead` offers the prompt
//! `helper` as a tool, both on scripted `test` models whose requests are kept.

use super::{ping_tool, Project};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_providers::{Model, ModelFuture, ModelRequest, ScriptedModel};
use toolhost_runtime::engine::{RunOutcome, Runtime, StopReason, ThreadState};
use toolhost_store::{Message, SqliteStore, Store};

/// A scripted model that keeps every request it was sent.
pub struct Recorded {
    script: ScriptedModel,
    seen: Mutex<Vec<ModelRequest>>,
}

impl Recorded {
    pub fn new(turns: Value) -> Arc<Self> {
        Arc::new(Self {
            script: ScriptedModel::parse("test:x", "script.json", &turns.to_string()).unwrap(),
            seen: Mutex::new(Vec::new()),
        })
    }

    pub fn requests(&self) -> Vec<ModelRequest> {
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
/// `ping`, `where` and `finish`, on the scripted models `lead` and `helper`; `helper` is the prompt offered, whose
/// own tools are `ping` and `fail`.
pub struct Setup {
    pub rt: Runtime,
    pub store: Arc<dyn Store>,
    pub lead: Arc<Recorded>,
    pub helper: Arc<Recorded>,
    pub project: Project,
}

pub async fn setup(offer: Value, helper: Value, lead_turns: Value, helper_turns: Value) -> Setup {
    setup_side(
        json!({"prompt": "lead"}),
        offer,
        helper,
        lead_turns,
        helper_turns,
    )
    .await
}

/// [`setup`] with agent `a`'s side written as `side`.
pub async fn setup_side(
    side: Value,
    offer: Value,
    helper: Value,
    lead_turns: Value,
    helper_turns: Value,
) -> Setup {
    let project = Project::with_files(&[
        (
            "agents/agents/a.json",
            json!({"type": "ai_human", "sideA": side}).to_string(),
        ),
        (
            "agents/prompts/lead.json",
            json!({"toolDescription": "Leads.", "prompt": "Lead.", "model": "lead",
                "tools": [offer, "ping", "where", "finish"]})
            .to_string(),
        ),
        ("agents/prompts/helper.json", helper.to_string()),
    ]);
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&project.root, store.clone()).await.unwrap();
    register_tools(&mut rt);
    let lead = Recorded::new(lead_turns);
    let helper_model = Recorded::new(helper_turns);
    rt.register_model("lead", lead.clone());
    rt.register_model("helper", helper_model.clone());
    Setup {
        rt,
        store,
        lead,
        helper: helper_model,
        project,
    }
}

/// Registers the tools the setup's prompts offer: `ping`, `where`, `finish` and `fail`.
pub fn register_tools(rt: &mut Runtime) {
    rt.register_tool(ping_tool());
    rt.register_tool(where_tool());
    rt.register_tool(
        DynamicTool::new("finish", "Ends the session.")
            .parameters(json!({"type": "object", "properties": {"text": {"type": "string"}}}))
            .handler(|_: Value, _| async move { Ok::<_, ToolError>("finished".to_owned()) })
            .build()
            .unwrap(),
    );
    rt.register_tool(
        DynamicTool::new("fail", "Fails.")
            .parameters(json!({"type": "object", "properties": {}}))
            .handler(|_: Value, _| async move { Err::<String, _>(ToolError::new("disk full")) })
            .build()
            .unwrap(),
    );
}

/// A tool that answers the prompt path of its call (`state.execution().promptPath`).
pub fn where_tool() -> toolhost_core::AnyTool {
    DynamicTool::new("where", "Says where the call runs.")
        .parameters(json!({"type": "object", "properties": {}}))
        .handler(|_: Value, ctx| async move {
            let state = ctx.get::<ThreadState>().unwrap();
            Ok::<_, ToolError>(state.execution().prompt_path.join("/"))
        })
        .build()
        .unwrap()
}

pub fn helper_prompt(extra: Value) -> Value {
    let mut prompt = json!({"toolDescription": "Looks things up for you.",
        "prompt": "Help.", "model": "helper", "tools": ["ping", "fail"]});
    prompt
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    prompt
}

/// The lead calls `helper` with `args`, then answers "thanks".
pub fn lead_calls(args: Value) -> Value {
    json!([{"toolCalls": [{"name": "helper", "arguments": args}]}, {"text": "thanks"}])
}

/// The helper pings, then answers "found it".
pub fn helper_pings() -> Value {
    json!([{"toolCalls": [{"name": "ping", "arguments": {}}]}, {"text": "found it"}])
}

impl Setup {
    pub async fn run(&self) -> (String, Vec<Message>) {
        let thread = self.rt.start_thread("a", "start").await.unwrap();
        let outcome = self.rt.run(&thread.id).await.unwrap();
        assert_eq!(outcome, RunOutcome::Done(StopReason::Response));
        (thread.id.clone(), self.store.messages(&thread.id).unwrap())
    }
}

/// The result the lead's call of `helper` got.
pub fn helper_result(messages: &[Message]) -> &Message {
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
