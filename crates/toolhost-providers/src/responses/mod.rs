//! The OpenAI Responses API (`POST {base}/responses`), OpenAI's recommended interface, also
//! spoken by some compatible servers.
//!
//! - Key: `Authorization: Bearer KEY`.
//! - System messages become `instructions`; the rest of the thread becomes `input` items: user
//!   and assistant messages, `function_call` and `function_call_output` items. Images go as
//!   `input_image` data URLs, on user messages and in tool results.
//! - A structured reply (`ModelRequest::response_format`) → `text.format`
//!   `{"type":"json_schema","name","schema","strict":false}`.
//! - Functions are declared flat (`{"type":"function","name",...}`) with the same lowering as
//!   chat completions; `strict` is always sent, since this API assumes `true` when it is absent.
//! - `toolChoice` → `tool_choice`, `parallelToolCalls` → `parallel_tool_calls` (with
//!   functions only), `max_tokens` → `max_output_tokens`; `reasoning` and the rest of the
//!   settings are copied as they are.
//! - Stateless by default: `store: false` and `include: ["reasoning.encrypted_content"]`, so
//!   reasoning items come back whole. They are kept in the reply's continuity (see
//!   [`continuity`]) with the order of the reply's output, and sent back in that order with
//!   their function calls. The setting `previous_response_id: true` opts into OpenAI keeping
//!   state instead: `store: true`, and each request names the last reply's response and sends
//!   only what came after it.
//! - Calls: a call keeps the wire's `call_id`; the runtime's ids are mapped back to it on the
//!   call and on its output.
//! - Hosted tools (`web_search`, `file_search`, `code_interpreter`, `mcp`): `{"type": NAME}`
//!   merged with the entry of the setting `hosted_tools` of that name (a `file_search` needs its
//!   `vector_store_ids`, an `mcp` server its `server_label` and `server_url`; an array gives
//!   several entries); `code_interpreter` gets an automatic container unless set.

pub(crate) mod continuity;
mod read;
mod stream;

use crate::api::{Settings, StreamReader, WireApi, WireTools};
use crate::assemble::Assembly;
use crate::secret::ApiKey;
use crate::{ChatMessage, ChatRole, ImageAttachment, ModelApi, ModelRequest, ToolChoice};
use hyper::header::{HeaderName, HeaderValue, AUTHORIZATION};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use toolhost_core::schema::lower::Provider;

/// The Responses API, with the options its definition's settings gave.
pub(crate) struct OpenAiResponses {
    /// Let OpenAI keep the state (`previous_response_id`), an opt-in.
    chain: bool,
    /// Extra fields of hosted tools' entries, by tool name.
    hosted: Map<String, Value>,
}

impl OpenAiResponses {
    /// Takes this API's own entries out of the settings (the rest is copied into the body).
    pub(crate) fn new(settings: &mut Settings) -> Result<Self, (&'static str, &'static str)> {
        let chain = match settings.extra.remove("previous_response_id") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => b,
            Some(_) => return Err(("previous_response_id", "expected true or false")),
        };
        let hosted = match settings.extra.remove("hosted_tools") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(map)) => map,
            Some(_) => return Err(("hosted_tools", "expected an object keyed by tool name")),
        };
        Ok(OpenAiResponses { chain, hosted })
    }

    fn hosted_entries(&self, tool: &str) -> Vec<Value> {
        let base = || {
            let mut entry = json!({ "type": tool });
            if tool == "code_interpreter" {
                entry["container"] = json!({"type": "auto"});
            }
            entry
        };
        let merge = |extra: &Value| {
            let mut entry = base();
            if let (Some(entry), Some(extra)) = (entry.as_object_mut(), extra.as_object()) {
                entry.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            entry
        };
        match self.hosted.get(tool) {
            Some(Value::Array(list)) => list.iter().map(merge).collect(),
            Some(extra) => vec![merge(extra)],
            None => vec![base()],
        }
    }
}

impl WireApi for OpenAiResponses {
    fn api(&self) -> ModelApi {
        ModelApi::OpenAiResponses
    }

    fn lowering(&self) -> Provider {
        Provider::OpenAi
    }

