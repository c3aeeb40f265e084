//! How a prompt offers a tool: the entries of its `tools`. An entry is a name, or an object
//! with the name and the settings of the offer: a prompt tool's (`SubpromptConfig`, spec 001
//! §4) or an agent tool's (`SubagentToolConfig`, spec 001 §5, told apart by a field only an
//! agent tool has). Plain data read from the prompt's file; what the offered tools are and how
//! they are checked is in `prompt_tools` and `agent_tools`.

use serde::de::{Deserializer, Error as _};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The fields of an entry of `tools` that only an agent tool has: an object entry holding one
/// of them is read as a [`SubagentToolConfig`].
const AGENT_ONLY_FIELDS: [&str; 5] = [
    "blocking",
    "initAgentNameProperty",
    "immediate",
    "optional",
    "resumable",
];

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

/// How a call of an agent tool runs its sub-agent (the spec's `SubagentToolConfig`). Given as
/// an object in a prompt's `tools`; a plain name has the defaults.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubagentToolConfig {
    /// The agent offered.
    pub name: String,
    /// Whether the call waits for the child's session result (default true).
    #[serde(default = "yes")]
    pub blocking: bool,
    /// The argument whose value is the child's first message (default `message` for a first
    /// side without `requiredSchema`; otherwise the whole arguments as JSON).
    #[serde(default)]
    pub init_user_message_property: Option<String>,
    /// The variable whose value decides whether the agent is offered at all (`true`, `1` or
    /// `yes`, in any case); without it the agent is always offered.
    #[serde(default)]
    pub optional: Option<String>,
    /// Whether (and how) the runtime starts the sub-agent itself when the prompt becomes
    /// active, before the first model step; `false` or absent: only a model's call starts it.
    #[serde(default, deserialize_with = "immediate")]
    pub immediate: Option<Immediate>,
    /// The argument holding attachment paths (a list of strings) of the calling thread that
    /// are copied into the child with its first message.
    #[serde(default)]
    pub init_attachments_property: Option<String>,
    /// The argument whose value is the child's display name (its `name:` tag); without it the
    /// child is named after its agent.
    #[serde(default)]
    pub init_agent_name_property: Option<String>,
    /// Whether the agent runs as instances that live on: the prompt is offered
    /// `subagent_create` and `subagent_message` instead of a tool of the agent's name.
    #[serde(default, deserialize_with = "resumable")]
    pub resumable: Option<Resumable>,
}

/// The settings of a resumable agent (the spec's `resumable` object).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resumable {
    /// The side of the child a message from the parent goes to: `side_a` gets it as a user
    /// message, `side_b` as an assistant message (side A's voice, which side B answers).
    pub receives_messages: ReceivingSide,
    /// How many instances the calling thread may have; once it has them, `subagent_create` is
    /// no longer offered and messages go to the existing ones.
    #[serde(default, rename = "maxInstances")]
    pub max_instances: Option<u32>,
    /// Whether the child's session result reaches the parent by itself.
    #[serde(default, rename = "parentCommunication")]
    pub parent_communication: ParentCommunication,
}

/// The side of a resumable child that receives the parent's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum ReceivingSide {
    /// Side A, as a user message.
    #[serde(rename = "side_a")]
    SideA,
    /// Side B, as an assistant message.
    #[serde(rename = "side_b")]
    SideB,
}

/// How a resumable child reports to its parent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ParentCommunication {
    /// Each session result is queued to the parent when the session ends.
    #[default]
    Implicit,
    /// Only what the child's tools send with `ThreadState::notify_parent` reaches the parent.
    Explicit,
}

/// `resumable` is `false` or an object of [`Resumable`] settings.
fn resumable<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Resumable>, D::Error> {
    let value = Value::deserialize(d)?;
    match value {
        Value::Bool(false) => Ok(None),
        Value::Object(_) => serde_json::from_value(value)
            .map(Some)
            .map_err(|e| serde::de::Error::custom(format!("`resumable`: {e}"))),
        _ => Err(serde::de::Error::custom(
            "`resumable` is false, or an object with `receives_messages` (\"side_a\" or \"side_b\"), `maxInstances` and `parentCommunication` (\"implicit\" or \"explicit\")",
        )),
    }
}

/// The per-instance settings of an agent the runtime starts itself (`immediate`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Immediate {
    /// The variable whose value names the instance; it is one of the two values the child's
    /// first message (which models see) may carry.
    #[serde(default)]
    pub name_env: Option<String>,
    /// The variable whose value describes the instance; the other value the child's first
    /// message may carry.
    #[serde(default)]
    pub description_env: Option<String>,
    /// The variables whose values are copied into the child thread. They stay runtime-only:
    /// copied as secrets (never shown to a model, redacted everywhere), but for a name that
    /// `nameEnv` or `descriptionEnv` also designates.
    #[serde(default)]
    pub scoped_env: Vec<String>,
}

/// `immediate` is `true`, `false` or an object of [`Immediate`] settings.
fn immediate<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Immediate>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Given {
        Flag(bool),
        Settings(Immediate),
    }
    Ok(match Given::deserialize(d) {
        Ok(Given::Flag(true)) => Some(Immediate::default()),
        Ok(Given::Flag(false)) => None,
        Ok(Given::Settings(s)) => Some(s),
        Err(_) => {
            return Err(serde::de::Error::custom(
                "`immediate` is true, false, or an object with `nameEnv`, `descriptionEnv` and `scopedEnv`",
            ))
        }
    })
}

impl SubagentToolConfig {
    /// The defaults, for an agent offered by its name alone.
    pub fn named(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            blocking: true,
            init_user_message_property: None,
            optional: None,
            immediate: None,
            init_attachments_property: None,
            init_agent_name_property: None,
            resumable: None,
        }
    }

    /// Whether the agent is offered, given the thread's text variables: an `optional` flag
    /// must resolve to `true`, `1` or `yes`. Only text variables count: whether a secret is
    /// set would otherwise show in what a model is offered.
    pub fn is_offered(&self, texts: &BTreeMap<String, String>) -> bool {
        self.optional.as_ref().is_none_or(|flag| {
            texts.get(flag).is_some_and(|v| {
                let v = v.trim();
                ["true", "1", "yes"]
                    .iter()
                    .any(|y| v.eq_ignore_ascii_case(y))
            })
        })
    }
}
