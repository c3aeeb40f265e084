//! Resumable sub-agents (spec 001 §5–§6, catalogue SA-14 … SA-17): a prompt that offers an agent
//! with `resumable` gets `subagent_create` and `subagent_message` instead of a tool of the
//! agent's name; an instance keeps its conversation across sessions, each message from the
//! parent opening a new session of the child, answered by the side `receives_messages` names.

mod common;

use common::subprompts::Recorded;
use common::Project;
use serde_json::{json, Value};
use std::sync::Arc;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_runtime::engine::{RunOutcome, Runtime, StopReason, ThreadState};
use toolhost_runtime::variables::secrets::SecretKey;
use toolhost_runtime::variables::VariableValue;
use toolhost_store::{Role, SqliteStore, Store, ThreadStatus};

/// Agent `lead` (ai_human) offers `helper` as `entry`; `helper` (dual_ai) has side A `worker`
/// and side B `critic`, and either side ends the session with `report`.
fn project(entry: Value, worker: Value, critic: Value) -> Project {
    let prompt = |model: &str, tools: Value, schema: Option<Value>| {
        let mut p = json!({"toolDescription": "x", "prompt": "Work.", "model": model, "tools": tools,
            "includeChat": true, "includePastTools": true});
        if let Some(schema) = schema {
            p["requiredSchema"] = schema;
        }
        p.to_string()
    };
    let model = |script: &str| json!({"provider": "test", "script": script}).to_string();
    let report = json!({"name": "report", "messageProperty": "text"});
    let files = vec![
        (
            "agents/agents/lead.json",
            json!({"type": "ai_human", "sideA": {"prompt": "lead"}}).to_string(),
        ),
        (
            "agents/agents/helper.json",
            json!({
                "type": "dual_ai", "description": "Helps.", "maxSessionTurns": 4,
                "sideA": {"prompt": "worker", "sessionStop": report},
                "sideB": {"prompt": "critic", "sessionStop": report}
            })
            .to_string(),
        ),
        (
            "agents/prompts/lead.json",
            prompt("lead", json!([entry]), None),
        ),
        (
            "agents/prompts/worker.json",
            prompt(
                "worker",
                json!(["report", "remember", "tell"]),
                Some(json!({
                    "type": "object",
                    "properties": {"message": {"type": "string"}, "topic": {"type": "string"}},
                    "required": ["message", "topic"]
                })),
            ),
        ),
        (
            "agents/prompts/critic.json",
            prompt("critic", json!(["report"]), None),
        ),
        ("agents/models/lead.json", model("lead.json")),
        ("agents/models/worker.json", model("worker.json")),
        ("agents/models/critic.json", model("critic.json")),
        ("worker.json", worker.to_string()),
        ("critic.json", critic.to_string()),
    ];
    Project::with_files(&files)
}

/// The runtime on `project`, with `report` and `remember` (which stores the arguments the
/// instance was started with under `seen`) and the lead's model recording its requests.
async fn runtime(project: &Project, lead: Value) -> (Runtime, Arc<dyn Store>, Arc<Recorded>) {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&project.root, store.clone()).await.unwrap();
    rt.set_secret_key(SecretKey::generate().unwrap());
    rt.register_tool(
        DynamicTool::new("report", "Reports.")
            .parameters(json!({"type": "object", "properties": {"text": {"type": "string"}}}))
            .handler(|_: Value, _| async move { Ok::<_, ToolError>("reported".to_owned()) })
            .build()
            .unwrap(),
    );
    rt.register_tool(
        DynamicTool::new("remember", "Remembers what the instance was started with.")
            .parameters(json!({"type": "object", "properties": {}}))
            .handler(|_: Value, ctx| async move {
                let state = ctx.get::<ThreadState>().unwrap();
                let arguments = state.arguments().await.unwrap();
                state
                    .set_value("seen", arguments)
                    .await
                    .map_err(|e| ToolError::new(e.to_string()))?;
                Ok::<_, ToolError>("remembered".to_owned())
            })
            .build()
            .unwrap(),
    );
    rt.register_tool(
        DynamicTool::new("tell", "Tells the parent.")
            .parameters(json!({"type": "object", "properties": {}}))
            .handler(|_: Value, ctx| async move {
                let state = ctx.get::<ThreadState>().unwrap();
                state.notify_parent("halfway there").await?;
                Ok::<_, ToolError>("told".to_owned())
            })
            .build()
            .unwrap(),
    );
    let lead_model = Recorded::new(lead);
    rt.register_model("lead", lead_model.clone());
    (rt, store, lead_model)
}

