//! What a project serves to MCP clients besides its tools: prompts (`agents/mcp-prompts/`,
//! message templates a client offers its user, such as slash commands) and resources
//! (`agents/mcp-resources/`, documents a client may read, and URI templates whose reads run a
//! read-only tool). A prompt's message, too, may be the text a read-only tool answers.
//!
//! Both are checked when the project loads, each refusal naming the file and the field: a
//! prompt's messages may only put in the arguments it declares, a file a definition names must
//! lie under the definition's folder (a plain relative path, no `..`, not a link out of it; see
//! [`DefinitionFile`], checked again at each read), a URI must have a scheme and not be one of
//! toolhost's own (`toolhost://`), and no two resources may claim one URI. A template's tool is
//! checked when a client reads it (tools may be registered after loading). What a client asks
//! for is served by `toolhost-server`'s MCP handler.

mod definition_file;
mod uri_template;

pub use definition_file::{media_type, DefinitionFile, DefinitionFileError};
pub use uri_template::{percent_decoded, TemplateError, UriTemplate};

use super::definitions::json_files;
use super::tools::FileProblem;
use crate::files::{read_text, MAX_FILE_BYTES};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The folder of served prompts, under `agents/`.
pub const PROMPTS_DIR: &str = "mcp-prompts";
/// The folder of served resources, under `agents/`.
pub const RESOURCES_DIR: &str = "mcp-resources";
/// URIs of this scheme name thread files; a project may not claim them.
const OWN_SCHEME: &str = "toolhost";
/// The most values an argument may list for completion.
pub const MAX_COMPLETION_VALUES: usize = 1000;

/// One piece of a text: words as written, or the value of an argument.
#[derive(Debug, Clone, PartialEq)]
pub enum TextPart {
    /// Text as written.
    Literal(String),
    /// The value the client gave for this argument (empty when an optional one was not given).
    Argument(String),
}

/// A text written as a string or as a list of parts (`"words"` or `{"argument": "NAME"}`),
/// the way a prompt definition's `prompt` puts in variables.
pub type Text = Vec<TextPart>;

/// Who a message of a prompt is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The client's user.
    User,
    /// The model.
    Assistant,
}

/// What one message of a served prompt holds.
#[derive(Debug, Clone, PartialEq)]
pub enum MessageContent {
    /// Text, with arguments put in.
    Text(Text),
    /// An image file beside the definition, sent inline (base64).
    Image {
        /// The file.
        file: DefinitionFile,
        /// Its media type, from its extension.
        mime_type: String,
    },
    /// A served resource, embedded whole; its URI may come from an argument.
    Resource(Text),
    /// The text this tool answers, run at each `prompts/get` with the prompt's arguments as
    /// its arguments. Like a template's, the tool must be offered by the served agent and
    /// declare `readOnlyHint: true` (checked when a client asks: tools may be registered after
    /// loading); what it asks while it runs (`state.elicit`, ...) is asked of the client.
    Tool(String),
}

/// One message of a served prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptMessage {
    /// Who it is from.
    pub role: Role,
    /// What it holds.
    pub content: MessageContent,
}

/// An argument of a served prompt.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PromptArgument {
    /// Its name, as clients send it.
    pub name: String,
    /// A name for people.
    #[serde(default)]
    pub title: Option<String>,
    /// What to give.
    #[serde(default)]
    pub description: Option<String>,
    /// Whether `prompts/get` is refused without it.
    #[serde(default)]
    pub required: bool,
    /// Values a client may offer as its user types (`completion/complete`).
    #[serde(default)]
    pub values: Vec<String>,
}

/// A prompt served to MCP clients (`agents/mcp-prompts/NAME.json`).
#[derive(Debug, Clone, PartialEq)]
pub struct McpPromptDef {
    /// Its name (the file's stem).
    pub name: String,
    /// A name for people.
    pub title: Option<String>,
    /// What it is for.
    pub description: String,
    /// What a client gives it, in order.
    pub arguments: Vec<PromptArgument>,
    /// The messages it becomes.
    pub messages: Vec<PromptMessage>,
}

/// Where a served resource's content comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum ResourceSource {
    /// Fixed text, written in the definition.
    Text(String),
    /// A file beside the definition, read at each read.
    File(DefinitionFile),
    /// A URI template (RFC 6570, simple `{name}` expressions): a read of a URI it matches runs
    /// this tool, which must be offered by the served agent and declare `readOnlyHint: true`,
    /// with the template's values as arguments; the tool's text is the resource.
    Tool {
        /// The template.
        template: UriTemplate,
        /// The tool.
        tool: String,
    },
}

