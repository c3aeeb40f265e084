//! Prompt definitions (`agents/prompts/NAME.json`, the spec's camelCase field names): the
//! system text and its parts, the model, the tools offered, and what of the thread the model
//! sees.

use super::offers::ToolOffer;
use serde::de::{Deserializer, Error as _};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use toolhost_core::schema::CompiledSchema;
use toolhost_core::variables::VariableDecl;

/// How many of the most recent messages of a request carry their images when a prompt does not
/// say (`recentImageThreshold`).
pub const DEFAULT_RECENT_IMAGE_THRESHOLD: u32 = 10;

/// `toolChoice`: whether the model may, must or must not call tools.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// The model must call a tool.
    Required,
    /// The model must not call tools.
    None,
}

/// One part of a structured prompt. Any other `type`, or any other field, is an error naming
/// the part.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum PromptPart {
    /// Fixed text (`content`, the spec's name; `text` is read as the same field).
    Text {
        /// The text.
        #[serde(alias = "text")]
        content: String,
    },
    /// The system text of another prompt, by name (`prompt`). Includes are resolved when the
    /// project loads: the other prompt's parts take this part's place, its variable
    /// declarations and values join this prompt's (this prompt's own values win), and its
    /// model, tools and settings are not used. A missing prompt, a cycle, includes nested
    /// deeper than [`MAX_INCLUDE_DEPTH`](super::MAX_INCLUDE_DEPTH), and a resolved text past
    /// [`MAX_PROMPT_BYTES`](super::MAX_PROMPT_BYTES) or
    /// [`MAX_PROMPT_PARTS`](super::MAX_PROMPT_PARTS) are errors.
    Include {
        /// The prompt whose text is put here.
        prompt: String,
    },
    /// The value of a text variable the prompt declares (`name`), or nothing when it has none.
    Env {
        /// The variable.
        name: String,
    },
}

/// Reads `prompt`: a string, or a list of parts.
fn prompt_parts<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<PromptPart>, D::Error> {
    match Value::deserialize(d)? {
        Value::String(text) => Ok(vec![PromptPart::Text { content: text }]),
        Value::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(i, item)| {
                serde_json::from_value(item)
                    .map_err(|e| D::Error::custom(format!("`prompt` part {i}: {e}")))
            })
            .collect(),
        _ => Err(D::Error::custom(
            "`prompt` is a string or a list of parts ({\"type\": \"text\" | \"include\" | \"env\", ...})",
        )),
    }
}

fn recent_image_threshold() -> u32 {
    DEFAULT_RECENT_IMAGE_THRESHOLD
}

