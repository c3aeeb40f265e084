//! A model's broken arguments go through the repair ladder before its reply is stored: what a
//! repair can mend is stored mended, recorded in the reply's metadata and shown to the model in
//! front of the result; what it cannot becomes an error result listing the violations and asking
//! the model to call again, and the call never runs.

mod common;

use common::{call_answer, one_prompt_project, runtime_on, text_answer, ListModel, Project};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_runtime::engine::{RunOutcome, Runtime, StopReason};
use toolhost_store::Role;

/// A runtime whose `order` tool records the arguments it ran with.
async fn runtime(
    project: &Project,
    model: Arc<ListModel>,
    ran: &Arc<Mutex<Vec<Value>>>,
) -> Runtime {
    let (mut rt, _store) = runtime_on(project, model).await;
    let ran = ran.clone();
    rt.register_tool(
        DynamicTool::new("order", "Orders an item.")
            .parameters(json!({
                "type": "object",
                "properties": {
                    "item": {"type": "string"},
                    "count": {"type": "integer", "minimum": 1}
                },
                "required": ["item", "count"]
            }))
            .handler(move |args: Value, _| {
                let ran = ran.clone();
                async move {
                    ran.lock().unwrap().push(args.clone());
                    Ok::<_, ToolError>(format!("ordered {} {}", args["count"], args["item"]))
                }
            })
            .build()
            .unwrap(),
    );
    rt
}

#[tokio::test]
async fn mended_arguments_are_stored_recorded_and_shown_to_the_model() {
    let project = one_prompt_project(&["order"]);
    let broken = "```json\n{'item': 'tea', 'count': \"3\",}\n```";
    let model = ListModel::new(vec![
        call_answer("wire_1", "order", broken),
        text_answer("Ordered."),
    ]);
    let ran = Arc::new(Mutex::new(Vec::new()));
    let rt = runtime(&project, model.clone(), &ran).await;
    let thread = rt.start_thread("a", "three teas").await.unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );

    // The tool ran once, with what the model meant.
    assert_eq!(*ran.lock().unwrap(), [json!({"item": "tea", "count": 3})]);

    // The reply is stored with the mended arguments and the repair in its metadata.
    let messages = rt.store().messages(&thread.id).unwrap();
    let reply = messages.iter().find(|m| m.role == Role::Assistant).unwrap();
    let stored: Value = serde_json::from_str(&reply.tool_calls[0].arguments).unwrap();
    assert_eq!(stored, json!({"item": "tea", "count": 3}));
    let repairs = &reply.metadata.repairs;
    assert_eq!(repairs[0].call_id, reply.tool_calls[0].id);
    assert_eq!(repairs[0].original, broken);
    let notes: Vec<&str> = repairs[0].notes.iter().map(String::as_str).collect();
    assert!(
        notes.len() >= 3,
        "fence, quotes and comma, then the type: {notes:?}"
    );
    assert!(notes.iter().any(|n| n.contains("count")), "{notes:?}");

    // The stored result is the tool's own; the model sees the repair in front of it.
    let result = messages.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(result.content.as_deref(), Some("ordered 3 \"tea\""));
    let second = &model.requests()[1];
    let seen = second.iter().find(|m| m.tool_call_id.is_some()).unwrap();
    let seen = seen.content.as_deref().unwrap();
    assert!(
        seen.starts_with("[toolhost repaired the arguments of this call before running it: "),
        "{seen}"
    );
    assert!(seen.ends_with("\nordered 3 \"tea\""), "{seen}");
    // Its own call is sent back as stored: mended.
    let sent_call = second.iter().find(|m| !m.tool_calls.is_empty()).unwrap();
    assert_eq!(sent_call.tool_calls[0].arguments, stored.to_string());
}

#[tokio::test]
async fn arguments_no_repair_can_mend_ask_the_model_again_and_never_run() {
    let project = one_prompt_project(&["order"]);
    let model = ListModel::new(vec![
        // A count of zero breaks `minimum`; no coercion changes that.
        call_answer("wire_1", "order", r#"{"item": "tea", "count": 0}"#),
        // Duplicate keys: which count was meant is not knowable, so nothing is guessed.
        call_answer(
            "wire_2",
            "order",
            r#"{"item": "tea", "count": 2, "count": 5}"#,
        ),
        call_answer("wire_3", "order", r#"{"item": "tea", "count": 2}"#),
        text_answer("Ordered two."),
    ]);
    let ran = Arc::new(Mutex::new(Vec::new()));
    let rt = runtime(&project, model.clone(), &ran).await;
    let thread = rt.start_thread("a", "some tea").await.unwrap();
    rt.run(&thread.id).await.unwrap();

    assert_eq!(*ran.lock().unwrap(), [json!({"item": "tea", "count": 2})]);
    let messages = rt.store().messages(&thread.id).unwrap();
    let results: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_deref().unwrap())
        .collect();
    assert_eq!(results.len(), 3);
    assert!(
        results[0].starts_with("ToolCallError: invalid arguments for `order`: at /count"),
        "{}",
        results[0]
    );
    assert!(
        results[0].ends_with(
            "The call was not run. Call `order` again with arguments that fit its schema."
        ),
        "{}",
        results[0]
    );
    assert!(results[1].starts_with("ToolJsonError: "), "{}", results[1]);
    assert!(results[1].contains("duplicate"), "{}", results[1]);
    assert_eq!(results[2], "ordered 2 \"tea\"");
    // Nothing was recorded as repaired, and the failures are errors the model is shown as such.
    assert!(messages.iter().all(|m| m.metadata.repairs.is_empty()));
    let third = &model.requests()[2];
    let failures: Vec<_> = third.iter().filter(|m| m.tool_call_id.is_some()).collect();
    assert!(failures.iter().all(|m| m.is_error), "{failures:?}");
}
