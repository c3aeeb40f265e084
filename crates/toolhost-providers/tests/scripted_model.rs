//! The scripted test model plays its turns by position in the conversation, refuses calls to
//! tools that were not offered, and reports bad scripts with the line or turn.

use futures_executor::block_on;
use toolhost_core::DynamicTool;
use toolhost_providers::{
    ChatMessage, ChatRole, FinishReason, Model, ModelApi, ModelError, ModelErrorKind, ModelRequest,
    ResponseFormat, ScriptedModel,
};

fn tool(name: &str) -> toolhost_core::ToolDefinition {
    DynamicTool::new(name, "A tool.")
        .build()
        .unwrap()
        .definition()
        .clone()
}

fn msg(role: ChatRole) -> ChatMessage {
    ChatMessage {
        role,
        content: Some("x".into()),
        tool_calls: vec![],
        tool_call_id: None,
        ..ChatMessage::default()
    }
}

const SCRIPT: &str = r#"
{"toolCalls": [{"name": "get_weather", "arguments": {"location": "Oslo"}}]}
{"toolCalls": [{"name": "append_line", "arguments": "{\"text\": broken"}], "times": 2}
{"text": "It is sunny."}
"#;

#[test]
fn turns_are_played_by_the_number_of_assistant_messages_so_far() {
    let model = ScriptedModel::parse("test", "script.jsonl", SCRIPT).unwrap();
    assert_eq!(model.len(), 4);
    let tools = vec![tool("get_weather"), tool("append_line")];
    let mut messages = vec![msg(ChatRole::User)];
    let first = block_on(model.complete(&ModelRequest {
        messages: messages.clone(),
        tools: tools.clone(),
        ..ModelRequest::default()
    }))
    .unwrap();
    assert_eq!(first.finish, FinishReason::ToolCalls);
    assert_eq!(first.tool_calls[0].arguments, r#"{"location":"Oslo"}"#);
    // The same history gives the same turn: a restarted thread sees the same reply.
    let again = block_on(model.complete(&ModelRequest {
        messages: messages.clone(),
        tools: tools.clone(),
        ..ModelRequest::default()
    }))
    .unwrap();
    assert_eq!(again, first);
    messages.extend([msg(ChatRole::Assistant), msg(ChatRole::Tool)]);
    let second = block_on(model.complete(&ModelRequest {
        messages: messages.clone(),
        tools: tools.clone(),
        ..ModelRequest::default()
    }))
    .unwrap();
    assert_eq!(
        second.tool_calls[0].arguments, r#"{"text": broken"#,
        "string arguments are sent as they are"
    );
    messages.extend([msg(ChatRole::Assistant), msg(ChatRole::Assistant)]);
    let last = block_on(model.complete(&ModelRequest {
        messages: messages.clone(),
        tools: tools.clone(),
        ..ModelRequest::default()
    }))
    .unwrap();
    assert_eq!(
        (last.text.as_deref(), last.finish),
        (Some("It is sunny."), FinishReason::Stop)
    );
    assert_eq!(last.usage.input_tokens, None, "unknown counts stay unknown");
    messages.push(msg(ChatRole::Assistant));
    let past = block_on(model.complete(&ModelRequest {
        messages,
        tools,
        ..ModelRequest::default()
    }))
    .unwrap_err();
    assert_eq!(
        past,
        ModelError::new(
            ModelApi::Scripted,
            ModelErrorKind::Script,
            "the script of test has 4 turns and turn 5 was asked for"
        )
    );
}

#[test]
fn a_call_to_a_tool_that_was_not_offered_is_refused_naming_the_turn() {
    let model = ScriptedModel::parse(
        "test",
        "s.json",
        r#"[{"toolCalls": [{"name": "delete_everything"}]}]"#,
    )
    .unwrap();
    let err = block_on(model.complete(&ModelRequest {
        messages: vec![msg(ChatRole::User)],
        tools: vec![tool("get_weather")],
        ..ModelRequest::default()
    }))
    .unwrap_err();
    assert_eq!(err.to_string(), "script turn 1 calls tool `delete_everything`, which was not offered (offered: get_weather)");
}

#[test]
fn a_reply_turn_answers_a_request_for_a_structured_reply_only() {
    let script = r#"[{"reply": {"meta": {}, "output": null, "calls": [{"_tool": "get_weather", "location": "Oslo"}]}},
        {"toolCalls": [{"name": "get_weather"}]}]"#;
    let model = ScriptedModel::parse("test", "s.json", script).unwrap();
    let structured = ModelRequest {
        messages: vec![msg(ChatRole::User)],
        response_format: Some(ResponseFormat {
            name: "reply".into(),
            schema: serde_json::json!({"type": "object"}),
        }),
        ..ModelRequest::default()
    };
    let answer = block_on(model.complete(&structured)).unwrap();
    let reply: serde_json::Value = serde_json::from_str(answer.text.as_deref().unwrap()).unwrap();
    assert_eq!(reply["calls"][0]["_tool"], "get_weather");
    assert!(answer.tool_calls.is_empty());
    // Without a structured request, the reply turn is refused, and so are calls with one.
    let plain = ModelRequest {
        messages: vec![msg(ChatRole::User)],
        tools: vec![tool("get_weather")],
        ..ModelRequest::default()
    };
    let err = block_on(model.complete(&plain)).unwrap_err();
    assert!(err.to_string().contains("asks for none"), "{err}");
    let mut second = structured.clone();
    second.messages.push(msg(ChatRole::Assistant));
    let err = block_on(model.complete(&second)).unwrap_err();
    assert!(
        err.to_string().contains("give the turn as `reply`"),
        "{err}"
    );
    // A reply is the whole turn.
    let err = ScriptedModel::parse("t", "s.json", r#"[{"reply": {}, "text": "x"}]"#).unwrap_err();
    assert!(err.to_string().contains("the whole turn"), "{err}");
}

#[test]
fn bad_scripts_are_reported_with_the_line_or_turn() {
    let err =
        ScriptedModel::parse("t", "s.jsonl", "{\"text\": \"ok\"}\n{\"txt\": 1}\n").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("script s.jsonl: line 2: unknown field `txt`"),
        "{err}"
    );
    let err = ScriptedModel::parse("t", "s.json", "[{}]").unwrap_err();
    assert_eq!(
        err.to_string(),
        "script s.json: turn 1 has neither text, tool calls nor a reply"
    );
    let err = ScriptedModel::parse("t", "s.json", "[]").unwrap_err();
    assert!(err.to_string().contains("no turns"));
}

#[test]
fn a_scripted_integer_past_64_bits_is_refused_not_rounded() {
    let script = "{\"text\": \"ok\"}\n{\"toolCalls\": [{\"name\": \"pay\", \"arguments\": {\"amount\": 123456789012345678901234567890}}]}\n";
    let err = ScriptedModel::parse("t", "s.jsonl", script).unwrap_err();
    assert!(
        err.to_string().starts_with(
            "script s.jsonl: line 2: at /toolCalls/0/arguments/amount: the integer 123456789012345678901234567890 does not fit in 64 bits"
        ),
        "{err}"
    );
}