fn create(name: &str, message: &str) -> Value {
    json!({"toolCalls": [{"name": "subagent_create", "arguments":
        {"name": name, "arguments": {"message": message, "topic": "t"}}}]})
}

fn message(name: &str, text: &str) -> Value {
    json!({"toolCalls": [{"name": "subagent_message", "arguments": {"name": name, "message": text}}]})
}

fn report(text: &str) -> Value {
    json!({"toolCalls": [{"name": "report", "arguments": {"text": text}}]})
}

fn offered(request: &toolhost_providers::ModelRequest) -> Vec<String> {
    let mut names: Vec<String> = request.tools.iter().map(|t| t.name.clone()).collect();
    names.sort();
    names
}

/// The texts of the thread's user messages, in order.
fn user_texts(store: &Arc<dyn Store>, thread: &str) -> Vec<String> {
    store
        .messages(thread)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::User)
        .filter_map(|m| m.content)
        .collect()
}

fn results(store: &Arc<dyn Store>, thread: &str) -> Vec<Value> {
    store
        .messages(thread)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| serde_json::from_str(m.content.as_deref().unwrap()).unwrap())
        .collect()
}

#[tokio::test]
async fn an_instance_keeps_its_conversation_and_each_message_opens_a_new_session() {
    let p = project(
        json!({"name": "helper", "initUserMessageProperty": "message",
            "resumable": {"receives_messages": "side_a"}}),
        json!([
            {"toolCalls": [{"name": "remember", "arguments": {}}]},
            report("first: alpha"),
            report("second: beta")
        ]),
        json!([{"text": "unused"}]),
    );
    let lead =
        json!([create("scout", "look at alpha"), message("scout", "now beta"), {"text": "done"}]);
    let (rt, store, lead_model) = runtime(&p, lead).await;
    let thread = rt.start_thread("lead", "go").await.unwrap();
    let outcome = rt.run(&thread.id).await.unwrap();
    assert_eq!(outcome, RunOutcome::Done(StopReason::Response));

    let children = store.threads(Some(&thread.id)).unwrap();
    assert_eq!(children.len(), 1, "one instance, reused");
    let child = &children[0];
    assert!(
        child.tags.contains(&"name:scout".to_owned()),
        "{:?}",
        child.tags
    );
    assert!(child.tags.contains(&"resumable".to_owned()));
    assert_eq!(child.agent, "helper");

    // Each call waited for its session and returned its result with the reference.
    let results = results(&store, &thread.id);
    assert_eq!(results[0]["reference"], child.id.as_str());
    assert_eq!(results[0]["name"], "scout");
    assert_eq!(results[0]["result"], "first: alpha");
    assert_eq!(results[1]["result"], "second: beta");

    // Side A received both messages as user messages, in one thread.
    let history = store.messages(&child.id).unwrap();
    assert_eq!(
        user_texts(&store, &child.id),
        vec!["look at alpha", "now beta"]
    );
    // The second session's worker saw the first session (it keeps its conversation).
    let reports = history
        .iter()
        .filter(|m| m.tool_calls.iter().any(|c| c.name == "report"))
        .count();
    assert_eq!(reports, 2);

    // SA-17: the creating call's arguments are stored on the child and readable by its tools.
    let seen = store.value(&child.id, "seen").unwrap().unwrap();
    assert_eq!(seen, json!({"message": "look at alpha", "topic": "t"}));

    // The lead was offered the lifecycle tools, never a tool of the agent's name:
    // `subagent_message` only once an instance existed.
    let requests = lead_model.requests();
    assert_eq!(offered(&requests[0]), vec!["subagent_create"]);
    assert_eq!(
        offered(&requests[1]),
        vec!["subagent_create", "subagent_message"]
    );
}

#[tokio::test]
async fn once_max_instances_exist_subagent_create_is_no_longer_offered() {
    let p = project(
        json!({"name": "helper", "resumable": {"receives_messages": "side_a", "maxInstances": 1}}),
        json!([report("one"), report("two")]),
        json!([{"text": "unused"}]),
    );
    let lead = json!([create("scout", "a"), message("scout", "b"), {"text": "done"}]);
    let (rt, store, lead_model) = runtime(&p, lead).await;
    let thread = rt.start_thread("lead", "go").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    let requests = lead_model.requests();
    assert_eq!(offered(&requests[0]), vec!["subagent_create"]);
    assert_eq!(offered(&requests[1]), vec!["subagent_message"]);
    assert_eq!(offered(&requests[2]), vec!["subagent_message"]);
    assert_eq!(store.threads(Some(&thread.id)).unwrap().len(), 1);
}

