//! Spec 004's execution model: a prompt that declares the schema of its final `output` asks
//! its model for one combined reply per step, `{meta, output, calls}`, as the API's structured
//! output (see [`toolhost_providers::ResponseFormat`]) instead of native tool calls.
//!
//! A reply is read here into the shape every other step has, so that the rest of the engine
//! (the call journal, approvals, latent and explicit tools, results) runs it unchanged:
//! - the reply must be a JSON object with `meta` (an object), `calls` (a list) and `output`
//!   (`null` or valid against the prompt's `output` schema); each call must be an object whose
//!   `_tool` names a tool the step offered. Anything else is a malformed answer, refused and asked
//!   again like any other;
//! - each call becomes a call of the tool its `_tool` names, with the rest of the item as its
//!   arguments (a latent tool's `_output` included), so each is validated against its tool's
//!   blueprint and a call that does not fit is answered with the violations, as for native
//!   calls. `_reasoningForCall`, `_outputPath` and `_outputMethod` are kept in the stored reply
//!   and never sent to the tool, unless the tool's blueprint declares them (its own call
//!   handling then splits them off). A result whose call names an `_outputPath` is remembered in the thread's state
//!   document (see [`super::work_state`]), which the model is shown with every request;
//! - the reply's text is the `output` (a string as it is, anything else as JSON), none while it
//!   is `null`; the whole reply is kept in the message's metadata (`combined`).
//!
//! The turn ends once a reply's `output` is given and its calls have their results (calls made
//! in the same step run first); a reply whose `output` is `null` goes on, within the step
//! budget. The model is shown its earlier replies as it wrote them and each result as a
//! message naming its call (see [`super::history`]).

use super::work_state::{parse_path, Method, OUTPUT_METHOD, OUTPUT_PATH};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use toolhost_core::blueprint::request_schema;
use toolhost_core::schema::CompiledSchema;
use toolhost_core::ToolDefinition;
use toolhost_providers::{ModelResponse, ModelToolCall, ResponseFormat};

/// The name the combined schema is sent under (a tool name on APIs that force a tool).
pub(super) const FORMAT_NAME: &str = "reply";

/// How one side's steps are asked and read in spec 004's mode.
#[derive(Clone)]
pub(super) struct Combined {
    format: ResponseFormat,
    output: CompiledSchema,
    tools: HashSet<String>,
    /// Each tool's parameters that are meta-properties of [`KEPT_IN_REPLY`] it declares itself.
    declared: HashSet<(String, &'static str)>,
    /// The `_outputPath` a tool's blueprint fixes, by tool: a call that names none is stored
    /// with it.
    fixed_paths: HashMap<String, String>,
}

/// The meta-properties of a call that are for the runtime (why the call was made, where its
/// result goes): kept in the stored reply, not sent to a tool that does not declare them.
const KEPT_IN_REPLY: [&str; 3] = ["_reasoningForCall", OUTPUT_PATH, OUTPUT_METHOD];

impl Combined {
    /// The mode for a step offering `tools`, whose final output has the schema `output`;
    /// `fixed_paths` are the `_outputPath`s the tools' blueprints fix. `Err` says why the output
    /// schema does not compile.
    pub fn new(
        tools: &[ToolDefinition],
        output: &Value,
        fixed_paths: HashMap<String, String>,
    ) -> Result<Self, String> {
        let compiled = CompiledSchema::compile(output.clone())
            .map_err(|issue| format!("at {}: {}", issue.pointer, issue.reason))?;
        Ok(Self {
            format: ResponseFormat {
                name: FORMAT_NAME.to_owned(),
                schema: request_schema(tools, Some(output)),
            },
            output: compiled,
            tools: tools.iter().map(|t| t.name.clone()).collect(),
            declared: tools
                .iter()
                .flat_map(|t| KEPT_IN_REPLY.iter().map(move |meta| (t, *meta)))
                .filter(|(t, meta)| t.parameters["properties"].get(*meta).is_some())
                .map(|(t, meta)| (t.name.clone(), meta))
                .collect(),
            fixed_paths,
        })
    }

    /// What the request asks the API for.
    pub fn format(&self) -> &ResponseFormat {
        &self.format
    }

