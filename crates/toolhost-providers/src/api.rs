//! What every HTTP API adapter provides, and the per-request context shared by its request
//! builder and its response readers (wire names, strict tools, hosted tools, known call ids).

use crate::assemble::Assembly;
use crate::config::{ConfigError, ModelConfig};
use crate::delta::DeltaSink;
use crate::hosted;
use crate::keys::KeyMap;
use crate::secret::ApiKey;
use crate::sse::SseEvent;
use crate::{ModelApi, ModelError, ModelRequest};
use hyper::header::{HeaderName, HeaderValue};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use toolhost_core::names::NameMap;
use toolhost_core::schema::lower::{lower_response_format, lower_tool, LoweredTool, Provider};
use toolhost_core::tool::ExecutionMode;
use toolhost_core::ToolDefinition;

/// One HTTP API: how to address it, write its requests and read its answers.
pub(crate) trait WireApi: Send + Sync {
    /// Which API this is, as its errors name it.
    fn api(&self) -> ModelApi;
    /// The API's name in errors and logs, e.g. `Anthropic Messages`.
    fn label(&self) -> &'static str {
        self.api().label()
    }
    /// The tool lowering this API takes.
    fn lowering(&self) -> Provider;
    /// The `executionProvider` values whose provider-mode tools this API hosts.
    fn hosts(&self) -> &'static [&'static str];
    /// The path (and query) under the base URL.
    fn path(&self, model: &str, stream: bool) -> String;
    /// The header carrying the key.
    fn auth(&self, key: &ApiKey) -> Option<(HeaderName, HeaderValue)>;
    /// Headers every request carries besides the key and the content type.
    fn headers(&self) -> Vec<(HeaderName, HeaderValue)> {
        Vec::new()
    }
    /// The request body.
    fn body(
        &self,
        request: &ModelRequest,
        wire: &WireTools,
        settings: &Settings,
        stream: bool,
    ) -> Value;
    /// The error a whole answer that arrived with a success status reports in its body (a
    /// Responses answer whose `status` is `failed`), typed like an error body; `None` for an
    /// answer to read.
    fn reported_failure(&self, _answer: &Value) -> Option<ModelError> {
        None
    }
    /// Reads a whole (non-streamed) answer into `out`; `Err` says what is malformed.
    fn read(&self, answer: &Value, out: &mut Assembly) -> Result<(), String>;
    /// A reader for one streamed answer.
    fn stream_reader(&self) -> Box<dyn StreamReader>;
}

/// Reads the events of one streamed answer.
pub(crate) trait StreamReader: Send {
    /// Takes one event; `Ok(true)` once the stream's end marker has arrived.
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut Assembly,
        sink: &DeltaSink,
    ) -> Result<bool, ModelError>;
    /// Whether the answer is whole if the stream ends now (the API said why it stopped).
    fn finished(&self) -> bool;
    /// Taken once the stream has ended: what the reply must carry back in later turns (see
    /// [`crate::ModelResponse::continuity`]). Kept by the reader rather than written into the
    /// answer at every event, so long thinking is not copied once per delta.
    fn continuity(&mut self) -> Option<Value> {
        None
    }
}

/// The model id and the settings of a definition, split into what every API maps itself and
/// what is copied into the body as it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Settings {
    /// The model id.
    pub model: String,
    /// `temperature`, if set.
    pub temperature: Option<f64>,
    /// `max_tokens`, if set.
    pub max_tokens: Option<u64>,
    /// Every other entry.
    pub extra: Map<String, Value>,
}

