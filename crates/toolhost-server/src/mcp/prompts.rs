//! The prompts a project serves (`agents/mcp-prompts/`, see
//! [`toolhost_runtime::project::McpPromptDef`]): `prompts/list` in pages by name,
//! `prompts/get` with the client's arguments put in, and `completion/complete` offering an
//! argument's declared `values` that start with what the user typed.
//!
//! `prompts/get` refuses an argument the prompt does not declare, a required one left out and
//! one that is not a string, each naming the argument. An image is read from its file at each
//! get; an embedded resource is one of the project's, read as `resources/read` would read it (so
//! a templated one runs its read-only tool). A message made by a tool runs that read-only tool
//! with the prompt's arguments; what the tool asks goes to the client as in a `tools/call`
//! (requests under 2025-11-25; under 2026-07-28 the `prompts/get` is answered `input_required`
//! and its retry carries the answers).

use super::pages::page;
use super::resources::definition_file;
use super::served::MadeByTool;
use super::{McpTools, TOOLS_PAGE_SIZE};
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
    ListPromptsResult, PaginatedRequestParams, ReadResourceResponse,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::ErrorData as McpError;
use serde_json::{json, Map, Value};
use toolhost_runtime::project::{
    McpPromptDef, MessageContent, ResourceSource, Role, TextPart, PROMPTS_DIR,
};

/// The most values one `completion/complete` answer gives (the protocol's cap).
const MAX_COMPLETIONS: usize = 100;

/// How a prompt is listed.
fn listed(prompt: &McpPromptDef) -> Value {
    let arguments: Vec<Value> = prompt
        .arguments
        .iter()
        .map(|a| {
            let mut listed = json!({"name": a.name, "required": a.required});
            if let Some(title) = &a.title {
                listed["title"] = json!(title);
            }
            if let Some(description) = &a.description {
                listed["description"] = json!(description);
            }
            listed
        })
        .collect();
    let mut listed = json!({
        "name": prompt.name,
        "description": prompt.description,
        "arguments": arguments,
    });
    if let Some(title) = &prompt.title {
        listed["title"] = json!(title);
    }
    listed
}

/// `parts` with the arguments' values put in (an optional one not given is empty).
fn rendered(parts: &[TextPart], values: &Map<String, Value>) -> String {
    parts
        .iter()
        .map(|part| match part {
            TextPart::Literal(text) => text.as_str(),
            TextPart::Argument(name) => values.get(name).and_then(Value::as_str).unwrap_or(""),
        })
        .collect()
}

impl McpTools {
    /// Each served prompt as `prompts/list` gives it, by name.
    pub(super) fn prompt_listing(&self) -> Vec<Value> {
        self.runtime()
            .definitions()
            .mcp
            .prompts
            .values()
            .map(listed)
            .collect()
    }