    /// The reply read into calls and text, and the reply itself to keep; `Err` says why it is
    /// malformed.
    pub fn read(&self, mut response: ModelResponse) -> Result<(ModelResponse, Value), String> {
        let text = response.structured(&self.format).ok_or(
            "the reply is not a JSON document of the combined request {meta, output, calls}",
        )?;
        let mut reply: Value = serde_json::from_str(&text)
            .map_err(|e| format!("the reply is not JSON of the combined request: {e}"))?;
        let Value::Object(fields) = &reply else {
            return Err("the reply is not an object {meta, output, calls}".to_owned());
        };
        for name in fields.keys() {
            if !matches!(name.as_str(), "meta" | "output" | "calls") {
                return Err(format!(
                    "the reply has `{name}`, which is not one of meta, output, calls"
                ));
            }
        }
        if !fields.get("meta").is_some_and(Value::is_object) {
            return Err("the reply's `meta` is missing or not an object".to_owned());
        }
        let output = fields
            .get("output")
            .ok_or("the reply has no `output` (null while the work goes on)")?;
        if !output.is_null() {
            self.output
                .validate(output.clone())
                .map_err(|v| format!("the reply's `output` does not fit its schema: {v}"))?;
        }
        let Some(Value::Array(calls)) = fields.get("calls") else {
            return Err("the reply's `calls` is missing or not a list".to_owned());
        };
        let mut tool_calls = Vec::with_capacity(calls.len());
        for (i, call) in calls.iter().enumerate() {
            tool_calls.push(self.call(i, call)?);
        }
        response.text = match output {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        };
        // A call that names no `_outputPath` goes where its blueprint fixes one, and is kept so.
        if let Some(Value::Array(items)) = reply.get_mut("calls") {
            for (item, call) in items.iter_mut().zip(&tool_calls) {
                if let (Some(path), Value::Object(item)) = (self.fixed_paths.get(&call.name), item)
                {
                    item.entry(OUTPUT_PATH)
                        .or_insert_with(|| Value::String(path.clone()));
                }
            }
        }
        response.tool_calls = tool_calls;
        Ok((response, reply))
    }

