//! OpenAI chat completions (`POST {base}/chat/completions`), also spoken by vLLM, llama.cpp's
//! server, Ollama, OpenRouter and other compatible servers.
//!
//! - Key: `Authorization: Bearer KEY`.
//! - `toolChoice` → `tool_choice` (`auto`, `none`, `required`, or
//!   `{"type":"function","function":{"name"}}`); `parallelToolCalls` → `parallel_tool_calls`
//!   (sent only with tools).
//! - A structured reply (`ModelRequest::response_format`) → `response_format`
//!   `{"type":"json_schema","json_schema":{"name","schema","strict":false}}`.
//! - Tool messages take no images here: each image becomes a placeholder line in the text.
//!   Images on user messages are sent as `image_url` data URLs.
//! - Reasoning is read from `reasoning_content` or `reasoning` (servers that expose it).
//! - Streaming asks for `stream_options.include_usage` so the last chunk carries usage.

mod read;
mod stream;

use crate::api::{image_placeholder, Settings, StreamReader, WireApi, WireTools};
use crate::assemble::Assembly;
use crate::hosted;
use crate::secret::ApiKey;
use crate::{ChatMessage, ChatRole, ModelApi, ModelRequest, ToolChoice};
use hyper::header::{HeaderValue, AUTHORIZATION};
use serde_json::{json, Map, Value};
use toolhost_core::schema::lower::Provider;

/// The chat-completions API.
pub(crate) struct OpenAiChat;

impl WireApi for OpenAiChat {
    fn api(&self) -> ModelApi {
        ModelApi::OpenAiChat
    }

    fn lowering(&self) -> Provider {
        Provider::OpenAi
    }

    fn hosts(&self) -> &'static [&'static str] {
        &["openai", "openai-compatible"]
    }

    fn path(&self, _model: &str, _stream: bool) -> String {
        "/chat/completions".to_owned()
    }

    fn auth(&self, key: &ApiKey) -> Option<(hyper::header::HeaderName, HeaderValue)> {
        let value = HeaderValue::from_str(&format!("Bearer {}", key.expose())).ok()?;
        Some((AUTHORIZATION, value))
    }

    fn body(
        &self,
        request: &ModelRequest,
        wire: &WireTools,
        settings: &Settings,
        stream: bool,
    ) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), settings.model.clone().into());
        let messages: Vec<Value> = request.messages.iter().map(|m| message(m, wire)).collect();
        body.insert("messages".into(), Value::Array(messages));
        let mut tools: Vec<Value> = wire
            .functions
            .iter()
            .map(|t| t.declaration.clone())
            .collect();
        for tool in &wire.hosted {
            if hosted::is_openai_web_search(&tool.name) {
                body.insert("web_search_options".into(), json!({}));
            } else {
                tools.push(hosted::openai_entry(&tool.name));
            }
        }
        if !tools.is_empty() {
            body.insert("tools".into(), Value::Array(tools));
            if let Some(choice) = &request.tool_choice {
                let choice = match choice {
                    ToolChoice::Auto => json!("auto"),
                    ToolChoice::None => json!("none"),
                    ToolChoice::Required => json!("required"),
                    ToolChoice::Tool(name) => json!({
                        "type": "function",
                        "function": {"name": wire.context.wire_name(name)}
                    }),
                };
                body.insert("tool_choice".into(), choice);
            }
            if let (Some(parallel), false) =
                (request.parallel_tool_calls, wire.functions.is_empty())
            {
                body.insert("parallel_tool_calls".into(), parallel.into());
            }
        }
        if let Some(format) = &wire.format {
            body.insert(
                "response_format".into(),
                json!({"type": "json_schema", "json_schema": {
                    "name": format.name, "schema": format.schema, "strict": format.strict
                }}),
            );
        }
        if let Some(t) = settings.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if let Some(n) = settings.max_tokens {
            body.insert("max_tokens".into(), json!(n));
        }
        if stream {
            body.insert("stream".into(), true.into());
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        settings.merge_into(&mut body);
        Value::Object(body)
    }

    fn read(&self, answer: &Value, out: &mut Assembly) -> Result<(), String> {
        read::read(answer, out)
    }

    fn stream_reader(&self) -> Box<dyn StreamReader> {
        Box::new(stream::ChunkReader::default())
    }
}

fn message(m: &ChatMessage, wire: &WireTools) -> Value {
    let text = m.content.clone().unwrap_or_default();
    match m.role {
        ChatRole::System => json!({"role": "system", "content": text}),
        ChatRole::User if m.images.is_empty() => json!({"role": "user", "content": text}),
        ChatRole::User => {
            let mut parts = vec![json!({"type": "text", "text": text})];
            parts.extend(m.images.iter().map(|i| {
                json!({"type": "image_url", "image_url": {
                    "url": format!("data:{};base64,{}", i.mime_type, i.data_base64)
                }})
            }));
            json!({"role": "user", "content": parts})
        }
        ChatRole::Assistant => {
            let mut out = json!({"role": "assistant", "content": m.content});
            if !m.tool_calls.is_empty() {
                let calls: Vec<Value> = m
                    .tool_calls
                    .iter()
                    .map(|c| {
                        let arguments = if c.arguments.trim().is_empty() {
                            "{}"
                        } else {
                            &c.arguments
                        };
                        json!({"id": c.id, "type": "function", "function": {
                            "name": wire.context.wire_name(&c.name),
                            "arguments": arguments,
                        }})
                    })
                    .collect();
                out["tool_calls"] = Value::Array(calls);
            }
            out
        }
        ChatRole::Tool => {
            let mut lines = vec![text];
            lines.extend(m.images.iter().map(image_placeholder));
            let content = lines
                .into_iter()
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join("\n");
            json!({"role": "tool", "tool_call_id": m.tool_call_id, "content": content})
        }
    }
}
