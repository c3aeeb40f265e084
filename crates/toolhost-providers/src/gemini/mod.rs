//! Google Gemini (`POST {base}/models/MODEL:generateContent`, streamed through
//! `:streamGenerateContent?alt=sse`).
//!
//! - Key: `x-goog-api-key` (never in the URL).
//! - System messages go to `systemInstruction`; the assistant is `model`; tool results are
//!   `functionResponse` parts of a user turn (the results of parallel calls in one turn), with
//!   the tool's name taken from the call they answer; images follow as `inlineData` parts.
//! - A structured reply (`ModelRequest::response_format`) → `generationConfig`
//!   `responseMimeType: application/json` with `responseJsonSchema`.
//! - `toolChoice` → `toolConfig.functionCallingConfig` (`AUTO`, `NONE`, `ANY`, or `ANY` with
//!   `allowedFunctionNames`); Gemini has no switch for parallel calls.
//! - `temperature` and `max_tokens` go to `generationConfig` (`maxOutputTokens`).
//! - Calls without an id get one made up (`call_th...`), which is not sent back to Gemini; any
//!   other id of a call (the runtime's own) goes as `id` on its `functionCall` and its
//!   `functionResponse`, which match either way.
//! - Parts marked `thought` are reasoning.
//! - `thoughtSignature`s are kept in the reply's continuity (see the `signatures` module) and
//!   put back on the matching `functionCall` part, by the call's position, and on the text
//!   part. Known gap: a signature that came on a part other than a call is sent back only
//!   when the turn has text to carry it; no empty text part is made up for it.

mod read;
mod signatures;

use crate::api::{Settings, StreamReader, WireApi, WireTools};
use crate::assemble::{Assembly, MADE_UP_ID_PREFIX};
use crate::hosted;
use crate::secret::ApiKey;
use crate::{ChatMessage, ChatRole, ImageAttachment, ModelApi, ModelRequest, ToolChoice};
use hyper::header::{HeaderName, HeaderValue};
use serde_json::{json, Map, Value};
use signatures::Signatures;
use std::collections::HashMap;
use toolhost_core::schema::lower::Provider;

/// The generateContent API.
pub(crate) struct GeminiGenerate;

impl WireApi for GeminiGenerate {
    fn api(&self) -> ModelApi {
        ModelApi::Gemini
    }

    fn lowering(&self) -> Provider {
        Provider::Gemini
    }

    fn hosts(&self) -> &'static [&'static str] {
        &["gemini", "google"]
    }

    fn path(&self, model: &str, stream: bool) -> String {
        let model = model.strip_prefix("models/").unwrap_or(model);
        if stream {
            format!("/models/{model}:streamGenerateContent?alt=sse")
        } else {
            format!("/models/{model}:generateContent")
        }
    }

    fn auth(&self, key: &ApiKey) -> Option<(HeaderName, HeaderValue)> {
        let value = HeaderValue::from_str(key.expose()).ok()?;
        Some((HeaderName::from_static("x-goog-api-key"), value))
    }

    fn body(
        &self,
        request: &ModelRequest,
        wire: &WireTools,
        settings: &Settings,
        _stream: bool,
    ) -> Value {
        let mut body = Map::new();
        body.insert("contents".into(), Value::Array(contents(request, wire)));
        let system: Vec<Value> = request
            .messages
            .iter()
            .filter(|m| m.role == ChatRole::System)
            .filter_map(|m| m.content.as_deref())
            .map(|t| json!({"text": t}))
            .collect();
        if !system.is_empty() {
            body.insert("systemInstruction".into(), json!({"parts": system}));
        }
        let mut tools = Vec::new();
        if !wire.functions.is_empty() {
            let declarations: Vec<Value> = wire
                .functions
                .iter()
                .map(|t| t.declaration.clone())
                .collect();
            tools.push(json!({"functionDeclarations": declarations}));
        }
        tools.extend(wire.hosted.iter().map(|t| hosted::gemini_entry(&t.name)));
        if !tools.is_empty() {
            body.insert("tools".into(), Value::Array(tools));
        }
        if let (Some(choice), false) = (&request.tool_choice, wire.functions.is_empty()) {
            let config = match choice {
                ToolChoice::Auto => json!({"mode": "AUTO"}),
                ToolChoice::None => json!({"mode": "NONE"}),
                ToolChoice::Required => json!({"mode": "ANY"}),
                ToolChoice::Tool(name) => json!({
                    "mode": "ANY",
                    "allowedFunctionNames": [wire.context.wire_name(name)]
                }),
            };
            body.insert(
                "toolConfig".into(),
                json!({"functionCallingConfig": config}),
            );
        }
        let mut generation = Map::new();
        if let Some(t) = settings.temperature {
            generation.insert("temperature".into(), json!(t));
        }
        if let Some(n) = settings.max_tokens {
            generation.insert("maxOutputTokens".into(), json!(n));
        }
        if let Some(format) = &wire.format {
            generation.insert("responseMimeType".into(), "application/json".into());
            generation.insert("responseJsonSchema".into(), format.schema.clone());
        }
        let mut extra = settings.extra.clone();
        if let Some(Value::Object(more)) = extra.remove("generationConfig") {
            for (k, v) in more {
                generation.entry(k).or_insert(v);
            }
        }
        if !generation.is_empty() {
            body.insert("generationConfig".into(), Value::Object(generation));
        }
        for (k, v) in extra {
            body.entry(k).or_insert(v);
        }
        Value::Object(body)
    }

    fn read(&self, answer: &Value, out: &mut Assembly) -> Result<(), String> {
        let mut reader = read::ChunkReader::default();
        reader.chunk(answer, out, None)?;
        out.continuity = reader.continuity();
        if reader.candidates_seen == 0 {
            let reason = answer
                .pointer("/promptFeedback/blockReason")
                .and_then(Value::as_str);
            return Err(match reason {
                Some(r) => format!("the prompt was blocked ({r})"),
                None => "no candidates".to_owned(),
            });
        }
        Ok(())
    }

    fn stream_reader(&self) -> Box<dyn StreamReader> {
        Box::new(read::ChunkReader::default())
    }
}

