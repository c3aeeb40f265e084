//! Prompts offered as tools (spec 001 §4): an entry of a prompt's `tools` that names another
//! prompt makes that prompt a tool (its name, its `toolDescription`, its `requiredSchema` or a
//! default taking a `message`), and the entry's `SubpromptConfig` settings say what the call
//! returns and how its arguments become the sub-prompt's first message.
//!
//! Checked when the project loads, each refusal naming the file and the field: a
//! `requiredSchema` outside the schema subset, an `init…Property` the prompt tool's arguments
//! lack, settings given for something that is not a prompt, and prompt tools nested deeper than
//! [`MAX_SUBPROMPT_DEPTH`] (a cycle, such as a prompt offering itself, always is).

use super::agent_tools::{SubagentToolConfig, AGENT_ONLY_FIELDS};
use super::prompt::PromptDef;
use serde::de::{Deserializer, Error as _};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::AnyTool;

/// How deep prompt tools may nest: a prompt's prompt tool is at depth 1, a prompt tool it
/// offers at depth 2, and so on.
pub const MAX_SUBPROMPT_DEPTH: usize = 4;

/// The argument a prompt tool without `requiredSchema` takes: the sub-prompt's first message.
pub const DEFAULT_MESSAGE_PROPERTY: &str = "message";

fn yes() -> bool {
    true
}

/// What a call of a prompt tool returns and how its arguments start the sub-prompt (the spec's
/// `SubpromptConfig`). Given as an object in a prompt's `tools`; a plain name has the defaults.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubpromptConfig {
    /// The prompt offered.
    pub name: String,
    /// Return the sub-prompt's final text response (default true).
    #[serde(default = "yes")]
    pub include_text_response: bool,
    /// Return the calls the sub-prompt made, with their results (default false).
    #[serde(default)]
    pub include_tool_calls: bool,
    /// Return the errors of the sub-prompt: its calls that failed and why it ended early
    /// (default false).
    #[serde(default)]
    pub include_errors: bool,
    /// The argument whose value is the sub-prompt's first message (default `message` for a
    /// prompt without `requiredSchema`; otherwise the whole arguments as JSON).
    #[serde(default)]
    pub init_user_message_property: Option<String>,
    /// The argument holding attachment paths (a list of strings) that go with the first message.
    #[serde(default)]
    pub init_attachments_property: Option<String>,
}

impl SubpromptConfig {
    /// The defaults, for a prompt offered by its name alone.
    pub fn named(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            include_text_response: true,
            include_tool_calls: false,
            include_errors: false,
            init_user_message_property: None,
            init_attachments_property: None,
        }
    }
}

/// One entry of a prompt's `tools`: a tool's or a prompt's name, or a prompt tool's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOffer {
    /// The tool or prompt offered.
    pub name: String,
    /// The settings given with it (an object entry); a prompt named alone has the defaults.
    pub settings: Option<SubpromptConfig>,
    /// The settings of an agent tool given with it (an object entry with a field only an agent
    /// tool has, such as `blocking`); an agent named alone has the defaults.
    pub agent: Option<SubagentToolConfig>,
}

impl ToolOffer {
    /// The settings of this entry when it offers a prompt.
    pub fn subprompt(&self) -> SubpromptConfig {
        self.settings
            .clone()
            .unwrap_or_else(|| SubpromptConfig::named(&self.name))
    }

    /// The settings of this entry when it offers an agent.
    pub fn subagent(&self) -> SubagentToolConfig {
        if let Some(config) = &self.agent {
            return config.clone();
        }
        // An object with only the fields both kinds share reads as a prompt tool's.
        let mut config = SubagentToolConfig::named(&self.name);
        if let Some(shared) = &self.settings {
            config.init_user_message_property = shared.init_user_message_property.clone();
            config.init_attachments_property = shared.init_attachments_property.clone();
        }
        config
    }

    /// Whether the entry gives settings only a prompt tool has (`includeToolCalls`,
    /// `includeErrors`, `includeTextResponse: false`).
    pub fn has_prompt_only_settings(&self) -> bool {
        self.settings
            .as_ref()
            .is_some_and(|s| !s.include_text_response || s.include_tool_calls || s.include_errors)
    }
}

