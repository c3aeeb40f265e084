//! A count the API did not report stays unknown (`None`), never zero.

mod common;

use common::*;
use toolhost_providers::{ChatRole, ModelRequest, Usage};

#[tokio::test]
async fn answers_without_usage_report_none_for_every_api() {
    for (provider, path) in [
        ("openai", "openai/text_no_usage.json"),
        ("anthropic", "anthropic/text_no_usage.json"),
        ("gemini", "gemini/text_no_usage.json"),
    ] {
        let server = ReplayServer::start(vec![Reply::json(200, &fixture(path))]).await;
        let answer = dyn_model(provider, &server)
            .complete(&ModelRequest {
                messages: vec![msg(ChatRole::User, "hi")],
                ..ModelRequest::default()
            })
            .await
            .expect("answer");
        assert_eq!(
            answer.usage,
            Usage {
                input_tokens: None,
                output_tokens: None
            },
            "{provider}"
        );
    }
}
