//! Spec 004's execution model: a prompt that declares the schema of its final `output` asks its
//! model for one combined reply `{meta, output, calls}` per step, as structured output. Calls
//! run as calls of their tools (explicit ones run, latent ones are answered by their
//! `_output`), the model is shown their results in the next step, and the run ends with the
//! `output` once one is given; a reply that does not fit is asked again.

mod common;

use common::{one_prompt_project, runtime_on, text_answer, ListModel, Project};
use serde_json::{json, Value};
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::AnyTool;
use toolhost_providers::ChatRole;
use toolhost_runtime::engine::{RunOutcome, StopReason};
use toolhost_runtime::variables::secrets::SecretKey;
use toolhost_runtime::variables::VariableValue;
use toolhost_store::{Role, ToolStatus};

const SENTIMENT: &str = r#"{
  "type": "object",
  "description": "Analyzes the sentiment of a text.",
  "properties": {
    "text": {"type": "string"},
    "_output": {
      "type": "object",
      "properties": {"sentiment": {"type": "string"}},
      "required": ["sentiment"],
      "additionalProperties": false
    }
  },
  "required": ["text"],
  "additionalProperties": false
}"#;

/// The spec's agent: the final output `{summary}`, the explicit tool `greetUser` (which says
/// what it was called with) and the latent tool `sentiment`.
fn project() -> Project {
    let project = one_prompt_project(&["greetUser", "sentiment"]);
    set_output(
        &project,
        json!({
            "type": "object",
            "properties": {"summary": {"type": "string"}},
            "required": ["summary"]
        }),
    );
    std::fs::write(project.root.join("agents/tools/sentiment.json"), SENTIMENT).unwrap();
    project
}

/// Gives the project's prompt `p` the field `output`.
fn set_output(project: &Project, output: Value) {
    let prompt = project.root.join("agents/prompts/p.json");
    let mut def: Value = serde_json::from_str(&std::fs::read_to_string(&prompt).unwrap()).unwrap();
    def["output"] = output;
    std::fs::write(&prompt, def.to_string()).unwrap();
}

fn greet_user() -> AnyTool {
    DynamicTool::new("greetUser", "Greets the user by name.")
        .parameters(json!({
            "type": "object",
            "properties": {"userName": {"type": "string"}},
            "required": ["userName"],
            "additionalProperties": false
        }))
        .handler(|args: Value, _| async move { Ok::<_, ToolError>(format!("greeted with {args}")) })
        .build()
        .unwrap()
}