#[tokio::test]
async fn a_create_past_max_instances_or_with_a_taken_name_or_no_name_is_refused() {
    // Two creates in one reply: the second finds the limit reached.
    let p = project(
        json!({"name": "helper", "resumable": {"receives_messages": "side_a", "maxInstances": 1}}),
        json!([report("one")]),
        json!([{"text": "unused"}]),
    );
    let two = json!({"toolCalls": [
        {"name": "subagent_create", "arguments": {"name": "a", "arguments": {"message": "x", "topic": "t"}}},
        {"name": "subagent_create", "arguments": {"name": "b", "arguments": {"message": "y", "topic": "t"}}},
        {"name": "subagent_create", "arguments": {"name": " ", "arguments": {"message": "y", "topic": "t"}}},
        {"name": "subagent_create", "arguments": {"name": "c", "arguments": {"message": "y"}}}
    ]});
    let (rt, store, _) = runtime(&p, json!([two, {"text": "done"}])).await;
    let thread = rt.start_thread("lead", "go").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    let texts: Vec<String> = store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.unwrap())
        .collect();
    assert!(texts[0].contains("\"result\":\"one\""), "{}", texts[0]);
    assert!(
        texts[1].contains("maxInstances") && texts[1].contains('a'),
        "{}",
        texts[1]
    );
    assert!(
        texts[2].contains("`name` must not be empty"),
        "{}",
        texts[2]
    );
    // The arguments follow the receiving side's schema (`topic` is required).
    assert!(
        texts[3].contains("/arguments") && texts[3].contains("\"topic\""),
        "{}",
        texts[3]
    );
    assert_eq!(store.threads(Some(&thread.id)).unwrap().len(), 1);
}

#[tokio::test]
async fn messages_to_side_b_arrive_as_side_a_speaking_and_side_b_answers() {
    let p = project(
        json!({"name": "helper", "resumable": {"receives_messages": "side_b"}}),
        json!([{"text": "unused"}]),
        json!([report("checked 1"), report("checked 2")]),
    );
    let lead = json!([
        {"toolCalls": [{"name": "subagent_create", "arguments": {"name": "c", "arguments": {"message": "check one"}}}]},
        message("c", "check two"),
        {"text": "done"}
    ]);
    let (rt, store, _) = runtime(&p, lead).await;
    let thread = rt.start_thread("lead", "go").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    let results = results(&store, &thread.id);
    assert_eq!(results[0]["result"], "checked 1");
    assert_eq!(results[1]["result"], "checked 2");
    let child = &store.threads(Some(&thread.id)).unwrap()[0];
    let history = store.messages(&child.id).unwrap();
    // SA-14: the parent's messages are stored as assistant messages (side A's voice).
    let inbound: Vec<(&Role, &str)> = history
        .iter()
        .filter(|m| m.metadata.inbound)
        .map(|m| (&m.role, m.content.as_deref().unwrap_or_default()))
        .collect();
    assert_eq!(
        inbound,
        vec![
            (&Role::Assistant, "check one"),
            (&Role::Assistant, "check two")
        ]
    );
    assert!(!history.iter().any(|m| m.role == Role::User));
}

#[tokio::test]
async fn implicit_non_blocking_instances_queue_each_session_result_to_the_parent() {
    let p = project(
        json!({"name": "helper", "blocking": false, "resumable": {"receives_messages": "side_a"}}),
        json!([report("first"), report("second")]),
        json!([{"text": "unused"}]),
    );
    let lead = json!([
        create("s", "one"),
        {"text": "started"},
        message("s", "two"),
        {"text": "sent"},
        {"text": "all in"}
    ]);
    let (rt, store, _) = runtime(&p, lead).await;
    let thread = rt.start_thread("lead", "go").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    let users = user_texts(&store, &thread.id);
    assert_eq!(users.len(), 3, "{users:?}");
    assert!(users[1].contains("instance \"s\"") && users[1].contains("first"));
    assert!(users[2].contains("second"), "{users:?}");
    let child = &store.threads(Some(&thread.id)).unwrap()[0];
    assert_eq!(store.thread(&child.id).unwrap().status, ThreadStatus::Done);
}

#[tokio::test]
async fn explicit_instances_reach_the_parent_only_through_notify_parent() {
    let p = project(
        json!({"name": "helper", "blocking": false,
            "resumable": {"receives_messages": "side_a", "parentCommunication": "explicit"}}),
        json!([
            {"toolCalls": [{"name": "remember", "arguments": {}}]},
            {"toolCalls": [{"name": "tell", "arguments": {}}]},
            report("quiet result")
        ]),
        json!([{"text": "unused"}]),
    );
    let lead = json!([create("s", "one"), {"text": "started"}, {"text": "heard it"}]);
    let (rt, store, _) = runtime(&p, lead).await;
    let thread = rt.start_thread("lead", "go").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    let users = user_texts(&store, &thread.id);
    assert_eq!(users.len(), 2, "{users:?}");
    assert!(users[1].contains("halfway there") && users[1].contains("\"s\""));
    assert!(!users.iter().any(|u| u.contains("quiet result")));
}