impl Settings {
    /// Copies the extra entries into `body`, never over a field toolhost set itself.
    pub(crate) fn merge_into(&self, body: &mut Map<String, Value>) {
        for (k, v) in &self.extra {
            body.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
}

/// The offered tools as one request sends them.
#[derive(Debug, Clone)]
pub(crate) struct WireTools {
    /// Local tools, lowered and under their wire names, in the order offered.
    pub functions: Vec<LoweredTool>,
    /// Provider-mode tools this API hosts.
    pub hosted: Vec<ToolDefinition>,
    /// The schema of a structured reply as this API is sent it, when one is asked for.
    pub format: Option<WireFormat>,
    /// Everything a reader of the answer needs.
    pub context: CallContext,
}

/// A structured reply's schema lowered like a tool's arguments for the API (OpenAI strict mode
/// when the model definition says `strict`; meta-properties stripped; Gemini's
/// `responseJsonSchema` takes it as it is). `toolhost tools request --provider` prints it with
/// what the lowering drops.
#[derive(Debug, Clone)]
pub(crate) struct WireFormat {
    /// The schema's name.
    pub name: String,
    /// The schema to send.
    pub schema: Value,
    /// Whether it is sent in OpenAI strict mode.
    pub strict: bool,
}

/// What the reader of an answer needs to know about the request it answers.
#[derive(Debug, Clone, Default)]
pub(crate) struct CallContext {
    names: NameMap,
    strict: HashMap<String, LoweredTool>,
    keys: HashMap<String, ToolKeys>,
    hosted: HashMap<String, String>,
    /// A structured reply asked for in strict mode: its text is lifted like strict arguments.
    strict_format: Option<LoweredTool>,
    /// Call ids already in the conversation.
    pub history_ids: HashSet<String>,
}

impl CallContext {
    /// The tool a function name on the wire stands for (the wire name itself if unknown).
    pub(crate) fn tool_name(&self, wire: &str) -> String {
        self.names.tool_name(wire).unwrap_or(wire).to_owned()
    }

    /// The wire name of a tool.
    pub(crate) fn wire_name<'a>(&'a self, tool: &'a str) -> &'a str {
        self.names.wire_name(tool)
    }

    /// The provider-mode tool a hosted tool's wire name stands for.
    pub(crate) fn hosted_tool_name(&self, wire: &str) -> String {
        self.hosted
            .get(wire)
            .cloned()
            .unwrap_or_else(|| wire.to_owned())
    }

    /// Whether a hosted tool with this wire name was sent.
    pub(crate) fn hosts(&self, wire: &str) -> bool {
        self.hosted.contains_key(wire)
    }

    /// A structured reply's text brought back to its schema's canonical shape (strict mode's
    /// nulls removed).
    pub(crate) fn lift_structured(&self, text: String) -> String {
        let Some(lowered) = &self.strict_format else {
            return text;
        };
        match toolhost_core::exact::from_str::<Value>(&text) {
            Ok(value) => lowered.lift_arguments(value).to_string(),
            Err(_) => text,
        }
    }

    /// Arguments brought back to the tool's canonical shape: renamed property keys back to
    /// the tool's own, strict mode's nulls removed.
    pub(crate) fn lift(&self, tool: &str, arguments: String) -> String {
        let arguments = match self.keys.get(tool) {
            Some(keys) => keys.map.arguments_text_from_wire(&keys.schema, arguments),
            None => arguments,
        };
        let Some(lowered) = self.strict.get(tool) else {
            return arguments;
        };
        // Read exactly: arguments with an integer past 64 bits stay as written, and the
        // runtime refuses them naming the number, rather than passing on a rounded one.
        match toolhost_core::exact::from_str::<Value>(&arguments) {
            Ok(value) => lowered.lift_arguments(value).to_string(),
            Err(_) => arguments,
        }
    }
}

impl CallContext {
    /// A call's arguments (the tool's own keys) as the API must see them again in a later
    /// turn: with the property keys its declaration renamed.
    pub(crate) fn wire_arguments(&self, tool: &str, arguments: Value) -> Value {
        match self.keys.get(tool) {
            Some(keys) => keys.map.arguments_to_wire(&keys.schema, arguments),
            None => arguments,
        }
    }
}

/// The renamed property keys of one tool and the schema (with its own keys) they belong to.
#[derive(Debug, Clone)]
struct ToolKeys {
    map: KeyMap,
    schema: Value,
}

/// Lowers the offered tools for `api` (strict lowering when `strict` and the API is OpenAI's).
pub(crate) fn wire_tools(api: &dyn WireApi, request: &ModelRequest, strict: bool) -> WireTools {
    let lowering = match api.lowering() {
        Provider::OpenAi if strict => Provider::OpenAiStrict,
        other => other,
    };
    let (local, provider): (Vec<&ToolDefinition>, Vec<&ToolDefinition>) = request
        .tools
        .iter()
        .partition(|t| t.execution_mode == ExecutionMode::Local);
    let mut context = CallContext {
        names: NameMap::new(lowering, local.iter().map(|t| t.name.as_str())),
        ..CallContext::default()
    };
    let mut seen = HashSet::new();
    let mut functions = Vec::new();
    // The last definition of a name wins; earlier ones are not shown.
    for tool in local.iter().rev() {
        if !seen.insert(tool.name.as_str()) {
            continue;
        }
        let wire = context.names.wire_name(&tool.name);
        let mut lowered = lower_tool(lowering, wire, &tool.description, &tool.parameters);
        // Property keys the API refuses are renamed, like tool names, and mapped back.
        let keys = KeyMap::new(lowering, &tool.parameters);
        if !keys.is_empty() {
            keys.rename_declaration(&mut lowered.declaration);
            context.keys.insert(
                tool.name.clone(),
                ToolKeys {
                    map: keys,
                    schema: tool.parameters.clone(),
                },
            );
        }
        if lowered.strict {
            context.strict.insert(tool.name.clone(), lowered.clone());
        }
        functions.push(lowered);
    }
    functions.reverse();
    let mut hosted_tools = Vec::new();
    for tool in provider {
        let ours = tool
            .execution_provider
            .as_deref()
            .is_none_or(|p| api.hosts().contains(&p));
        if ours {
            context.hosted.insert(
                hosted::wire_name(api.lowering(), &tool.name),
                tool.name.clone(),
            );
            hosted_tools.push(tool.clone());
        } else {
            tracing::warn!(
                tool = %tool.name,
                "provider-mode tool for another provider not sent to {}",
                api.label()
            );
        }
    }
    let format = request.response_format.as_ref().map(|f| {
        let lowered = lower_response_format(lowering, &f.name, &f.schema);
        for dropped in &lowered.dropped {
            tracing::debug!(format = %f.name, api = api.label(), "structured reply schema: {dropped}");
        }
        if lowered.strict {
            context.strict_format = Some(lowered.clone());
        }
        WireFormat {
            name: f.name.clone(),
            schema: lowered.parameters().cloned().unwrap_or_else(|| f.schema.clone()),
            strict: lowered.strict,
        }
    });
    context.history_ids = request
        .messages
        .iter()
        .flat_map(|m| m.tool_calls.iter().map(|c| c.id.clone()))
        .collect();
    WireTools {
        functions,
        hosted: hosted_tools,
        format,
        context,
    }
}

/// A call's arguments as a JSON object for APIs that take objects: `{}` for blank text or text
/// that cannot be read exactly (not JSON, or an integer past 64 bits: such a call was refused
/// and its result says why), `{"value": v}` for a parsed non-object.
pub(crate) fn arguments_object(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return Value::Object(Map::new());
    }
    match toolhost_core::exact::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) => Value::Object(map),
        Ok(other) => serde_json::json!({ "value": other }),
        Err(_) => Value::Object(Map::new()),
    }
}

/// The line that stands for an image an API cannot take in a tool result.
pub(crate) fn image_placeholder(image: &crate::ImageAttachment) -> String {
    format!(
        "[image attachment {} ({}) not shown: this API takes no images in tool results]",
        image.name, image.mime_type
    )
}

/// Splits a definition's settings into the mapped ones and the rest, checking their types.
pub(crate) fn settings(name: &str, config: &ModelConfig) -> Result<Settings, ConfigError> {
    let bad = |setting: &str, reason: &str| ConfigError::BadSetting {
        model: name.to_owned(),
        setting: setting.to_owned(),
        reason: reason.to_owned(),
    };
    let mut extra = config.settings.clone();
    let temperature = match extra.remove("temperature") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_f64()
                .ok_or_else(|| bad("temperature", "expected a number"))?,
        ),
    };
    let max_tokens = match extra
        .remove("max_tokens")
        .or_else(|| extra.remove("maxTokens"))
    {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .filter(|n| *n > 0)
                .ok_or_else(|| bad("max_tokens", "expected a positive integer"))?,
        ),
    };
    Ok(Settings {
        model: config.model.clone(),
        temperature,
        max_tokens,
        extra,
    })
}