impl std::ops::Deref for ToolOffer {
    type Target = str;
    fn deref(&self) -> &str {
        &self.name
    }
}

impl std::fmt::Display for ToolOffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

impl PartialEq<str> for ToolOffer {
    fn eq(&self, other: &str) -> bool {
        self.name == other
    }
}

impl PartialEq<&str> for ToolOffer {
    fn eq(&self, other: &&str) -> bool {
        self.name == *other
    }
}

impl PartialEq<String> for ToolOffer {
    fn eq(&self, other: &String) -> bool {
        &self.name == other
    }
}

/// Reads `tools`: each entry a name, or an object of [`SubpromptConfig`] fields.
pub(super) fn tool_offers<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ToolOffer>, D::Error> {
    let items = Vec::<Value>::deserialize(d)?;
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(name) => Ok(ToolOffer {
                name,
                settings: None,
                agent: None,
            }),
            Value::Object(fields) if AGENT_ONLY_FIELDS.iter().any(|f| fields.contains_key(*f)) => {
                serde_json::from_value::<SubagentToolConfig>(Value::Object(fields))
                    .map(|c| ToolOffer {
                        name: c.name.clone(),
                        settings: None,
                        agent: Some(c),
                    })
                    .map_err(|e| D::Error::custom(format!("`tools[{i}]` (an agent tool's settings): {e}")))
            }
            object @ Value::Object(_) => serde_json::from_value::<SubpromptConfig>(object)
                .map(|c| ToolOffer {
                    name: c.name.clone(),
                    settings: Some(c),
                    agent: None,
                })
                .map_err(|e| D::Error::custom(format!("`tools[{i}]`: {e}"))),
            _ => Err(D::Error::custom(format!(
                "`tools[{i}]` is a name, or a prompt tool's settings ({{\"name\": ..., \"includeTextResponse\": ...}})"
            ))),
        })
        .collect()
}

/// The arguments a prompt tool takes: its `requiredSchema`, or one `message` string.
pub fn prompt_tool_schema(prompt: &PromptDef) -> Value {
    prompt.required_schema.clone().unwrap_or_else(|| {
        json!({
            "type": "object",
            "properties": {DEFAULT_MESSAGE_PROPERTY: {
                "type": "string",
                "description": "The message the prompt answers."
            }},
            "required": [DEFAULT_MESSAGE_PROPERTY]
        })
    })
}

/// The tool a prompt is when another prompt offers it. The engine runs its calls as
/// sub-prompts; the handler only answers a call made outside a thread's run. Idempotent: a
/// call run again after a crash continues the stored sub-prompt and runs nothing twice.
pub fn prompt_tool(prompt: &PromptDef) -> Result<AnyTool, String> {
    let name = prompt.name.clone();
    DynamicTool::new(&prompt.name, &prompt.tool_description)
        .parameters(prompt_tool_schema(prompt))
        .idempotent(true)
        .handler(move |_: Value, _| {
            let name = name.clone();
            async move {
                Err::<String, _>(ToolError::new(format!(
                    "prompt tool \"{name}\" runs only inside a thread's run, as a sub-prompt"
                )))
            }
        })
        .build()
        .map_err(|e| format!("`requiredSchema`: {e}"))
}

