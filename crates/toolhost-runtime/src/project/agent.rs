//! Agent definitions (`agents/agents/NAME.json`): the sides, their stop rules and their
//! session bindings.

use serde::de::{Deserializer, Error as _};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use toolhost_core::variables::VariableDecl;

/// `ai_human` (one model talking to a person; the spec's default) or `dual_ai` (two sides
/// talking to each other).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum AgentKind {
    /// A model answers a person.
    #[default]
    #[serde(rename = "ai_human")]
    AiHuman,
    /// Two model sides; each sees itself as the assistant and the other as the user.
    #[serde(rename = "dual_ai")]
    DualAi,
}

/// A session binding (`sessionStop`, `sessionFail`, `sessionStatus`): the tool whose call ends
/// the session or reports on it, and which of the call's arguments carry its message and its
/// attachments. Written as the tool's name, or as `{name, messageProperty?,
/// attachmentsProperty?}`.
///
/// What a binding does (the spec names the bindings but not every detail; these are toolhost's
/// decisions, also in the README):
/// - `sessionStop`: once every call of the reply that called the tool has its result, the
///   session ends successfully (an `ai_human` session is one turn; a `dual_ai` session ends
///   before `maxSessionTurns`). The run ends with
///   [`StopReason::SessionStop`](crate::engine::StopReason::SessionStop) carrying the call's
///   `messageProperty` text and `attachmentsProperty` paths.
/// - `sessionFail`: the same, but the session ends as failed
///   ([`StopReason::SessionFail`](crate::engine::StopReason::SessionFail)) and the thread's
///   status is `failed`.
/// - `sessionStatus`: nothing ends; the latest call's `messageProperty` text is the session's
///   status ([`Runtime::session_status`](crate::engine::Runtime::session_status)).
///
/// The tool must be one the side's prompt offers, and the properties must be arguments of the
/// tool: a run whose bindings do not hold is refused before it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionBinding {
    /// The tool.
    pub name: String,
    /// The argument whose text is the session's message.
    pub message_property: Option<String>,
    /// The argument whose list of file paths is the session's attachments.
    pub attachments_property: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BindingObject {
    name: String,
    #[serde(default)]
    message_property: Option<String>,
    #[serde(default)]
    attachments_property: Option<String>,
}

impl<'de> Deserialize<'de> for SessionBinding {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let binding = match Value::deserialize(d)? {
            Value::String(name) => SessionBinding {
                name,
                message_property: None,
                attachments_property: None,
            },
            value @ Value::Object(_) => {
                let o: BindingObject = serde_json::from_value(value)
                    .map_err(|e| D::Error::custom(format!("a session binding: {e}")))?;
                SessionBinding {
                    name: o.name,
                    message_property: o.message_property,
                    attachments_property: o.attachments_property,
                }
            }
            _ => {
                return Err(D::Error::custom(
                    "a session binding is a tool name or {name, messageProperty?, attachmentsProperty?}",
                ))
            }
        };
        if binding.name.trim().is_empty() {
            return Err(D::Error::custom("a session binding names no tool"));
        }
        Ok(binding)
    }
}

/// One side of an agent.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SideDef {
    /// A label for transcripts.
    #[serde(default)]
    pub label: Option<String>,
    /// The prompt the side runs.
    pub prompt: String,
    /// A reply without tool calls ends the side's turn (default true).
    #[serde(default = "yes")]
    pub stop_on_response: bool,
    /// Calling this tool ends the side's turn.
    #[serde(default)]
    pub stop_tool: Option<String>,
    /// The most model steps in one turn.
    #[serde(default)]
    pub max_steps: Option<u32>,
    /// Calling this tool ends the session successfully (`endSessionTool` is the spec's older
    /// name for it; giving both is an error).
    #[serde(default, alias = "endSessionTool")]
    pub session_stop: Option<SessionBinding>,
    /// Calling this tool ends the session as failed (older name `failSessionTool`).
    #[serde(default, alias = "failSessionTool")]
    pub session_fail: Option<SessionBinding>,
    /// Calling this tool publishes the session's status (older name `statusTool`).
    #[serde(default, alias = "statusTool")]
    pub session_status: Option<SessionBinding>,
}

impl SideDef {
    /// The tools this side's rules name, with the field that names each: `stopTool` and the
    /// session bindings.
    pub fn named_tools(&self) -> Vec<(&'static str, &str)> {
        let mut named = Vec::new();
        if let Some(t) = &self.stop_tool {
            named.push(("stopTool", t.as_str()));
        }
        for (field, binding) in self.bindings() {
            named.push((field, binding.name.as_str()));
        }
        named
    }

    /// The session bindings it has, with their field names.
    pub fn bindings(&self) -> Vec<(&'static str, &SessionBinding)> {
        [
            ("sessionStop", &self.session_stop),
            ("sessionFail", &self.session_fail),
            ("sessionStatus", &self.session_status),
        ]
        .into_iter()
        .filter_map(|(field, b)| b.as_ref().map(|b| (field, b)))
        .collect()
    }
}

fn yes() -> bool {
    true
}

/// An agent definition (`agents/agents/NAME.json`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentDef {
    /// The agent's name (the file stem).
    #[serde(default)]
    pub name: String,
    /// ai_human (the default) or dual_ai.
    #[serde(rename = "type", default)]
    pub kind: AgentKind,
    /// A title for people (the spec keeps it as a legacy label); not used by the engine.
    #[serde(default)]
    pub title: Option<String>,
    /// A short description for people; not used by the engine.
    #[serde(default)]
    pub description: Option<String>,
    /// An icon URL or path for people; not used by the engine.
    #[serde(default)]
    pub icon: Option<String>,
    /// The first side (the only one of an ai_human agent).
    pub side_a: SideDef,
    /// The second side of a dual_ai agent.
    #[serde(default)]
    pub side_b: Option<SideDef>,
    /// Variables it declares (`variables`; spec 000's `tenvs` schema is read into it).
    #[serde(default)]
    pub variables: Vec<VariableDecl>,
    /// Variables as spec 000's `tenvs` object schema (an alias of `variables`).
    #[serde(default)]
    pub tenvs: Option<Value>,
    /// Text values it gives variables (merged prompt → agent → thread). Never secrets.
    #[serde(default)]
    pub values: BTreeMap<String, String>,
    /// The most turns of a dual_ai session, both sides' turns counted (default
    /// [`DEFAULT_MAX_SESSION_TURNS`](crate::engine::DEFAULT_MAX_SESSION_TURNS)).
    #[serde(default)]
    pub max_session_turns: Option<u32>,
}

impl AgentDef {
    /// The sides that run: side A, and side B of a `dual_ai` agent, with their field names.
    pub fn sides(&self) -> Vec<(&'static str, &SideDef)> {
        let b = self
            .side_b
            .as_ref()
            .filter(|_| self.kind == AgentKind::DualAi);
        std::iter::once(("sideA", &self.side_a))
            .chain(b.map(|b| ("sideB", b)))
            .collect()
    }
}