    /// Item `i` of `calls` as a call of the tool it names.
    fn call(&self, i: usize, call: &Value) -> Result<ModelToolCall, String> {
        let Value::Object(item) = call else {
            return Err(format!("call {i} of the reply is not an object"));
        };
        let tool = match item.get("_tool") {
            Some(Value::String(name)) if self.tools.contains(name) => name.clone(),
            Some(Value::String(name)) => {
                return Err(format!(
                    "call {i} of the reply names `{name}`, which this step does not offer"
                ))
            }
            _ => {
                return Err(format!(
                    "call {i} of the reply has no `_tool` naming its tool"
                ))
            }
        };
        match item.get(OUTPUT_PATH) {
            None => {}
            Some(Value::String(path)) => {
                parse_path(path).map_err(|why| format!("call {i} of the reply: {why}"))?;
            }
            Some(_) => {
                return Err(format!(
                    "call {i} of the reply has an `{OUTPUT_PATH}` that is not text"
                ))
            }
        }
        match item.get(OUTPUT_METHOD) {
            None => {}
            Some(Value::String(method)) if item.contains_key(OUTPUT_PATH) => {
                Method::parse(method).map_err(|why| format!("call {i} of the reply: {why}"))?;
            }
            Some(_) => {
                return Err(format!(
                    "call {i} of the reply has an `{OUTPUT_METHOD}` that is not the name of a method given with an `{OUTPUT_PATH}`"
                ))
            }
        }
        let sent = |key: &str| match KEPT_IN_REPLY.iter().find(|m| **m == key) {
            Some(meta) => self.declared.contains(&(tool.clone(), *meta)),
            None => key != "_tool",
        };
        let arguments: Map<String, Value> = item
            .iter()
            .filter(|(k, _)| sent(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(ModelToolCall {
            // Only for this reply: the runtime gives each call its own id when it is stored.
            id: format!("{FORMAT_NAME}-call-{i}"),
            name: tool,
            arguments: Value::Object(arguments).to_string(),
        })
    }
}

/// Whether a stored combined reply gave its final output.
pub(super) fn gives_output(combined: &Value) -> bool {
    combined.get("output").is_some_and(|o| !o.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolhost_core::tool::ExecutionMode;

    fn greet() -> ToolDefinition {
        ToolDefinition {
            name: "greetUser".into(),
            description: "Greets the user by name.".into(),
            parameters: json!({"type": "object", "properties": {"userName": {"type": "string"}}, "required": ["userName"]}),
            output_schema: None,
            execution_mode: ExecutionMode::Local,
            execution_provider: None,
            variables: vec![],
            idempotent: false,
            hints: Default::default(),
        }
    }

    fn mode() -> Combined {
        let output = json!({"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]});
        let fixed = HashMap::from([("greetUser".to_owned(), "greetings".to_owned())]);
        Combined::new(&[greet()], &output, fixed).unwrap()
    }

    fn answer(text: &str) -> ModelResponse {
        ModelResponse {
            text: Some(text.to_owned()),
            ..ModelResponse::default()
        }
    }

    #[test]
    fn calls_become_calls_of_their_tools_and_the_output_the_text() {
        let (read, kept) = mode()
            .read(answer(
                r#"{"meta": {}, "output": {"summary": "done"}, "calls": [{"_tool": "greetUser", "userName": "Ada", "_reasoningForCall": "asked to", "_outputPath": "greeting"}]}"#,
            ))
            .unwrap();
        assert_eq!(read.tool_calls.len(), 1);
        assert_eq!(read.tool_calls[0].name, "greetUser");
        let args: Value = serde_json::from_str(&read.tool_calls[0].arguments).unwrap();
        // Why it was called stays in the reply, not in what the tool gets.
        assert_eq!(args, json!({"userName": "Ada"}));
        assert_eq!(kept["calls"][0]["_reasoningForCall"], "asked to");
        assert_eq!(kept["calls"][0]["_outputPath"], "greeting");
        assert_eq!(read.text.as_deref(), Some(r#"{"summary":"done"}"#));
        assert!(gives_output(&kept));
    }

    #[test]
    fn a_call_naming_no_path_is_kept_with_the_one_its_blueprint_fixes() {
        let (_, kept) = mode()
            .read(answer(
                r#"{"meta": {}, "output": null, "calls": [{"_tool": "greetUser", "userName": "Ada"}]}"#,
            ))
            .unwrap();
        assert_eq!(kept["calls"][0]["_outputPath"], "greetings");
    }

    #[test]
    fn a_null_output_is_no_text_and_no_end() {
        let (read, kept) = mode()
            .read(answer(r#"{"meta": {}, "output": null, "calls": []}"#))
            .unwrap();
        assert_eq!(read.text, None);
        assert!(!gives_output(&kept));
    }

    #[test]
    fn a_forced_tools_input_is_the_reply() {
        let response = ModelResponse {
            tool_calls: vec![ModelToolCall {
                id: "toolu_1".into(),
                name: FORMAT_NAME.into(),
                arguments: r#"{"meta": {}, "output": {"summary": "s"}, "calls": []}"#.into(),
            }],
            ..ModelResponse::default()
        };
        let (read, _) = mode().read(response).unwrap();
        assert!(read.tool_calls.is_empty());
        assert_eq!(read.text.as_deref(), Some(r#"{"summary":"s"}"#));
    }

    #[test]
    fn what_does_not_fit_the_combined_request_is_malformed() {
        let m = mode();
        for (reply, says) in [
            ("not json", "not JSON"),
            (r#"[1]"#, "not an object"),
            (r#"{"output": null, "calls": []}"#, "`meta`"),
            (r#"{"meta": {}, "calls": []}"#, "no `output`"),
            (
                r#"{"meta": {}, "output": {"summary": 3}, "calls": []}"#,
                "does not fit",
            ),
            (r#"{"meta": {}, "output": null}"#, "`calls`"),
            (
                r#"{"meta": {}, "output": null, "calls": [{"userName": "x"}]}"#,
                "no `_tool`",
            ),
            (
                r#"{"meta": {}, "output": null, "calls": [{"_tool": "rm"}]}"#,
                "does not offer",
            ),
            (
                r#"{"meta": {}, "output": null, "calls": [], "extra": 1}"#,
                "`extra`",
            ),
            (
                r#"{"meta": {}, "output": null, "calls": [{"_tool": "greetUser", "userName": "x", "_outputPath": "a..b"}]}"#,
                "empty segment",
            ),
            (
                r#"{"meta": {}, "output": null, "calls": [{"_tool": "greetUser", "userName": "x", "_outputPath": 3}]}"#,
                "not text",
            ),
            (
                r#"{"meta": {}, "output": null, "calls": [{"_tool": "greetUser", "userName": "x", "_outputPath": "a", "_outputMethod": "append"}]}"#,
                "not one of set",
            ),
            (
                r#"{"meta": {}, "output": null, "calls": [{"_tool": "greetUser", "userName": "x", "_outputMethod": "push"}]}"#,
                "given with an `_outputPath`",
            ),
        ] {
            let why = m.read(answer(reply)).err().unwrap_or_default();
            assert!(why.contains(says), "{reply}: {why}");
        }
    }
}