/// Checks the prompt tools every prompt offers; returns each problem with the prompt whose file
/// it is in. `prompts` are the prompts that loaded; `agents`, the names of the agents that did
/// (their settings are checked by [`super::agent_tools`]).
pub(super) fn check_prompt_tools(
    prompts: &BTreeMap<String, PromptDef>,
    agents: &dyn Fn(&str) -> bool,
) -> Vec<(String, String)> {
    let mut problems = Vec::new();
    // Each offered prompt's tool, built once; a bad `requiredSchema` is its own file's problem.
    let mut built: BTreeMap<&str, Option<AnyTool>> = BTreeMap::new();
    for prompt in prompts.values() {
        for offer in &prompt.tools {
            if let Some(target) = prompts.get(&offer.name) {
                built.entry(target.name.as_str()).or_insert_with(|| {
                    prompt_tool(target)
                        .map_err(|e| problems.push((target.name.clone(), e)))
                        .ok()
                });
            }
        }
    }
    for prompt in prompts.values() {
        for (i, offer) in prompt.tools.iter().enumerate() {
            if prompts
                .get(&offer.name)
                .is_some_and(|t| t.expose_as_tool == Some(false))
            {
                problems.push((
                    prompt.name.clone(),
                    format!(
                        "`tools[{i}]` offers prompt \"{}\", which says `exposeAsTool: false`",
                        offer.name
                    ),
                ));
            }
            let Some(settings) = &offer.settings else {
                continue;
            };
            let at = |field: &str| format!("`tools[{i}].{field}`");
            let Some(target) = prompts.get(&offer.name) else {
                if agents(&offer.name) {
                    continue;
                }
                problems.push((
                    prompt.name.clone(),
                    format!(
                        "`tools[{i}]` gives prompt-tool settings for \"{}\", which is not a prompt in agents/prompts/",
                        offer.name
                    ),
                ));
                continue;
            };
            let schema = prompt_tool_schema(target);
            let lacking = if target.required_schema.is_some() {
                "its `requiredSchema` has no such property"
            } else {
                "without `requiredSchema` it takes only `message`"
            };
            let property = |name: &str| schema.get("properties").and_then(|p| p.get(name));
            if let Some(name) = &settings.init_user_message_property {
                if property(name).is_none() {
                    problems.push((prompt.name.clone(), format!(
                        "{} names \"{name}\", which is not an argument of prompt tool \"{}\" ({lacking})",
                        at("initUserMessageProperty"), target.name
                    )));
                }
            }
            if let Some(name) = &settings.init_attachments_property {
                match property(name) {
                    None => problems.push((prompt.name.clone(), format!(
                        "{} names \"{name}\", which is not an argument of prompt tool \"{}\" ({lacking})",
                        at("initAttachmentsProperty"), target.name
                    ))),
                    Some(p) if p.get("type") != Some(&json!("array")) => problems.push((prompt.name.clone(), format!(
                        "{} names \"{name}\", which is not a list of attachment paths (`\"type\": \"array\"` of strings) in prompt tool \"{}\"",
                        at("initAttachmentsProperty"), target.name
                    ))),
                    Some(_) => {}
                }
            }
        }
    }
    for prompt in prompts.values() {
        let Some(chain) = too_deep(prompts, &mut vec![prompt.name.as_str()]) else {
            continue;
        };
        let shown = chain.join(" → ");
        let message = match chain.last().filter(|n| chain[..chain.len() - 1].contains(n)) {
            Some(again) => format!(
                "`tools` reaches prompt \"{again}\" again through prompt tools ({shown}): it would nest without end (prompt tools nest at most {MAX_SUBPROMPT_DEPTH} deep)"
            ),
            None => format!(
                "`tools` nests prompt tools deeper than {MAX_SUBPROMPT_DEPTH} ({shown})"
            ),
        };
        problems.push((prompt.name.clone(), message));
    }
    problems
}

/// A chain of prompt tools from the last prompt of `path` that goes past the depth limit or
/// comes back to a prompt on it (a cycle), if there is one.
fn too_deep<'a>(
    prompts: &'a BTreeMap<String, PromptDef>,
    path: &mut Vec<&'a str>,
) -> Option<Vec<&'a str>> {
    let last = prompts.get(*path.last()?)?;
    for offer in &last.tools {
        let Some((name, _)) = prompts.get_key_value(&offer.name) else {
            continue;
        };
        let cycle = path.contains(&name.as_str());
        path.push(name.as_str());
        // A cycle, or the offering prompt and MAX + 1 nested ones: one too many.
        if cycle || path.len() > MAX_SUBPROMPT_DEPTH + 1 {
            return Some(path.clone());
        }
        if let Some(chain) = too_deep(prompts, path) {
            return Some(chain);
        }
        path.pop();
    }
    None
}
