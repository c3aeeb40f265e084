//! Prompt tools (spec 001 §4): a prompt named in another prompt's `tools` is offered as a tool
//! (its name, `toolDescription`, `requiredSchema` or a `message` argument); calling it runs the
//! prompt as a sub-prompt to its end on the same thread, nested under the call, and returns
//! what the entry's `SubpromptConfig` selects (`includeTextResponse`, `includeToolCalls`,
//! `includeErrors`), its first message and attachments taken from the arguments
//! `initUserMessageProperty` and `initAttachmentsProperty` name. Every model here is the
//! scripted `test` model.

mod common;

use common::subprompts::{helper_pings, helper_prompt, helper_result, lead_calls, setup};
use serde_json::{json, Value};
use toolhost_providers::ChatRole;
use toolhost_store::{Message, Role, ToolStatus, Write};

#[tokio::test]
async fn a_prompt_is_offered_with_its_name_tool_description_and_a_message_argument() {
    let s = setup(
        json!("helper"),
        helper_prompt(json!({})),
        lead_calls(json!({"message": "find the key"})),
        helper_pings(),
    )
    .await;
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
    )
    .await;
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
    )
    .await;
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
    )
    .await;
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
    ).await;
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
    )
    .await;
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
    )
    .await;
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
    )
    .await;
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
