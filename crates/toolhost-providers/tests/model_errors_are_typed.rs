//! Vendor-shaped error answers become typed errors: the API, the HTTP status, the kind and the
//! wait the server asked for, read from the status, the headers and each vendor's error body;
//! the key never shows, even when a body echoes it.

mod common;

use common::*;
use std::time::Duration;
use toolhost_providers::{
    ChatRole, HttpModel, Model, ModelApi, ModelError, ModelErrorKind, ModelRequest, ScriptedModel,
    StreamDelta,
};

fn request() -> ModelRequest {
    ModelRequest {
        messages: vec![msg(ChatRole::User, "hi")],
        ..ModelRequest::default()
    }
}

/// The error `provider` gives for `reply`, asked once (no retries), streamed or not.
async fn error_for(provider: &str, reply: Reply, stream: bool) -> ModelError {
    let server = ReplayServer::start(vec![reply]).await;
    let mut config = config(provider, &server);
    config.retry.max_attempts = 1;
    let model = HttpModel::new(&config, env).expect("model");
    let sink = |_: StreamDelta| {};
    let result = if stream {
        model.complete_streaming(&request(), &sink).await
    } else {
        model.complete(&request()).await
    };
    let error = result.expect_err("an error");
    assert_eq!(server.seen().len(), 1, "{error:?}");
    error
}

/// One replayed answer and what it must become.
struct Case {
    provider: &'static str,
    reply: Reply,
    stream: bool,
    api: ModelApi,
    status: Option<u16>,
    kind: ModelErrorKind,
    retry_after: Option<Duration>,
}

fn case(provider: &'static str, reply: Reply, expect: (ModelApi, ModelErrorKind)) -> Case {
    let status = Some(reply.status);
    Case {
        provider,
        reply,
        stream: false,
        api: expect.0,
        status,
        kind: expect.1,
        retry_after: None,
    }
}

impl Case {
    fn waits(mut self, wait: Duration) -> Self {
        self.retry_after = Some(wait);
        self
    }

    /// Sent as a streamed request; the error arrives inside a 200 stream, so it has no status.
    fn streamed(mut self) -> Self {
        self.stream = true;
        self.status = None;
        self
    }
}

async fn check(cases: Vec<Case>) {
    for (i, c) in cases.into_iter().enumerate() {
        let label = format!("{} case {i} (HTTP {})", c.provider, c.reply.status);
        let error = error_for(c.provider, c.reply, c.stream).await;
        assert_eq!(
            (
                error.api(),
                error.status(),
                error.kind(),
                error.retry_after()
            ),
            (c.api, c.status, c.kind, c.retry_after),
            "{label}: {error:?}"
        );
        let shown = error.to_string();
        assert!(shown.starts_with(c.api.label()), "{shown}");
        if let Some(status) = c.status {
            assert!(shown.contains(&format!("HTTP {status}: ")), "{shown}");
        }
        assert!(!shown.contains('\n'), "{shown}");
        assert!(!shown.contains(KEY), "{shown}");
        assert!(!format!("{error:?}").contains(KEY), "{error:?}");
    }
}

fn sse(events: &[&str]) -> Reply {
    let text: String = events.iter().map(|e| format!("{e}\n\n")).collect();
    Reply::sse(&text, 40)
}