/// A prompt definition (`agents/prompts/NAME.json`).
///
/// What the model sees of the thread (the spec gives the fields and their defaults; the rest
/// is toolhost's decision, also in the README). A *turn* is the side's work on what it
/// answers: in an `ai_human` thread everything since the person's latest message(s), in a
/// `dual_ai` thread everything since the side's own previous turn (so the other side's replies
/// that it answers are in it), together with the message that started the session (its task).
/// - `includeChat: false` (the default): the system text and the current turn only.
/// - `includeChat: true`: the whole conversation. With `includePastTools: false` (the
///   default) the tool calls and results of earlier turns are left out (a reply's text stays);
///   with `includePastTools: true` they are shown too.
/// - `includePastTools: true` without `includeChat: true` is refused: there would be no
///   earlier turn for it to show.
/// - The calls and results of the current turn are always shown: the model needs them to go
///   on.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PromptDef {
    /// The prompt's name (the file stem).
    #[serde(default)]
    pub name: String,
    /// How the prompt describes itself when used as a tool.
    pub tool_description: String,
    /// The system text: a string, or parts (see [`PromptPart`]); after loading, includes are
    /// resolved and only `text` and `env` parts remain.
    #[serde(deserialize_with = "prompt_parts")]
    pub prompt: Vec<PromptPart>,
    /// The model definition it uses.
    pub model: String,
    /// The tools it offers: names of tools or of prompts (a prompt offered is a prompt tool,
    /// see [`super::SubpromptConfig`]), or a prompt tool's settings.
    #[serde(default, deserialize_with = "super::offers::tool_offers")]
    pub tools: Vec<ToolOffer>,
    /// The arguments it takes when offered as a tool (`requiredSchema`); without it, one
    /// `message` string.
    #[serde(default)]
    pub required_schema: Option<Value>,
    /// Whether it may be offered as a tool (`exposeAsTool`, default true); offering a prompt
    /// that says false is an error naming the offering prompt.
    #[serde(default)]
    pub expose_as_tool: Option<bool>,
    /// Show the whole conversation, not only the current turn (default false).
    #[serde(default)]
    pub include_chat: bool,
    /// With `includeChat`, also show the tool calls and results of earlier turns (default
    /// false).
    #[serde(default)]
    pub include_past_tools: bool,
    /// Run a reply's tool calls in parallel (default false).
    #[serde(default)]
    pub parallel_tool_calls: bool,
    /// auto, required or none.
    #[serde(default)]
    pub tool_choice: ToolChoice,
    /// The JSON Schema of the prompt's final output (spec 004). With it, each step asks the
    /// model for one combined reply `{meta, output, calls}` as structured output instead of
    /// native tool calls, and the run ends with the `output` once one is given (see the
    /// engine's `combined` module).
    #[serde(default)]
    pub output: Option<Value>,
    /// The most model steps in one turn.
    #[serde(default)]
    pub max_steps: Option<u32>,
    /// Images are sent with the most recent this many messages of a request only (default
    /// 10); an older message's images are replaced by a line naming them. 0 sends none.
    #[serde(default = "recent_image_threshold")]
    pub recent_image_threshold: u32,
    /// Variables it declares (`variables`; spec 000's `tenvs` schema is read into it).
    #[serde(default)]
    pub variables: Vec<VariableDecl>,
    /// Variables as spec 000's `tenvs` object schema (an alias of `variables`).
    #[serde(default)]
    pub tenvs: Option<Value>,
    /// Text values it gives variables (merged prompt → agent → thread). Never secrets.
    #[serde(default)]
    pub values: BTreeMap<String, String>,
}

impl PromptDef {
    /// The system text, with parts joined by blank lines; an `env` part is replaced by that
    /// text variable's value, or by nothing when it has none.
    pub fn system_text(&self, texts: &BTreeMap<String, String>) -> String {
        self.prompt
            .iter()
            .filter_map(|p| match p {
                PromptPart::Text { content } => Some(content.clone()),
                PromptPart::Env { name } => texts.get(name).cloned(),
                // Resolved when the project loads; never left in a loaded prompt.
                PromptPart::Include { .. } => None,
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// The variables named by its `env` parts.
    pub fn env_parts(&self) -> Vec<String> {
        self.prompt
            .iter()
            .filter_map(|p| match p {
                PromptPart::Env { name } => Some(name.clone()),
                _ => None,
            })
            .collect()
    }

    /// The prompts its `include` parts name.
    pub fn includes(&self) -> Vec<&str> {
        self.prompt
            .iter()
            .filter_map(|p| match p {
                PromptPart::Include { prompt } => Some(prompt.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Refuses settings that would do nothing.
    pub(super) fn check_settings(&self) -> Result<(), String> {
        if self.include_past_tools && !self.include_chat {
            return Err("`includePastTools: true` needs `includeChat: true`: without the conversation there is no earlier turn whose tool calls it could show".to_owned());
        }
        if let Some(output) = &self.output {
            if !output.is_object() {
                return Err("`output` is the JSON Schema of the final output: an object".to_owned());
            }
            CompiledSchema::compile(output.clone()).map_err(|issue| {
                format!(
                    "`output` at {}: {} (it is the JSON Schema of the final output)",
                    issue.pointer, issue.reason
                )
            })?;
        }
        Ok(())
    }
}