#[tokio::test]
async fn tools_are_called_in_one_step_and_the_output_given_in_the_next() {
    let project = project();
    let model = ListModel::new(vec![
        text_answer(
            r#"{"meta": {"version": "1"}, "output": null, "calls": [
                {"_tool": "greetUser", "userName": "Ada", "_reasoningForCall": "the user said hello"},
                {"_tool": "sentiment", "text": "hello", "_output": {"sentiment": "positive"}}
            ]}"#,
        ),
        text_answer(
            r#"{"meta": {"version": "2"}, "output": {"summary": "Ada was greeted"}, "calls": []}"#,
        ),
    ]);
    let (mut rt, store) = runtime_on(&project, model.clone()).await;
    rt.register_tool(greet_user());
    let thread = rt.start_thread("a", "Say hello to Ada.").await.unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );

    // Each request carries the combined request as its response format and no native tools.
    let requests = model.whole_requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0];
    assert!(first.tools.is_empty());
    assert_eq!(first.tool_choice, None);
    let format = first.response_format.as_ref().expect("a response format");
    let schema = &format.schema;
    assert_eq!(schema["required"], json!(["meta", "calls", "output"]));
    assert_eq!(
        schema["properties"]["output"]["type"],
        json!(["object", "null"])
    );
    let items = schema["properties"]["calls"]["items"]["anyOf"]
        .as_array()
        .expect("one call item per tool");
    let item = |tool: &str| {
        items
            .iter()
            .find(|i| i["properties"]["_tool"]["const"] == tool)
            .unwrap_or_else(|| panic!("no item for {tool}: {schema}"))
    };
    // The explicit tool is shown without `_output`, the latent one with it.
    assert!(item("greetUser")["properties"].get("_output").is_none());
    assert!(item("sentiment")["properties"].get("_output").is_some());
    assert_eq!(item("greetUser")["required"], json!(["_tool", "userName"]));

    // The calls ran as calls of their tools: the explicit one without `_reasoningForCall`, the
    // latent one answered by its `_output`.
    let messages = store.messages(&thread.id).unwrap();
    let results: Vec<_> = messages.iter().filter(|m| m.role == Role::Tool).collect();
    assert_eq!(results.len(), 2);
    assert!(results
        .iter()
        .all(|r| r.status == Some(ToolStatus::Success)));
    assert_eq!(
        results[0].content.as_deref(),
        Some(r#"greeted with {"userName":"Ada"}"#)
    );
    assert_eq!(
        results[1].content.as_deref(),
        Some(r#"{"sentiment":"positive"}"#)
    );

    // The first reply is kept as the model wrote it (its reasoning for the call included) and
    // has no text; the last one's text is the output.
    let replies: Vec<_> = messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .collect();
    assert_eq!(replies.len(), 2);
    assert_eq!(replies[0].content, None);
    let kept = replies[0]
        .metadata
        .combined
        .as_ref()
        .expect("the reply is kept");
    assert_eq!(kept["calls"][0]["_reasoningForCall"], "the user said hello");
    assert_eq!(kept["meta"]["version"], "1");
    assert_eq!(replies[0].tool_calls.len(), 2);
    assert_eq!(
        replies[1].content.as_deref(),
        Some(r#"{"summary":"Ada was greeted"}"#)
    );

    // The second step showed the model its reply and each result, naming the call.
    let second = &requests[1].messages;
    let reply = second
        .iter()
        .find(|m| m.role == ChatRole::Assistant)
        .expect("the first reply is shown");
    let shown: Value = serde_json::from_str(reply.content.as_deref().unwrap()).unwrap();
    assert_eq!(&shown, kept);
    assert!(reply.tool_calls.is_empty());
    let told: Vec<&str> = second
        .iter()
        .filter(|m| m.role == ChatRole::User)
        .filter_map(|m| m.content.as_deref())
        .collect();
    assert!(
        told.iter()
            .any(|t| t.starts_with("[call 1 of your last reply (greetUser)]")
                && t.contains(r#"greeted with {"userName":"Ada"}"#)),
        "{told:?}"
    );
    assert!(
        told.iter()
            .any(|t| t.starts_with("[call 2 of your last reply (sentiment)]")),
        "{told:?}"
    );
    assert!(second.iter().all(|m| m.role != ChatRole::Tool));
}

#[tokio::test]
async fn calls_made_with_the_output_run_before_the_run_ends() {
    let project = project();
    let model = ListModel::new(vec![text_answer(
        r#"{"meta": {}, "output": {"summary": "done"}, "calls": [{"_tool": "greetUser", "userName": "Bo"}]}"#,
    )]);
    let (mut rt, store) = runtime_on(&project, model.clone()).await;
    rt.register_tool(greet_user());
    let thread = rt.start_thread("a", "Greet Bo and finish.").await.unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    assert_eq!(model.whole_requests().len(), 1);
    let messages = store.messages(&thread.id).unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last.role, Role::Tool);
    assert_eq!(
        last.content.as_deref(),
        Some(r#"greeted with {"userName":"Bo"}"#)
    );
}

#[tokio::test]
async fn a_reply_with_neither_output_nor_calls_goes_on() {
    let project = project();
    let model = ListModel::new(vec![
        text_answer(r#"{"meta": {}, "output": null, "calls": []}"#),
        text_answer(r#"{"meta": {}, "output": {"summary": "thought it over"}, "calls": []}"#),
    ]);
    let (mut rt, store) = runtime_on(&project, model.clone()).await;
    rt.register_tool(greet_user());
    let thread = rt.start_thread("a", "Think.").await.unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    assert_eq!(model.whole_requests().len(), 2);
    let last = store.messages(&thread.id).unwrap().pop().unwrap();
    assert_eq!(
        last.content.as_deref(),
        Some(r#"{"summary":"thought it over"}"#)
    );
}

#[tokio::test]
async fn a_reply_that_does_not_fit_is_asked_again_and_not_stored() {
    let project = project();
    let model = ListModel::new(vec![
        // The output breaks its schema, then a call names a tool the step does not offer.
        text_answer(r#"{"meta": {}, "output": {"summary": 7}, "calls": []}"#),
        text_answer(r#"{"meta": {}, "output": null, "calls": [{"_tool": "rm", "path": "/"}]}"#),
        text_answer(r#"{"meta": {}, "output": {"summary": "fine"}, "calls": []}"#),
    ]);
    let (mut rt, store) = runtime_on(&project, model.clone()).await;
    rt.register_tool(greet_user());
    let thread = rt.start_thread("a", "Summarise.").await.unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    assert_eq!(model.whole_requests().len(), 3);
    let replies: Vec<_> = store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::Assistant)
        .collect();
    assert_eq!(replies.len(), 1);
    assert_eq!(replies[0].content.as_deref(), Some(r#"{"summary":"fine"}"#));
}

#[tokio::test]
async fn an_output_that_is_not_a_schema_is_an_error_naming_the_file_and_field() {
    for (output, says) in [
        (
            json!("summary"),
            "`output` is the JSON Schema of the final output",
        ),
        (
            json!({"type": "object", "properties": {"n": {"pattern": "("}}}),
            "`output` at",
        ),
    ] {
        let project = project();
        set_output(&project, output);
        let (rt, _store) = runtime_on(&project, ListModel::new(vec![])).await;
        let problems = rt.problems();
        assert!(
            problems
                .iter()
                .any(|p| p.path.ends_with("agents/prompts/p.json") && p.message.contains(says)),
            "{problems:?}"
        );
    }
}

#[tokio::test]
async fn results_are_remembered_at_their_output_path_and_shown_with_each_request() {
    let project = project();
    let model = ListModel::new(vec![
        text_answer(
            r#"{"meta": {}, "output": null, "calls": [
                {"_tool": "greetUser", "userName": "Ada", "_outputPath": "greetings.ada"},
                {"_tool": "sentiment", "text": "hi", "_output": {"sentiment": "positive"}, "_outputPath": "/mood"}
            ]}"#,
        ),
        text_answer(
            r#"{"meta": {}, "output": null, "calls": [
                {"_tool": "sentiment", "text": "hm", "_output": {"sentiment": "neutral"}, "_outputPath": "mood"}
            ]}"#,
        ),
        text_answer(r#"{"meta": {}, "output": {"summary": "done"}, "calls": []}"#),
    ]);
    let (mut rt, store) = runtime_on(&project, model.clone()).await;
    rt.register_tool(greet_user());
    let thread = rt.start_thread("a", "Greet Ada.").await.unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    // The path is not sent to the tool.
    let results: Vec<_> = store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::Tool)
        .collect();
    assert_eq!(
        results[0].content.as_deref(),
        Some(r#"greeted with {"userName":"Ada"}"#)
    );
    // No state before any result; then the document as it stands, the latest result at a
    // path winning.
    let state_of = |request: &toolhost_providers::ModelRequest| -> Option<Value> {
        let last = request.messages.last()?;
        let text = last.content.as_deref()?;
        let (head, document) = text.split_once('\n')?;
        head.starts_with("[the state of the work")
            .then(|| serde_json::from_str(document).unwrap())
    };
    let requests = model.whole_requests();
    // The state goes with a request once, as it stands then: it is not left in the conversation.
    for request in &requests {
        let told = request
            .messages
            .iter()
            .filter(|m| {
                m.content
                    .as_deref()
                    .is_some_and(|c| c.starts_with("[the state of the work"))
            })
            .count();
        assert!(told <= 1, "{told} state messages in one request");
    }
    assert_eq!(state_of(&requests[0]), None);
    assert_eq!(
        state_of(&requests[1]),
        Some(
            json!({"greetings": {"ada": r#"greeted with {"userName":"Ada"}"#}, "mood": {"sentiment": "positive"}})
        )
    );
    assert_eq!(
        state_of(&requests[2]),
        Some(
            json!({"greetings": {"ada": r#"greeted with {"userName":"Ada"}"#}, "mood": {"sentiment": "neutral"}})
        )
    );
}

#[tokio::test]
async fn a_secret_the_model_writes_into_its_reply_is_stored_redacted() {
    const SECRET: &str = "sk-combined-4711-canary";
    let project = project();
    let model = ListModel::new(vec![text_answer(&format!(
        r#"{{"meta": {{"note": "{SECRET}"}}, "output": {{"summary": "key {SECRET}"}}, "calls": [{{"_tool": "greetUser", "userName": "Ada", "_reasoningForCall": "with {SECRET}"}}]}}"#
    ))]);
    let (mut rt, store) = runtime_on(&project, model.clone()).await;
    rt.register_tool(greet_user());
    rt.set_secret_key(SecretKey::generate().unwrap());
    let thread = rt
        .start_thread_with("a", "Greet.", vec![VariableValue::secret("TOKEN", SECRET)])
        .await
        .unwrap();
    rt.run(&thread.id).await.unwrap();
    let stored = serde_json::to_string(&store.messages(&thread.id).unwrap()).unwrap();
    assert!(!stored.contains(SECRET), "{stored}");
    assert!(stored.contains("[redacted TOKEN]"), "{stored}");
}

#[tokio::test]
async fn an_earlier_turns_reply_is_shown_without_its_calls_unless_past_tools_are() {
    for (past_tools, calls_shown) in [(false, 0), (true, 1)] {
        let project = project();
        let prompt = project.root.join("agents/prompts/p.json");
        let mut def: Value =
            serde_json::from_str(&std::fs::read_to_string(&prompt).unwrap()).unwrap();
        def["includeChat"] = json!(true);
        def["includePastTools"] = json!(past_tools);
        std::fs::write(&prompt, def.to_string()).unwrap();
        let model = ListModel::new(vec![
            text_answer(
                r#"{"meta": {}, "output": {"summary": "one"}, "calls": [{"_tool": "greetUser", "userName": "Ada"}]}"#,
            ),
            text_answer(r#"{"meta": {}, "output": {"summary": "two"}, "calls": []}"#),
        ]);
        let (mut rt, _store) = runtime_on(&project, model.clone()).await;
        rt.register_tool(greet_user());
        let thread = rt.start_thread("a", "first").await.unwrap();
        rt.run(&thread.id).await.unwrap();
        rt.send(&thread.id, "second").await.unwrap();
        let second = &model.requests()[1];
        let earlier = second
            .iter()
            .find(|m| m.role == ChatRole::Assistant)
            .expect("the first turn's reply");
        let shown: Value = serde_json::from_str(earlier.content.as_deref().unwrap()).unwrap();
        assert_eq!(shown["output"]["summary"], "one");
        assert_eq!(
            shown["calls"].as_array().unwrap().len(),
            calls_shown,
            "includePastTools {past_tools}: {shown}"
        );
    }
}

/// A JavaScript tool that queues `greetUser` for Bo once.
const QUEUES_A_GREETING: &str = "import { defineTool } from '@standardagents/spec';\n\
import { z } from 'zod';\n\
export default defineTool({\n\
  description: 'Queues a greeting.',\n\
  args: z.object({}),\n\
  execute: async (state) => {\n\
    state.queueTool('greetUser', { userName: 'Bo' });\n\
    return 'queued';\n\
  },\n\
});\n";

#[tokio::test]
async fn a_queued_call_is_shown_as_a_reply_of_the_same_shape_and_never_as_a_native_call() {
    let project = one_prompt_project(&["greetUser", "queue_greeting"]);
    set_output(
        &project,
        json!({"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]}),
    );
    std::fs::write(
        project.root.join("agents/tools/queue_greeting.js"),
        QUEUES_A_GREETING,
    )
    .unwrap();
    let model = ListModel::new(vec![
        text_answer(r#"{"meta": {}, "output": null, "calls": [{"_tool": "queue_greeting"}]}"#),
        text_answer(r#"{"meta": {}, "output": {"summary": "Bo was greeted"}, "calls": []}"#),
    ]);
    let (mut rt, store) = runtime_on(&project, model.clone()).await;
    rt.register_tool(greet_user());
    let thread = rt.start_thread("a", "Queue a greeting.").await.unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    let greeted = store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| m.content)
        .any(|c| c == r#"greeted with {"userName":"Bo"}"#);
    assert!(greeted);
    let last = model.requests().last().unwrap().clone();
    assert!(last
        .iter()
        .all(|m| m.role != ChatRole::Tool && m.tool_calls.is_empty()));
    let queued = last
        .iter()
        .filter(|m| m.role == ChatRole::Assistant)
        .filter_map(|m| m.content.as_deref())
        .find(|c| c.contains("greetUser"))
        .expect("the queued call is shown");
    let shown: Value = serde_json::from_str(queued).unwrap();
    assert_eq!(
        shown["calls"],
        json!([{"_tool": "greetUser", "userName": "Bo"}])
    );
    assert!(last.iter().any(|m| m.role == ChatRole::User
        && m.content
            .as_deref()
            .is_some_and(|c| c.starts_with("[call 1 of your last reply (greetUser)]"))));
}