#[tokio::test]
async fn openai_chat_errors() {
    use ModelApi::OpenAiChat as Api;
    check(vec![
        case(
            "openai",
            Reply::json(401, &fixture("openai/error_invalid_key.json")),
            (Api, ModelErrorKind::Authentication),
        ),
        case(
            "openai",
            Reply::json(
                400,
                r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
            ),
            (Api, ModelErrorKind::ContextLength),
        ),
        case(
            "openai",
            Reply::json(429, &fixture("openai/error_rate_limit.json"))
                .with_header("retry-after-ms", "1500"),
            (Api, ModelErrorKind::RateLimit),
        )
        .waits(Duration::from_millis(1500)),
        case(
            "openai",
            Reply::json(
                429,
                r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#,
            ),
            (Api, ModelErrorKind::QuotaExceeded),
        ),
        case(
            "openai",
            Reply::json(
                422,
                r#"{"error":{"message":"Invalid schema for function 'f'.","type":"invalid_request_error","param":"tools[0]","code":"invalid_function_parameters"}}"#,
            ),
            (Api, ModelErrorKind::BadRequest),
        ),
        case(
            "openai-compatible",
            Reply::json(503, r#"{"error":{"message":"upstream unavailable"}}"#)
                .with_header("retry-after", "4"),
            (Api, ModelErrorKind::Transient),
        )
        .waits(Duration::from_secs(4)),
        case(
            "openai",
            sse(&[
                r#"data: {"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}"#,
                r#"data: {"error":{"message":"The server had an error while processing your request.","type":"server_error","code":null}}"#,
            ]),
            (Api, ModelErrorKind::Transient),
        )
        .streamed(),
    ])
    .await;
}

#[tokio::test]
async fn anthropic_messages_errors() {
    use ModelApi::AnthropicMessages as Api;
    check(vec![
        case(
            "anthropic",
            Reply::json(
                401,
                &format!(
                    r#"{{"type":"error","error":{{"type":"authentication_error","message":"invalid x-api-key {KEY}"}}}}"#
                ),
            ),
            (Api, ModelErrorKind::Authentication),
        ),
        case(
            "anthropic",
            Reply::json(
                403,
                r#"{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}"#,
            ),
            (Api, ModelErrorKind::Authentication),
        ),
        case(
            "anthropic",
            Reply::json(
                429,
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 50 input tokens per minute."}}"#,
            )
            .with_header("retry-after", "30"),
            (Api, ModelErrorKind::RateLimit),
        )
        .waits(Duration::from_secs(30)),
        case(
            "anthropic",
            Reply::json(
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 212345 tokens > 200000 maximum"}}"#,
            ),
            (Api, ModelErrorKind::ContextLength),
        ),
        case(
            "anthropic",
            Reply::json(400, &fixture("anthropic/error_invalid_request.json")),
            (Api, ModelErrorKind::BadRequest),
        ),
        case(
            "anthropic",
            Reply::json(
                413,
                r#"{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}"#,
            ),
            (Api, ModelErrorKind::BadRequest),
        ),
        case(
            "anthropic",
            Reply::json(529, &fixture("anthropic/error_overloaded.json")),
            (Api, ModelErrorKind::Overloaded),
        ),
        case(
            "anthropic",
            Reply::json(503, "<html>Service Unavailable</html>"),
            (Api, ModelErrorKind::Overloaded),
        ),
        case(
            "anthropic",
            Reply::json(
                500,
                r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#,
            ),
            (Api, ModelErrorKind::Transient),
        ),
        case(
            "anthropic",
            sse(&[
                "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}",
                "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
            ]),
            (Api, ModelErrorKind::Overloaded),
        )
        .streamed(),
    ])
    .await;
}

#[tokio::test]
async fn gemini_errors() {
    use ModelApi::Gemini as Api;
    check(vec![
        case(
            "gemini",
            Reply::json(
                429,
                r#"{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"12s"}]}}"#,
            ),
            (Api, ModelErrorKind::RateLimit),
        )
        .waits(Duration::from_secs(12)),
        case(
            "gemini",
            Reply::json(429, &fixture("gemini/error_resource_exhausted.json")),
            (Api, ModelErrorKind::RateLimit),
        ),
        case(
            "gemini",
            Reply::json(
                400,
                r#"{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#,
            ),
            (Api, ModelErrorKind::ContextLength),
        ),
        case(
            "gemini",
            Reply::json(400, &fixture("gemini/error_invalid_argument.json")),
            (Api, ModelErrorKind::BadRequest),
        ),
        case(
            "gemini",
            Reply::json(
                400,
                &format!(
                    r#"[{{"error":{{"code":400,"message":"API key not valid: {KEY}. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}}]}}}}]"#
                ),
            ),
            (Api, ModelErrorKind::Authentication),
        ),
        case(
            "gemini",
            Reply::json(
                403,
                r#"{"error":{"code":403,"message":"Method doesn't allow unregistered callers.","status":"PERMISSION_DENIED"}}"#,
            ),
            (Api, ModelErrorKind::Authentication),
        ),
        case(
            "gemini",
            Reply::json(
                503,
                r#"{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}"#,
            ),
            (Api, ModelErrorKind::Overloaded),
        ),
        case(
            "gemini",
            Reply::json(
                500,
                r#"{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}"#,
            ),
            (Api, ModelErrorKind::Transient),
        ),
        case(
            "gemini",
            sse(&[
                r#"data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]}}]}"#,
                r#"data: {"error":{"code":429,"message":"Quota exceeded.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"0.5s"}]}}"#,
            ]),
            (Api, ModelErrorKind::RateLimit),
        )
        .streamed()
        .waits(Duration::from_millis(500)),
    ])
    .await;
}

#[tokio::test]
async fn a_cut_or_unreadable_answer_is_typed_too() {
    let error = error_for("anthropic", Reply::json(200, "{\"content\": [tru"), false).await;
    assert_eq!(
        (error.api(), error.status(), error.kind()),
        (ModelApi::AnthropicMessages, None, ModelErrorKind::Transient),
        "a body that ends early was cut: {error:?}"
    );
    let error = error_for("openai", Reply::json(200, "<html>login</html>"), false).await;
    assert_eq!(
        (error.api(), error.status(), error.kind()),
        (ModelApi::OpenAiChat, None, ModelErrorKind::MalformedAnswer),
        "{error:?}"
    );
    assert!(!error.is_retryable());
}

#[tokio::test]
async fn a_script_that_runs_out_is_a_script_error() {
    let model = ScriptedModel::parse("test:x", "s.json", r#"[{"text": "one"}]"#).expect("script");
    let mut req = request();
    req.messages.push(msg(ChatRole::Assistant, "one"));
    let error = model.complete(&req).await.expect_err("an error");
    assert_eq!(
        (
            error.api(),
            error.status(),
            error.kind(),
            error.retry_after()
        ),
        (ModelApi::Scripted, None, ModelErrorKind::Script, None)
    );
    assert_eq!(
        error.to_string(),
        "the script of test:x has 1 turns and turn 2 was asked for"
    );
}