/// A resource served to MCP clients (`agents/mcp-resources/NAME.json`).
#[derive(Debug, Clone, PartialEq)]
pub struct McpResourceDef {
    /// Its name (the file's stem).
    pub name: String,
    /// A name for people.
    pub title: Option<String>,
    /// What it is.
    pub description: String,
    /// Its URI (a template's text for a templated one).
    pub uri: String,
    /// Its media type.
    pub mime_type: String,
    /// Where its content comes from.
    pub source: ResourceSource,
}

/// The prompts and resources a project serves, and the files that did not load.
#[derive(Debug, Clone, Default)]
pub struct McpCatalog {
    /// Prompts by name.
    pub prompts: BTreeMap<String, McpPromptDef>,
    /// Resources by name.
    pub resources: BTreeMap<String, McpResourceDef>,
}

impl McpCatalog {
    /// The direct (not templated) resource whose URI is `uri`.
    pub fn resource(&self, uri: &str) -> Option<&McpResourceDef> {
        self.resources
            .values()
            .find(|r| r.uri == uri && !matches!(r.source, ResourceSource::Tool { .. }))
    }

    /// The templated resource `uri` matches, with the template's values.
    pub fn templated(&self, uri: &str) -> Option<(&McpResourceDef, BTreeMap<String, String>)> {
        self.resources.values().find_map(|r| match &r.source {
            ResourceSource::Tool { template, .. } => template.matches(uri).map(|v| (r, v)),
            _ => None,
        })
    }
}

/// Reads `agents/mcp-prompts/` and `agents/mcp-resources/` of the project at `root`; each file
/// that does not load is a problem, the others load.
pub fn load_mcp_catalog(root: &Path) -> (McpCatalog, Vec<FileProblem>) {
    let mut catalog = McpCatalog::default();
    let mut problems = Vec::new();
    let agents = root.join("agents");
    for (name, path) in json_files(&agents.join(PROMPTS_DIR)) {
        match read_definition(&path).and_then(|v| prompt_of(&name, v, root, &path)) {
            Ok(prompt) => {
                catalog.prompts.insert(name, prompt);
            }
            Err(m) => problems.push(FileProblem::not_loaded(path, &name, m)),
        }
    }
    let mut claimed: BTreeMap<String, String> = BTreeMap::new();
    for (name, path) in json_files(&agents.join(RESOURCES_DIR)) {
        let loaded = read_definition(&path)
            .and_then(|v| resource_of(&name, v, root, &path))
            .and_then(|r| match claimed.get(&r.uri) {
                Some(other) => Err(format!(
                    "`uri` {} is served by {other}.json already; each URI is one resource",
                    r.uri
                )),
                None => Ok(r),
            });
        match loaded {
            Ok(resource) => {
                claimed.insert(resource.uri.clone(), name.clone());
                catalog.resources.insert(name, resource);
            }
            Err(m) => problems.push(FileProblem::not_loaded(path, &name, m)),
        }
    }
    (catalog, problems)
}

fn read_definition(path: &Path) -> Result<serde_json::Map<String, Value>, String> {
    let text = read_text(path, MAX_FILE_BYTES).map_err(|e| e.reason())?;
    match serde_json::from_str(&text) {
        Ok(Value::Object(fields)) => Ok(fields),
        Ok(_) => Err("not a valid definition: it must be a JSON object".to_owned()),
        Err(e) => Err(format!("not a valid definition: {e}")),
    }
}

/// Takes the fields a definition may have out of `fields`, refusing any other.
struct Fields {
    fields: serde_json::Map<String, Value>,
}

impl Fields {
    fn new(fields: serde_json::Map<String, Value>, known: &[&str]) -> Result<Self, String> {
        if let Some(unknown) = fields.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(format!(
                "field `{unknown}` is not one toolhost knows here (known: {})",
                known.join(", ")
            ));
        }
        Ok(Self { fields })
    }

    fn string(&mut self, field: &str) -> Result<Option<String>, String> {
        match self.fields.remove(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(format!("field `{field}` must be a string")),
        }
    }

    fn required_string(&mut self, field: &str) -> Result<String, String> {
        match self.string(field)? {
            Some(s) if !s.trim().is_empty() => Ok(s),
            _ => Err(format!("field `{field}` is required (a non-empty string)")),
        }
    }

    fn take(&mut self, field: &str) -> Option<Value> {
        self.fields.remove(field)
    }
}

/// A definition's `name`, when given, must be its file's stem.
fn check_name(fields: &mut Fields, stem: &str) -> Result<(), String> {
    match fields.string("name")? {
        Some(given) if !given.is_empty() && given != stem => Err(format!(
            "`name` is \"{given}\" but the file is named {stem}.json; a definition is named by its file"
        )),
        _ => Ok(()),
    }
}

