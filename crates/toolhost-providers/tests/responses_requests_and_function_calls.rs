//! OpenAI Responses API: which definitions speak it, the request it is sent (instructions,
//! input items, flat function declarations, `store: false` with encrypted reasoning asked
//! for), and the reply read from a whole answer and from a stream cut at any size alike,
//! incomplete answers reported as such.

mod common;

use common::*;
use serde_json::{json, Value};
use toolhost_providers::{
    ApiKind, ChatRole, FinishReason, HttpModel, ImageAttachment, ModelApi, ModelConfig,
    ModelRequest, ModelResponse, ToolChoice, Usage,
};

fn ask() -> ModelRequest {
    ModelRequest {
        messages: vec![
            msg(ChatRole::System, "Answer briefly."),
            msg(ChatRole::User, "Weather in Oslo and Lima?"),
        ],
        tools: vec![weather()],
        ..ModelRequest::default()
    }
}

#[test]
fn openai_speaks_responses_unless_a_definition_asks_for_chat() {
    let api = |provider: &str, api: Option<&str>| {
        let mut c = ModelConfig::new(provider, "m");
        c.api = api.map(str::to_owned);
        c.wire_api()
    };
    assert_eq!(api("openai", None), Ok(ModelApi::OpenAiResponses));
    assert_eq!(
        api("openai", Some("responses")),
        Ok(ModelApi::OpenAiResponses)
    );
    assert_eq!(api("openai", Some("chat")), Ok(ModelApi::OpenAiChat));
    assert_eq!(api("openai-compatible", None), Ok(ModelApi::OpenAiChat));
    assert_eq!(
        api("openai-compatible", Some("responses")),
        Ok(ModelApi::OpenAiResponses)
    );
    assert_eq!(api("anthropic", None), Ok(ModelApi::AnthropicMessages));
    let unknown = api("openai", Some("completions")).unwrap_err().to_string();
    assert_eq!(
        unknown,
        "model openai:m: setting api: unknown API \"completions\"; expected \"responses\" or \"chat\""
    );
    let misplaced = api("gemini", Some("chat")).unwrap_err().to_string();
    assert!(misplaced.contains("setting api"), "{misplaced}");
    // A definition written before the field existed still reads, and means Responses.
    let old: ModelConfig =
        serde_json::from_value(json!({"provider": "openai", "model": "gpt-4.1-mini"}))
            .expect("old definition");
    assert_eq!(old.api, None);
    assert_eq!(old.wire_api(), Ok(ModelApi::OpenAiResponses));
}

#[tokio::test]
async fn the_request_carries_instructions_input_items_and_flat_tools() {
    let server = ReplayServer::start(vec![Reply::json(200, &fixture("responses/text.json"))]).await;
    let mut c = config("responses", &server);
    c.settings = serde_json::from_value(json!({
        "max_tokens": 512, "reasoning": {"effort": "low", "summary": "auto"}
    }))
    .expect("settings");
    let model = HttpModel::new(&c, env).expect("model");
    assert_eq!(model.api(), ApiKind::OpenAi);
    let mut request = ask();
    request.tool_choice = Some(ToolChoice::Tool("get_weather".into()));
    request.parallel_tool_calls = Some(false);
    request.messages[1].images = vec![ImageAttachment {
        name: "map.png".into(),
        mime_type: "image/png".into(),
        data_base64: "iVBORw0K".into(),
    }];
    let answer = toolhost_providers::Model::complete(&model, &request)
        .await
        .expect("answer");
    assert_eq!(answer.text.as_deref(), Some("Oslo 12 C, Lima 19 C."));
    assert_eq!(answer.finish, FinishReason::Stop);
    assert_eq!(answer.usage, Usage::default());
    let seen = &server.seen()[0];
    assert_eq!(seen.path, "/responses");
    assert_eq!(
        seen.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let body = &seen.body;
    assert_eq!(body["instructions"], "Answer briefly.");
    assert_eq!(
        body["input"],
        json!([{"role": "user", "content": [
            {"type": "input_text", "text": "Weather in Oslo and Lima?"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0K"}
        ]}])
    );
    let tool = &body["tools"][0];
    assert_eq!(tool["type"], "function");
    assert_eq!(tool["name"], "get_weather");
    assert_eq!(tool["strict"], false);
    assert_eq!(tool["parameters"]["required"], json!(["location"]));
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "name": "get_weather"})
    );
    assert_eq!(body["parallel_tool_calls"], false);
    assert_eq!(body["max_output_tokens"], 512);
    assert_eq!(
        body["reasoning"],
        json!({"effort": "low", "summary": "auto"})
    );
    assert_eq!(body["store"], false);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert!(body.get("stream").is_none());
    assert!(body.get("previous_response_id").is_none());
}

#[tokio::test]
async fn strict_mode_is_declared_as_chat_completions_declares_it() {
    let server = ReplayServer::start(vec![Reply::json(200, &fixture("responses/text.json"))]).await;
    let mut c = config("responses", &server);
    c.strict = true;
    let model = HttpModel::new(&c, env).expect("model");
    toolhost_providers::Model::complete(&model, &ask())
        .await
        .expect("answer");
    let tool = &server.seen()[0].body["tools"][0];
    assert_eq!(tool["strict"], true);
    // Strict mode makes every property required, the optional one nullable.
    assert_eq!(tool["parameters"]["required"], json!(["location", "units"]));
    assert_eq!(tool["parameters"]["additionalProperties"], false);
}

