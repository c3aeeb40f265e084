//! Anthropic Messages (`POST {base}/v1/messages`).
//!
//! - Key: `x-api-key`, with `anthropic-version: 2023-06-01`.
//! - System messages go to `system`; consecutive messages of one role are merged, so the
//!   results of parallel calls travel in one user turn, as the API requires.
//! - A structured reply (`ModelRequest::response_format`) is asked for as a tool of the
//!   format's name whose call is forced (`tool_choice` `{"type":"tool","name"}`); the call's
//!   input is the reply (`ModelResponse::structured`).
//! - `toolChoice` → `tool_choice` (`auto`, `none`, `any`, `{"type":"tool","name"}`);
//!   `parallelToolCalls: false` → `disable_parallel_tool_use: true`.
//! - Tool results with images are sent as `tool_result` content blocks with `image` blocks.
//! - Property keys of a tool's input schema that the API refuses (outside
//!   `^[a-zA-Z0-9_.-]{1,64}$`) are renamed in the declaration and in earlier calls' `input`,
//!   and mapped back in the calls of the answer (see [`crate::keys`]). Argument fragments
//!   published while a call streams in carry the keys as the API sent them.
//! - `max_tokens` is required by the API: 4096 unless the settings say otherwise.
//! - A tool message marked as an error is sent with `"is_error": true` (the key is left out
//!   otherwise).
//! - Reasoning is read from `thinking` blocks. The reply's `thinking` and `redacted_thinking`
//!   blocks are kept, signatures included, in its continuity (see the `thinking` module) and
//!   sent back first in that assistant turn, as extended thinking with tool use requires. A
//!   turn that would hold nothing but thinking is still left out.
//! - Known gap: within a turn, kept blocks go before its text and tool use, so thinking that
//!   came between two `tool_use` blocks (interleaved thinking) is sent back moved up front.

mod read;
mod stream;
mod thinking;

use crate::api::{arguments_object, Settings, StreamReader, WireApi, WireTools};
use crate::assemble::Assembly;
use crate::hosted;
use crate::secret::ApiKey;
use crate::{ChatMessage, ChatRole, ImageAttachment, ModelApi, ModelRequest, ToolChoice};
use hyper::header::{HeaderName, HeaderValue};
use serde_json::{json, Map, Value};
use toolhost_core::schema::lower::Provider;

/// The output limit sent when the settings give none.
pub(crate) const DEFAULT_MAX_TOKENS: u64 = 4096;

/// The Messages API.
pub(crate) struct AnthropicMessages;

impl WireApi for AnthropicMessages {
    fn api(&self) -> ModelApi {
        ModelApi::AnthropicMessages
    }

    fn lowering(&self) -> Provider {
        Provider::Anthropic
    }