#[tokio::test]
async fn a_notify_from_a_thread_without_a_parent_is_refused() {
    let p = project(
        json!("tell"),
        json!([{"text": "unused"}]),
        json!([{"text": "unused"}]),
    );
    let lead = json!([{"toolCalls": [{"name": "tell", "arguments": {}}]}, {"text": "ok"}]);
    let (rt, store, _) = runtime(&p, lead).await;
    let thread = rt.start_thread("lead", "go").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    let result = store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    let text = result.content.unwrap();
    assert!(text.contains("is not a sub-agent"), "{text}");
}

/// The worker of `p` declares `REGION_KEY` secret, required and scoped: no thread inherits it.
fn require_a_scoped_key(p: &Project) {
    let worker = p.root.join("agents/prompts/worker.json");
    let mut def: Value = serde_json::from_str(&std::fs::read_to_string(&worker).unwrap()).unwrap();
    def["variables"] =
        json!([{"name": "REGION_KEY", "type": "secret", "required": true, "scoped": true}]);
    std::fs::write(&worker, def.to_string()).unwrap();
}

#[tokio::test]
async fn an_instance_missing_scoped_variables_waits_for_them_and_their_values_boot_it() {
    let p = project(
        json!({"name": "helper", "initUserMessageProperty": "message",
            "resumable": {"receives_messages": "side_a"}}),
        json!([report("scouted")]),
        json!([{"text": "unused"}]),
    );
    require_a_scoped_key(&p);
    let lead = json!([
        create("scout", "look"),
        {"text": "asked for the key"},
        {"text": "got the result"}
    ]);
    let (rt, store, _) = runtime(&p, lead).await;
    let thread = rt.start_thread("lead", "go").await.unwrap();
    rt.run(&thread.id).await.unwrap();

    // The call returned the structured bootstrap error, naming the request and its endpoint.
    let error = &results(&store, &thread.id)[0];
    assert_eq!(error["error"], "subagent_env_required");
    assert_eq!(error["variables"], json!(["REGION_KEY"]));
    let request_id = error["request_id"].as_str().unwrap();
    let endpoint = format!("/v1/threads/{}/variables/{request_id}", thread.id);
    assert_eq!(error["endpoints"]["post"], endpoint.as_str());
    // The instance exists, deferred: nothing of it ran.
    let child = store.threads(Some(&thread.id)).unwrap().remove(0);
    assert_eq!(error["reference"], child.id.as_str());
    assert!(!store
        .messages(&child.id)
        .unwrap()
        .iter()
        .any(|m| m.role == Role::Assistant));
    let requests = store.variable_requests(&thread.id).unwrap();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].names, vec!["REGION_KEY".to_owned()]);
    assert!(requests[0].answered_at.is_none());
    // Running it directly is refused while it waits.
    let refused = rt.run(&child.id).await.unwrap_err().to_string();
    assert!(refused.contains("REGION_KEY"), "{refused}");

    // The value goes to the instance, never to the parent, and answers the request.
    rt.set_variables(
        &thread.id,
        vec![VariableValue::secret("REGION_KEY", "key-7731-secret")],
    )
    .await
    .unwrap();
    let requests = store.variable_requests(&thread.id).unwrap();
    assert!(requests[0].answered_at.is_some());
    let names = |t: &str| -> Vec<String> {
        store
            .variables(t)
            .unwrap()
            .into_iter()
            .map(|v| v.name)
            .collect()
    };
    assert_eq!(names(&child.id), vec!["REGION_KEY".to_owned()]);
    assert!(names(&thread.id).is_empty());

    // The instance runs (as the server starts it); its result arrives as a message, which
    // starts the parent's next turn.
    rt.run(&child.id).await.unwrap();
    let users = user_texts(&store, &thread.id);
    assert!(users.iter().any(|u| u.contains("scouted")), "{users:?}");
    let last = store.messages(&thread.id).unwrap().pop().unwrap();
    assert_eq!(last.content.as_deref(), Some("got the result"));
    for t in [&thread.id, &child.id] {
        for m in store.messages(t).unwrap() {
            let text = serde_json::to_string(&m).unwrap();
            assert!(!text.contains("key-7731-secret"), "{text}");
        }
    }
}
