//! The key: a missing one fails at start naming its variable; it is sent only in its header
//! and never appears in a Debug output or an error, even when the server echoes it.

mod common;

use common::*;
use toolhost_providers::{
    model_from_config, ApiKey, ChatRole, ConfigError, HttpModel, ModelConfig, ModelRequest,
};

fn request() -> ModelRequest {
    ModelRequest {
        messages: vec![msg(ChatRole::User, "hi")],
        ..ModelRequest::default()
    }
}

#[test]
fn a_missing_key_names_the_variable() {
    let mut config = ModelConfig::new("anthropic", "claude-haiku-4-5");
    let error = model_from_config(&config, |_| None)
        .err()
        .expect("an error");
    assert_eq!(
        error,
        ConfigError::MissingKey {
            variable: "ANTHROPIC_API_KEY".into(),
            model: "anthropic:claude-haiku-4-5".into()
        }
    );
    assert_eq!(
        error.to_string(),
        "the API key is missing: set the environment variable ANTHROPIC_API_KEY (model anthropic:claude-haiku-4-5)"
    );
    config.api_key_env = Some("MY_CLAUDE_KEY".into());
    let blank = model_from_config(&config, |_| Some("  ".into()))
        .err()
        .expect("an error");
    assert!(blank.to_string().contains("MY_CLAUDE_KEY"), "{blank}");
    let compatible = ModelConfig::new("openai-compatible", "llama");
    let no_url = model_from_config(&compatible, |_| None)
        .err()
        .expect("an error");
    assert!(no_url.to_string().contains("needs a baseUrl"), "{no_url}");
    let unknown = model_from_config(&ModelConfig::new("openia", "x"), |_| None)
        .err()
        .expect("an error");
    assert!(
        unknown
            .to_string()
            .contains("unknown model provider \"openia\""),
        "{unknown}"
    );
}

#[test]
fn debug_output_never_holds_the_key() {
    let mut config = ModelConfig::new("openai", "gpt-4.1-mini");
    config.api_key_env = Some("K".into());
    let model = HttpModel::new(&config, |_| Some(KEY.into())).expect("model");
    let shown = format!("{model:?}");
    assert!(!shown.contains(KEY), "{shown}");
    assert!(shown.contains("[redacted]"), "{shown}");
    assert_eq!(format!("{:?}", ApiKey::new(KEY)), "[redacted]");
}

#[tokio::test]
async fn an_echoed_key_is_scrubbed_from_the_error() {
    let server = ReplayServer::start(vec![Reply::json(
        401,
        &fixture("openai/error_invalid_key.json"),
    )])
    .await;
    let error = dyn_model("openai", &server)
        .complete(&request())
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(!text.contains(KEY), "{text}");
    assert!(!format!("{error:?}").contains(KEY));
    assert_eq!(
        text,
        "OpenAI chat completions: HTTP 401: Incorrect API key provided: [redacted]. You can find your API key in your account settings. (invalid_request_error)"
    );
    // The request did carry it, in the header only.
    let seen = &server.seen()[0];
    assert_eq!(
        seen.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert!(!seen.body.to_string().contains(KEY));
}

#[tokio::test]
async fn a_masked_echo_is_scrubbed_too() {
    let masked = r#"{"error":{"message":"Incorrect API key provided: sk-tes***********fXYZ.","type":"invalid_request_error"}}"#;
    let server = ReplayServer::start(vec![Reply::json(401, masked)]).await;
    let text = dyn_model("openai", &server)
        .complete(&request())
        .await
        .unwrap_err()
        .to_string();
    assert!(!text.contains("fXYZ"), "{text}");
    assert!(text.contains("[redacted]"), "{text}");
}