    fn hosts(&self) -> &'static [&'static str] {
        &["anthropic"]
    }

    fn path(&self, _model: &str, _stream: bool) -> String {
        "/v1/messages".to_owned()
    }

    fn auth(&self, key: &ApiKey) -> Option<(HeaderName, HeaderValue)> {
        let value = HeaderValue::from_str(key.expose()).ok()?;
        Some((HeaderName::from_static("x-api-key"), value))
    }

    fn headers(&self) -> Vec<(HeaderName, HeaderValue)> {
        vec![(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static("2023-06-01"),
        )]
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
        body.insert(
            "max_tokens".into(),
            settings.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS).into(),
        );
        let system: Vec<&str> = request
            .messages
            .iter()
            .filter(|m| m.role == ChatRole::System)
            .filter_map(|m| m.content.as_deref())
            .collect();
        if !system.is_empty() {
            body.insert("system".into(), system.join("\n\n").into());
        }
        body.insert("messages".into(), Value::Array(messages(request, wire)));
        let mut tools: Vec<Value> = wire
            .functions
            .iter()
            .map(|t| t.declaration.clone())
            .collect();
        tools.extend(wire.hosted.iter().map(|t| hosted::anthropic_entry(&t.name)));
        // Structured output: a tool whose input is the reply, its call forced.
        if let Some(format) = &wire.format {
            tools.push(json!({
                "name": format.name,
                "description": "Give your whole reply as this tool's input.",
                "input_schema": format.schema,
            }));
            body.insert("tools".into(), Value::Array(tools));
            body.insert(
                "tool_choice".into(),
                json!({"type": "tool", "name": format.name}),
            );
        } else if !tools.is_empty() {
            body.insert("tools".into(), Value::Array(tools));
            let mut choice = match &request.tool_choice {
                None | Some(ToolChoice::Auto) => json!({"type": "auto"}),
                Some(ToolChoice::None) => json!({"type": "none"}),
                Some(ToolChoice::Required) => json!({"type": "any"}),
                Some(ToolChoice::Tool(name)) => {
                    json!({"type": "tool", "name": wire.context.wire_name(name)})
                }
            };
            let serial = request.parallel_tool_calls == Some(false);
            if serial && request.tool_choice != Some(ToolChoice::None) {
                choice["disable_parallel_tool_use"] = true.into();
            }
            if request.tool_choice.is_some() || serial {
                body.insert("tool_choice".into(), choice);
            }
        }
        if let Some(t) = settings.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if stream {
            body.insert("stream".into(), true.into());
        }
        settings.merge_into(&mut body);
        Value::Object(body)
    }

    fn read(&self, answer: &Value, out: &mut Assembly) -> Result<(), String> {
        read::read(answer, out)
    }

    fn stream_reader(&self) -> Box<dyn StreamReader> {
        Box::new(stream::EventReader::default())
    }
}

fn image_block(image: &ImageAttachment) -> Value {
    json!({"type": "image", "source": {
        "type": "base64", "media_type": image.mime_type, "data": image.data_base64
    }})
}

fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
}

/// The content blocks of one message, with the role it takes on the wire.
fn blocks(m: &ChatMessage, wire: &WireTools) -> (&'static str, Vec<Value>) {
    let text = m.content.as_deref().unwrap_or_default();
    match m.role {
        ChatRole::System => ("user", Vec::new()),
        ChatRole::User => {
            let mut out: Vec<Value> = text_block(text).into_iter().collect();
            out.extend(m.images.iter().map(image_block));
            ("user", out)
        }
        ChatRole::Assistant => {
            let mut said: Vec<Value> = text_block(text).into_iter().collect();
            said.extend(m.tool_calls.iter().map(|c| {
                json!({"type": "tool_use", "id": c.id,
                       "name": wire.context.wire_name(&c.name),
                       "input": wire.context.wire_arguments(&c.name, arguments_object(&c.arguments))})
            }));
            // Thinking leads the turn, as the API answered it; a turn of thinking alone was
            // never sent and is not now.
            let mut out = Vec::new();
            if !said.is_empty() {
                out = thinking::kept_blocks(m);
                out.extend(said);
            }
            ("assistant", out)
        }
        ChatRole::Tool => {
            let mut result = json!({"type": "tool_result", "tool_use_id": m.tool_call_id});
            if m.is_error {
                result["is_error"] = true.into();
            }
            if m.images.is_empty() {
                result["content"] = text.into();
            } else {
                let mut content: Vec<Value> = text_block(text).into_iter().collect();
                content.extend(m.images.iter().map(image_block));
                result["content"] = Value::Array(content);
            }
            ("user", vec![result])
        }
    }
}

/// The conversation without system messages, consecutive turns of one role merged.
fn messages(request: &ModelRequest, wire: &WireTools) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for m in request
        .messages
        .iter()
        .filter(|m| m.role != ChatRole::System)
    {
        let (role, content) = blocks(m, wire);
        if content.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last, blocks)) if *last == role => blocks.extend(content),
            _ => out.push((role, content)),
        }
    }
    out.into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}