    fn hosts(&self) -> &'static [&'static str] {
        &["openai", "openai-compatible"]
    }

    fn path(&self, _model: &str, _stream: bool) -> String {
        "/responses".to_owned()
    }

    fn auth(&self, key: &ApiKey) -> Option<(HeaderName, HeaderValue)> {
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
        let system: Vec<&str> = request
            .messages
            .iter()
            .filter(|m| m.role == ChatRole::System)
            .filter_map(|m| m.content.as_deref())
            .collect();
        if !system.is_empty() {
            body.insert("instructions".into(), system.join("\n\n").into());
        }
        // With state kept by OpenAI, only what came after its last reply is sent.
        let (previous, messages) = match self.chain {
            true => continuity::after_last_response(&request.messages),
            false => (None, &request.messages[..]),
        };
        if let Some(id) = previous {
            body.insert("previous_response_id".into(), id.into());
        }
        body.insert(
            "input".into(),
            Value::Array(input(messages, &request.messages, wire)),
        );
        let mut tools: Vec<Value> = wire
            .functions
            .iter()
            .map(|t| flat(&t.declaration))
            .collect();
        for tool in &wire.hosted {
            tools.extend(self.hosted_entries(&tool.name));
        }
        if !tools.is_empty() {
            body.insert("tools".into(), Value::Array(tools));
            if let Some(choice) = &request.tool_choice {
                let choice = match choice {
                    ToolChoice::Auto => json!("auto"),
                    ToolChoice::None => json!("none"),
                    ToolChoice::Required => json!("required"),
                    ToolChoice::Tool(name) => {
                        json!({"type": "function", "name": wire.context.wire_name(name)})
                    }
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
                "text".into(),
                json!({"format": {
                    "type": "json_schema", "name": format.name, "schema": format.schema,
                    "strict": format.strict
                }}),
            );
        }
        if let Some(t) = settings.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if let Some(n) = settings.max_tokens {
            body.insert("max_output_tokens".into(), json!(n));
        }
        body.insert("store".into(), self.chain.into());
        let mut include = vec![Value::from("reasoning.encrypted_content")];
        if let Some(Value::Array(more)) = settings.extra.get("include") {
            include.extend(
                more.iter()
                    .filter(|v| !include.contains(v))
                    .cloned()
                    .collect::<Vec<_>>(),
            );
        }
        body.insert("include".into(), Value::Array(include));
        if stream {
            body.insert("stream".into(), true.into());
        }
        settings.merge_into(&mut body);
        Value::Object(body)
    }

    fn reported_failure(&self, answer: &Value) -> Option<crate::ModelError> {
        // Typed like a `response.failed` event of a stream: by the response's `error`.
        (answer.get("status").and_then(Value::as_str) == Some("failed")).then(|| {
            crate::failure::reported_error(ModelApi::OpenAiResponses, answer.to_string().as_bytes())
        })
    }

    fn read(&self, answer: &Value, out: &mut Assembly) -> Result<(), String> {
        read::read(answer, out)
    }

    fn stream_reader(&self) -> Box<dyn StreamReader> {
        Box::new(stream::EventReader::default())
    }
}

/// A chat-completions function declaration in this API's flat shape, `strict` always said.
fn flat(declaration: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), "function".into());
    if let Some(function) = declaration.get("function").and_then(Value::as_object) {
        out.extend(function.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    out.entry("strict").or_insert(false.into());
    Value::Object(out)
}

fn image(image: &ImageAttachment) -> Value {
    json!({"type": "input_image",
           "image_url": format!("data:{};base64,{}", image.mime_type, image.data_base64)})
}

/// The `input` items of `messages` (system messages went to `instructions`), a part of the
/// conversation `all` or the whole of it.
fn input(messages: &[ChatMessage], all: &[ChatMessage], wire: &WireTools) -> Vec<Value> {
    // The runtime's call ids → the wire's `call_id`s, from the replies' continuity; from the
    // whole conversation, since a result may be sent without the reply that made its call.
    let mut call_ids: HashMap<String, String> = HashMap::new();
    for m in all.iter().filter(|m| m.role == ChatRole::Assistant) {
        for (call, wire_id) in m.tool_calls.iter().zip(continuity::wire_call_ids(m)) {
            if let Some(wire_id) = wire_id {
                call_ids.insert(call.id.clone(), wire_id);
            }
        }
    }
    let wire_id = |id: &str| call_ids.get(id).cloned().unwrap_or_else(|| id.to_owned());
    let mut out = Vec::new();
    for m in messages {
        let text = m.content.clone().unwrap_or_default();
        match m.role {
            ChatRole::System => {}
            ChatRole::User => {
                let mut parts = vec![json!({"type": "input_text", "text": text})];
                parts.extend(m.images.iter().map(image));
                out.push(json!({"role": "user", "content": parts}));
            }
            ChatRole::Assistant => continuity::assistant_items(m, wire, &wire_id, &mut out),
            ChatRole::Tool => {
                let call_id = wire_id(m.tool_call_id.as_deref().unwrap_or_default());
                let output = if m.images.is_empty() {
                    Value::from(text)
                } else {
                    let mut parts = vec![json!({"type": "input_text", "text": text})];
                    parts.extend(m.images.iter().map(image));
                    Value::Array(parts)
                };
                out.push(json!({"type": "function_call_output", "call_id": call_id,
                                "output": output}));
            }
        }
    }
    out
}