fn check_calls(answer: &ModelResponse) {
    assert_eq!(answer.finish, FinishReason::ToolCalls);
    let calls: Vec<(&str, &str, &str)> = answer
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].1, "get_weather");
    let location =
        |i: usize| serde_json::from_str::<Value>(calls[i].2).expect("json")["location"].clone();
    assert_eq!((location(0), location(1)), (json!("Oslo"), json!("Lima")));
}

#[tokio::test]
async fn a_whole_answer_gives_calls_reasoning_usage_and_its_output_kept() {
    let server = ReplayServer::start(vec![Reply::json(
        200,
        &fixture("responses/reasoning_function_calls.json"),
    )])
    .await;
    let answer = dyn_model("responses", &server)
        .complete(&ask())
        .await
        .expect("answer");
    check_calls(&answer);
    assert_eq!(answer.tool_calls[0].id, "call_Xq3Rk9Wm2Lp8Tz4Vb7Nc1Yd0");
    assert_eq!(answer.tool_calls[1].id, "call_Pm5Hs8Jk1Qw4Er7Ty2Ui9Op3");
    assert_eq!(answer.text, None);
    assert_eq!(
        answer.reasoning.as_deref(),
        Some("Two cities: look up Oslo first.")
    );
    assert_eq!(
        answer.usage,
        Usage {
            input_tokens: Some(81),
            output_tokens: Some(140)
        }
    );
    let whole: Value =
        serde_json::from_str(&fixture("responses/reasoning_function_calls.json")).expect("json");
    let output = &whole["output"];
    assert_eq!(
        answer.continuity,
        Some(json!({"responses": {
            "responseId": "resp_68a1c0e2f4b88190a1b2c3d4e5f60718",
            "output": [
                output[0],
                {"type": "function_call", "call": 0,
                 "call_id": "call_Xq3Rk9Wm2Lp8Tz4Vb7Nc1Yd0", "id": output[1]["id"]},
                output[2],
                {"type": "function_call", "call": 1,
                 "call_id": "call_Pm5Hs8Jk1Qw4Er7Ty2Ui9Op3", "id": output[3]["id"]}
            ]
        }}))
    );
}

#[tokio::test]
async fn a_stream_cut_at_any_size_gives_the_same_reply_and_deltas() {
    for piece in [1, 7, 64, 100_000] {
        let server = ReplayServer::start(vec![Reply::sse(
            &fixture("responses/stream_function_calls.sse"),
            piece,
        )])
        .await;
        let model = dyn_model("responses", &server);
        let (answer, deltas) = streamed(model.as_ref(), &ask()).await;
        check_calls(&answer);
        assert_eq!(
            answer.text.as_deref(),
            Some("Checking two cities."),
            "piece {piece}"
        );
        assert_eq!(
            answer.reasoning.as_deref(),
            Some("Two cities, so two lookups.")
        );
        assert_eq!(
            answer.usage,
            Usage {
                input_tokens: Some(81),
                output_tokens: Some(44)
            }
        );
        let output = &answer.continuity.as_ref().expect("continuity")["responses"]["output"];
        assert_eq!(output[0]["type"], "reasoning");
        assert_eq!(
            output[0]["encrypted_content"],
            "gAAAAABoocExU3RyZWFtZWQtcmVhc29uaW5n"
        );
        assert_eq!(output[1], json!({"type": "message"}));
        assert_eq!(output[2]["call"], 0);
        assert_eq!(output[3]["call_id"], "call_Mn34Op56Qr78St90Uv12Wx34");
        let seen = &server.seen()[0].body;
        assert_eq!(seen["stream"], true);
        let text: String = deltas
            .iter()
            .filter_map(|d| match d {
                toolhost_providers::StreamDelta::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "Checking two cities.");
        let fragments: String = deltas
            .iter()
            .filter_map(|d| match d {
                toolhost_providers::StreamDelta::ToolCallArguments {
                    index: 1, fragment, ..
                } => Some(fragment.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(fragments, "{\"location\":\"Lima\"}");
        let started = deltas
            .iter()
            .filter(|d| matches!(d, toolhost_providers::StreamDelta::ToolCallStarted { .. }))
            .count();
        assert_eq!(started, 2);
    }
}

#[tokio::test]
async fn an_incomplete_answer_is_reported_as_incomplete_whole_or_streamed() {
    let server = ReplayServer::start(vec![
        Reply::json(200, &fixture("responses/incomplete.json")),
        Reply::sse(&fixture("responses/stream_incomplete.sse"), 13),
    ])
    .await;
    let model = dyn_model("responses", &server);
    let whole = model.complete(&ask()).await.expect("answer");
    assert_eq!(whole.finish, FinishReason::Length);
    assert_eq!(whole.text.as_deref(), Some("The weather in Oslo is"));
    let (streamed, _) = streamed(model.as_ref(), &ask()).await;
    // Stopped by the content filter: not a finished answer, and not a length stop either.
    assert_eq!(streamed.finish, FinishReason::Other);
    assert_eq!(streamed.text.as_deref(), Some("Here is how to"));
}