fn prompt_of(
    stem: &str,
    fields: serde_json::Map<String, Value>,
    root: &Path,
    path: &Path,
) -> Result<McpPromptDef, String> {
    let mut fields = Fields::new(
        fields,
        &["name", "title", "description", "arguments", "messages"],
    )?;
    check_name(&mut fields, stem)?;
    let title = fields.string("title")?;
    let description = fields.required_string("description")?;
    let arguments: Vec<PromptArgument> = match fields.take("arguments") {
        None => Vec::new(),
        Some(v) => serde_json::from_value(v).map_err(|e| format!("field `arguments`: {e}"))?,
    };
    let mut names = BTreeSet::new();
    for (i, argument) in arguments.iter().enumerate() {
        if argument.name.is_empty()
            || !argument
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
        {
            return Err(format!(
                "`arguments/{i}/name` {:?} must be letters, digits, `_`, `.` or `-`",
                argument.name
            ));
        }
        if !names.insert(argument.name.as_str()) {
            return Err(format!(
                "`arguments/{i}/name` {:?} is declared twice",
                argument.name
            ));
        }
        if argument.values.len() > MAX_COMPLETION_VALUES {
            return Err(format!(
                "`arguments/{i}/values` lists {} values; at most {MAX_COMPLETION_VALUES}",
                argument.values.len()
            ));
        }
    }
    let Some(Value::Array(listed)) = fields.take("messages") else {
        return Err("field `messages` is required (a list of messages)".to_owned());
    };
    if listed.is_empty() {
        return Err("field `messages` is empty; a prompt is at least one message".to_owned());
    }
    let folder = path.parent().unwrap_or(root);
    // Each tool's questions are answered in a round of their own; one tool keeps a prompt's
    // round to one call.
    let by_tools = listed.iter().filter(|m| m.get("tool").is_some()).count();
    if by_tools > 1 {
        return Err(format!(
            "field `messages` has {by_tools} messages made by a tool; a prompt may have one"
        ));
    }
    let messages = listed
        .into_iter()
        .enumerate()
        .map(|(i, m)| message_of(m, &names, folder).map_err(|e| format!("`messages/{i}`{e}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(McpPromptDef {
        name: stem.to_owned(),
        title,
        description,
        arguments,
        messages,
    })
}

/// One message; an error starts with the field within it (`/text: ...`).
fn message_of(
    value: Value,
    arguments: &BTreeSet<&str>,
    folder: &Path,
) -> Result<PromptMessage, String> {
    let Value::Object(fields) = value else {
        return Err(
            ": a message is an object with `role` and one of `text`, `image`, `resource`, `tool`"
                .to_owned(),
        );
    };
    let mut fields = Fields::new(fields, &["role", "text", "image", "resource", "tool"])
        .map_err(|e| format!(": {e}"))?;
    let role = match fields.take("role") {
        Some(v) => {
            serde_json::from_value(v).map_err(|_| "/role: must be \"user\" or \"assistant\"")?
        }
        None => return Err("/role: is required (\"user\" or \"assistant\")".to_owned()),
    };
    let tool = fields.string("tool").map_err(|e| format!(": {e}"))?;
    let content = match (
        fields.take("text"),
        fields.string("image").map_err(|e| format!(": {e}"))?,
        fields.take("resource"),
    ) {
        (None, None, None) if tool.is_some() => MessageContent::Tool(tool.unwrap_or_default()),
        _ if tool.is_some() => {
            return Err(
                ": a message holds exactly one of `text`, `image`, `resource` and `tool`"
                    .to_owned(),
            )
        }
        (Some(text), None, None) => {
            MessageContent::Text(text_of(text, arguments).map_err(|e| format!("/text: {e}"))?)
        }
        (None, Some(image), None) => {
            let file =
                DefinitionFile::beside(folder, &image).map_err(|e| format!("/image: {e}"))?;
            let mime_type = media_type(&file.path)
                .filter(|m| m.starts_with("image/"))
                .ok_or_else(|| {
                    format!("/image: {image} is not a .png, .jpg, .gif or .webp file")
                })?;
            MessageContent::Image {
                file,
                mime_type: mime_type.to_owned(),
            }
        }
        (None, None, Some(uri)) => MessageContent::Resource(
            text_of(uri, arguments)
                .and_then(|parts| match parts.as_slice() {
                    [TextPart::Literal(uri)] => check_uri(uri).map(|()| parts),
                    _ => Ok(parts),
                })
                .map_err(|e| format!("/resource: {e}"))?,
        ),
        _ => {
            return Err(
                ": a message holds exactly one of `text`, `image`, `resource` and `tool`"
                    .to_owned(),
            )
        }
    };
    Ok(PromptMessage { role, content })
}

/// A text given as a string or a list of strings and `{"argument": NAME}` parts, each NAME one
/// of `arguments`.
fn text_of(value: Value, arguments: &BTreeSet<&str>) -> Result<Text, String> {
    let parts = match value {
        Value::String(s) => return Ok(vec![TextPart::Literal(s)]),
        Value::Array(parts) => parts,
        _ => {
            return Err(
                "must be a string, or a list of strings and {\"argument\": NAME}".to_owned(),
            )
        }
    };
    parts
        .into_iter()
        .enumerate()
        .map(|(i, part)| match part {
            Value::String(s) => Ok(TextPart::Literal(s)),
            Value::Object(o) if o.len() == 1 => match o.get("argument") {
                Some(Value::String(name)) if arguments.contains(name.as_str()) => {
                    Ok(TextPart::Argument(name.clone()))
                }
                Some(Value::String(name)) => Err(format!(
                    "part {i} puts in argument \"{name}\", which `arguments` does not declare"
                )),
                _ => Err(format!(
                    "part {i} must be a string or {{\"argument\": NAME}}"
                )),
            },
            _ => Err(format!(
                "part {i} must be a string or {{\"argument\": NAME}}"
            )),
        })
        .collect()
}

fn resource_of(
    stem: &str,
    fields: serde_json::Map<String, Value>,
    root: &Path,
    path: &Path,
) -> Result<McpResourceDef, String> {
    let mut fields = Fields::new(
        fields,
        &[
            "name",
            "title",
            "description",
            "uri",
            "uriTemplate",
            "mimeType",
            "text",
            "file",
            "tool",
        ],
    )?;
    check_name(&mut fields, stem)?;
    let title = fields.string("title")?;
    let description = fields.required_string("description")?;
    let mime_type = fields.string("mimeType")?;
    let folder = path.parent().unwrap_or(root);
    let uri = fields.string("uri")?;
    let template = fields.string("uriTemplate")?;
    let (text, file, tool) = (
        fields.string("text")?,
        fields.string("file")?,
        fields.string("tool")?,
    );
    let (uri, source, mime_type) = match (uri, template) {
        (Some(uri), None) => {
            check_uri(&uri).map_err(|e| format!("`uri`: {e}"))?;
            match (text, file, tool) {
                (Some(text), None, None) => (
                    uri,
                    ResourceSource::Text(text),
                    mime_type.unwrap_or_else(|| "text/plain".into()),
                ),
                (None, Some(file), None) => {
                    let file = DefinitionFile::beside(folder, &file)
                        .map_err(|e| format!("`file`: {e}"))?;
                    let mime_type = match mime_type {
                        Some(m) => m,
                        None => media_type(&file.path)
                            .ok_or("`mimeType` is required: the file's extension does not say its media type")?
                            .to_owned(),
                    };
                    (uri, ResourceSource::File(file), mime_type)
                }
                (_, _, Some(_)) => {
                    return Err(
                        "`tool` reads a templated resource: give `uriTemplate`, not `uri`"
                            .to_owned(),
                    )
                }
                _ => {
                    return Err(
                        "a resource with `uri` has exactly one of `text` and `file`".to_owned()
                    )
                }
            }
        }
        (None, Some(written)) => {
            check_uri(&written).map_err(|e| format!("`uriTemplate`: {e}"))?;
            let template =
                UriTemplate::parse(&written).map_err(|e| format!("`uriTemplate`: {e}"))?;
            let (None, None, Some(tool)) = (text, file, tool) else {
                return Err(
                    "a resource with `uriTemplate` is read by a `tool` (no `text` or `file`)"
                        .to_owned(),
                );
            };
            let mime_type = mime_type.unwrap_or_else(|| "text/plain".into());
            (written, ResourceSource::Tool { template, tool }, mime_type)
        }
        (Some(_), Some(_)) => return Err("give `uri` or `uriTemplate`, not both".to_owned()),
        (None, None) => return Err("field `uri` (or `uriTemplate`) is required".to_owned()),
    };
    Ok(McpResourceDef {
        name: stem.to_owned(),
        title,
        description,
        uri,
        mime_type,
        source,
    })
}

/// A URI starts with a scheme (`letters:`), holds no spaces or control characters, and is not
/// one of toolhost's own.
fn check_uri(uri: &str) -> Result<(), String> {
    let scheme_ends = uri.find(':').filter(|&i| i > 0).ok_or_else(|| {
        format!("{uri:?} has no scheme (write it as SCHEME:..., such as docs://guide)")
    })?;
    let scheme = &uri[..scheme_ends];
    if !scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
    {
        return Err(format!("{uri:?} does not start with a valid scheme"));
    }
    if uri.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{uri:?} holds a space or a control character"));
    }
    if scheme.eq_ignore_ascii_case(OWN_SCHEME) {
        return Err(format!(
            "{uri:?} is of toolhost's own scheme, which names thread files"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