    /// `prompts/list`: one page of the served prompts.
    pub(super) fn list_served_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
    ) -> Result<ListPromptsResult, McpError> {
        let runtime = self.runtime();
        let prompts = &runtime.definitions().mcp.prompts;
        let names: Vec<String> = prompts.keys().cloned().collect();
        let cursor = request.and_then(|r| r.cursor);
        let (names, next) = page(&names, cursor.as_deref(), TOOLS_PAGE_SIZE)?;
        let listed: Vec<Value> = names.iter().map(|n| listed(&prompts[n])).collect();
        let mut result = json!({"prompts": listed, "resultType": "complete"});
        super::cache_hints(&mut result, super::LIST_TTL_MS);
        if let Some(next) = next {
            result["nextCursor"] = json!(next);
        }
        serde_json::from_value(result).map_err(|e| {
            McpError::internal_error(format!("the prompts could not be listed: {e}"), None)
        })
    }

    /// The served prompt `name`, or an error that says why there is none.
    fn served_prompt(&self, name: &str) -> Result<McpPromptDef, McpError> {
        let runtime = self.runtime();
        if let Some(prompt) = runtime.definitions().mcp.prompts.get(name) {
            return Ok(prompt.clone());
        }
        let file = std::path::Path::new("agents")
            .join(PROMPTS_DIR)
            .join(format!("{name}.json"));
        let broken = runtime
            .problems()
            .into_iter()
            .find(|p| p.path.ends_with(&file));
        Err(McpError::invalid_params(
            match broken {
                Some(problem) => format!(
                    "prompt \"{name}\" did not load: {} ({})",
                    problem.message,
                    file.display()
                ),
                None => format!("no prompt \"{name}\"; see prompts/list"),
            },
            None,
        ))
    }

    /// `prompts/get`: the prompt's messages with the client's arguments put in.
    pub(super) async fn get_served_prompt(
        &self,
        request: GetPromptRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let prompt = self.served_prompt(&request.name)?;
        let values = request.arguments.unwrap_or_default();
        check_arguments(&prompt, &values)?;
        let mut answers = Some((request.request_state, request.input_responses));
        let mut messages = Vec::new();
        for message in &prompt.messages {
            let content = match &message.content {
                MessageContent::Text(parts) => {
                    json!({"type": "text", "text": rendered(parts, &values)})
                }
                MessageContent::Image { file, mime_type } => {
                    let bytes = definition_file(file).await.map_err(|why| {
                        McpError::internal_error(
                            format!("prompt \"{}\": its image {why}", prompt.name),
                            None,
                        )
                    })?;
                    json!({
                        "type": "image",
                        "mimeType": mime_type,
                        "data": super::content::base64_of(&bytes),
                    })
                }
                MessageContent::Resource(parts) => {
                    let uri = rendered(parts, &values);
                    json!({"type": "resource", "resource": self.embedded(&uri, context).await?})
                }
                MessageContent::Tool(tool) => {
                    // A prompt has one such message (checked when it loads): the request's
                    // answers are its.
                    let (state, responses) = answers.take().unwrap_or_default();
                    let arguments = Value::Object(values.clone());
                    let round = if super::is_stateless(context) {
                        Some(self.round_of(
                            tool,
                            &arguments,
                            state.as_deref(),
                            responses,
                            context.meta.client_capabilities(),
                        )?)
                    } else {
                        None
                    };
                    let what = format!("prompt \"{}\"", prompt.name);
                    match self
                        .made_by_tool(tool, arguments, &what, round, context)
                        .await?
                    {
                        MadeByTool::Text(text) => json!({"type": "text", "text": text}),
                        MadeByTool::Asking(asking) => return Ok(asking.into()),
                    }
                }
            };
            let role = match message.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            messages.push(json!({"role": role, "content": content}));
        }
        let result = json!({
            "description": prompt.description,
            "messages": messages,
            "resultType": "complete",
        });
        serde_json::from_value::<rmcp::model::GetPromptResult>(result)
            .map(Into::into)
            .map_err(|e| {
                McpError::internal_error(format!("the prompt could not be given: {e}"), None)
            })
    }

    /// The contents of the project's resource at `uri`, as a prompt embeds it (a thread's file
    /// is not embedded: a prompt is the same for every session).
    async fn embedded(
        &self,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<Value, McpError> {
        let read = match self.read_served(uri, context).await? {
            ReadResourceResponse::Complete(read) => read,
            _ => {
                return Err(McpError::internal_error(
                    format!("resource {uri} waits for a person's answer and cannot be embedded"),
                    None,
                ))
            }
        };
        serde_json::to_value(&read.contents)
            .ok()
            .and_then(|contents| contents.get(0).cloned())
            .ok_or_else(|| McpError::internal_error(format!("resource {uri} is empty"), None))
    }

    /// `completion/complete`: the declared values of a prompt's argument that start with what
    /// the user typed (ignoring case), at most [`MAX_COMPLETIONS`]; a template's values are
    /// not known ahead, so none.
    pub(super) fn complete_served(
        &self,
        request: CompleteRequestParams,
    ) -> Result<CompleteResult, McpError> {
        let reference = serde_json::to_value(&request.r#ref).unwrap_or_default();
        let argument = &request.argument.name;
        let typed = request.argument.value.to_lowercase();
        let candidates: Vec<String> = match reference["type"].as_str() {
            Some("ref/prompt") => {
                let prompt = self.served_prompt(reference["name"].as_str().unwrap_or_default())?;
                let Some(declared) = prompt.arguments.iter().find(|a| &a.name == argument) else {
                    return Err(McpError::invalid_params(
                        format!("prompt \"{}\" has no argument \"{argument}\"", prompt.name),
                        None,
                    ));
                };
                declared.values.clone()
            }
            _ => {
                let uri = reference["uri"].as_str().unwrap_or_default();
                let runtime = self.runtime();
                let template = runtime
                    .definitions()
                    .mcp
                    .resources
                    .values()
                    .find_map(|r| match &r.source {
                        ResourceSource::Tool { template, .. } if r.uri == uri => {
                            Some(template.clone())
                        }
                        _ => None,
                    });
                match template {
                    Some(t) if t.variables().contains(&argument.as_str()) => Vec::new(),
                    Some(_) => {
                        return Err(McpError::invalid_params(
                            format!("template {uri} has no expression {{{argument}}}"),
                            None,
                        ))
                    }
                    None => {
                        return Err(McpError::invalid_params(
                            format!("no resource template {uri}; see resources/templates/list"),
                            None,
                        ))
                    }
                }
            }
        };
        let matching: Vec<String> = candidates
            .into_iter()
            .filter(|v| v.to_lowercase().starts_with(&typed))
            .collect();
        let total = matching.len();
        let values: Vec<String> = matching.into_iter().take(MAX_COMPLETIONS).collect();
        serde_json::from_value(json!({
            "completion": {"values": values, "total": total, "hasMore": total > MAX_COMPLETIONS},
            "resultType": "complete",
        }))
        .map_err(|e| {
            McpError::internal_error(format!("the completion could not be given: {e}"), None)
        })
    }
}

/// Refuses arguments `prompt` does not declare, required ones left out, and values that are not
/// strings.
fn check_arguments(prompt: &McpPromptDef, values: &Map<String, Value>) -> Result<(), McpError> {
    let declared: Vec<&str> = prompt.arguments.iter().map(|a| a.name.as_str()).collect();
    for (name, value) in values {
        if !declared.contains(&name.as_str()) {
            return Err(McpError::invalid_params(
                format!(
                    "prompt \"{}\" takes no argument \"{name}\" (it takes: {})",
                    prompt.name,
                    if declared.is_empty() {
                        "none".to_owned()
                    } else {
                        declared.join(", ")
                    }
                ),
                None,
            ));
        }
        if !value.is_string() {
            return Err(McpError::invalid_params(
                format!(
                    "argument \"{name}\" of prompt \"{}\" must be a string",
                    prompt.name
                ),
                None,
            ));
        }
    }
    if let Some(missing) = prompt
        .arguments
        .iter()
        .find(|a| a.required && !values.contains_key(&a.name))
    {
        return Err(McpError::invalid_params(
            format!(
                "prompt \"{}\" needs argument \"{}\"",
                prompt.name, missing.name
            ),
            None,
        ));
    }
    Ok(())
}