fn inline(image: &ImageAttachment) -> Value {
    json!({"inlineData": {"mimeType": image.mime_type, "data": image.data_base64}})
}

fn sent_id(id: &str) -> Option<&str> {
    (!id.starts_with(MADE_UP_ID_PREFIX)).then_some(id)
}

fn parts(
    m: &ChatMessage,
    wire: &WireTools,
    names: &HashMap<&str, &str>,
) -> (&'static str, Vec<Value>) {
    let text = m.content.as_deref().unwrap_or_default();
    let text_part = (!text.is_empty()).then(|| json!({"text": text}));
    match m.role {
        ChatRole::System => ("user", Vec::new()),
        ChatRole::User => {
            let mut out: Vec<Value> = text_part.into_iter().collect();
            out.extend(m.images.iter().map(inline));
            ("user", out)
        }
        ChatRole::Assistant => {
            let signatures = Signatures::of(m);
            let mut out: Vec<Value> = text_part.into_iter().collect();
            if let (Some(part), Some(signature)) = (out.first_mut(), signatures.text()) {
                part["thoughtSignature"] = signature.into();
            }
            for (index, c) in m.tool_calls.iter().enumerate() {
                let mut call = json!({
                    "name": wire.context.wire_name(&c.name),
                    "args": crate::api::arguments_object(&c.arguments),
                });
                if let Some(id) = sent_id(&c.id) {
                    call["id"] = id.into();
                }
                let mut part = json!({"functionCall": call});
                if let Some(signature) = signatures.call(index) {
                    part["thoughtSignature"] = signature.into();
                }
                out.push(part);
            }
            ("model", out)
        }
        ChatRole::Tool => {
            let id = m.tool_call_id.as_deref().unwrap_or_default();
            let name = names.get(id).map_or("", |n| wire.context.wire_name(n));
            // Read exactly: a result that is not kept as it is goes as text.
            let response = match toolhost_core::exact::from_str::<Value>(text) {
                Ok(Value::Object(map)) => Value::Object(map),
                _ => json!({"result": text}),
            };
            let mut result = json!({"name": name, "response": response});
            if let Some(id) = sent_id(id).filter(|i| !i.is_empty()) {
                result["id"] = id.into();
            }
            let mut out = vec![json!({"functionResponse": result})];
            out.extend(m.images.iter().map(inline));
            ("user", out)
        }
    }
}

/// The conversation without system messages, consecutive turns of one role merged.
fn contents(request: &ModelRequest, wire: &WireTools) -> Vec<Value> {
    let names: HashMap<&str, &str> = request
        .messages
        .iter()
        .flat_map(|m| {
            m.tool_calls
                .iter()
                .map(|c| (c.id.as_str(), c.name.as_str()))
        })
        .collect();
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for m in request
        .messages
        .iter()
        .filter(|m| m.role != ChatRole::System)
    {
        let (role, content) = parts(m, wire, &names);
        if content.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last, parts)) if *last == role => parts.extend(content),
            _ => out.push((role, content)),
        }
    }
    out.into_iter()
        .map(|(role, parts)| json!({"role": role, "parts": parts}))
        .collect()
}
