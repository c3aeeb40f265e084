//! The scripted `test` model: replays assistant turns from a script.
//!
//! A script is a JSON array of turns, or JSON Lines with one turn per line:
//! ```json
//! [{"toolCalls": [{"name": "get_weather", "arguments": {"location": "Oslo"}}]},
//!  {"toolCalls": [{"name": "append_line", "arguments": {"text": "x"}}], "times": 3},
//!  {"text": "It is sunny in Oslo."}]
//! ```
//! `times` repeats a turn. `arguments` may be an object or a string (sent as it is, for testing
//! how broken arguments are handled).
//!
//! For a prompt with an `output` schema (spec 004's combined request), a turn gives its
//! structured reply as `reply`, the document itself:
//! `{"reply": {"meta": {}, "output": null, "calls": [{"_tool": "get_weather", "location": "Oslo"}]}}`.
//! A `reply` turn answers only a request that asks for a structured reply, and such a request
//! only a `reply` turn (or a `text` turn, sent as it is).
//!
//! The turn to play is the number of assistant messages already in the conversation, so a
//! thread that restarts after a crash gets the same turn again, and the model keeps no state.
//! A turn that calls a tool which was not offered is refused, naming the turn and the tool.

use crate::model::{
    FinishReason, Model, ModelFuture, ModelRequest, ModelResponse, ModelToolCall, Usage,
};
use crate::{ChatRole, ModelApi, ModelError, ModelErrorKind};
use serde::Deserialize;
use serde_json::Value;
// Scripted arguments are read exactly, as a real model's are.
use toolhost_core::exact;

/// One scripted assistant turn.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptedTurn {
    /// Reply text.
    #[serde(default)]
    pub text: Option<String>,
    /// Tool calls, in order.
    #[serde(default, alias = "tool_calls")]
    pub tool_calls: Vec<ScriptedCall>,
    /// A structured reply (spec 004's `{meta, output, calls}`), alone in its turn.
    #[serde(default)]
    pub reply: Option<Value>,
    /// How many times the turn is played (default 1).
    #[serde(default)]
    pub times: Option<usize>,
}

/// One scripted tool call.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    /// The tool.
    pub name: String,
    /// The arguments: an object, or text sent as it is.
    #[serde(default)]
    pub arguments: Value,
}

/// A script that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("script {source_name}: {reason}")]
pub struct ScriptError {
    /// The script's file name (or another label).
    pub source_name: String,
    /// What is wrong, with the line or turn number.
    pub reason: String,
}

/// A model that plays a script.
#[derive(Debug, Clone)]
pub struct ScriptedModel {
    name: String,
    turns: Vec<ScriptedTurn>,
}

impl ScriptedModel {
    /// A model playing these turns (`times` already expanded or not).
    pub fn new(name: impl Into<String>, turns: Vec<ScriptedTurn>) -> Self {
        let turns = turns
            .into_iter()
            .flat_map(|t| {
                let n = t.times.unwrap_or(1);
                std::iter::repeat_n(ScriptedTurn { times: None, ..t }, n)
            })
            .collect();
        Self {
            name: name.into(),
            turns,
        }
    }

    /// Reads a script: a JSON array of turns, or JSON Lines (blank lines ignored).
    pub fn parse(
        name: impl Into<String>,
        source_name: &str,
        text: &str,
    ) -> Result<Self, ScriptError> {
        let fail = |reason: String| ScriptError {
            source_name: source_name.to_owned(),
            reason,
        };
        let turns: Vec<ScriptedTurn> = if text.trim_start().starts_with('[') {
            exact::from_str(text).map_err(|e| fail(format!("not a JSON array of turns: {e}")))?
        } else {
            text.lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
                .map(|(i, l)| exact::from_str(l).map_err(|e| fail(format!("line {}: {e}", i + 1))))
                .collect::<Result<_, _>>()?
        };
        if turns.is_empty() {
            return Err(fail("the script has no turns".to_owned()));
        }
        for (i, t) in turns.iter().enumerate() {
            if t.text.is_none() && t.tool_calls.is_empty() && t.reply.is_none() {
                return Err(fail(format!(
                    "turn {} has neither text, tool calls nor a reply",
                    i + 1
                )));
            }
            if t.reply.is_some() && (t.text.is_some() || !t.tool_calls.is_empty()) {
                return Err(fail(format!(
                    "turn {} has a `reply` beside text or tool calls; a structured reply is the whole turn",
                    i + 1
                )));
            }
            if t.times == Some(0) {
                return Err(fail(format!("turn {} has `times: 0`", i + 1)));
            }
        }
        Ok(Self::new(name, turns))
    }

    /// How many turns the script plays in all.
    pub fn len(&self) -> usize {
        self.turns.len()
    }

    /// Whether the script is empty.
    pub fn is_empty(&self) -> bool {
        self.turns.is_empty()
    }

    fn respond(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let index = request
            .messages
            .iter()
            .filter(|m| m.role == ChatRole::Assistant)
            .count();
        let script_error =
            |message: String| ModelError::new(ModelApi::Scripted, ModelErrorKind::Script, message);
        let turn = self.turns.get(index).ok_or_else(|| {
            script_error(format!(
                "the script of {} has {} turns and turn {} was asked for",
                self.name,
                self.turns.len(),
                index + 1
            ))
        })?;
        match (&turn.reply, &request.response_format) {
            (Some(reply), Some(_)) => {
                return Ok(ModelResponse {
                    text: Some(reply.to_string()),
                    ..ModelResponse::default()
                })
            }
            (Some(_), None) => {
                return Err(script_error(format!(
                    "script turn {} gives a structured `reply`, but the request asks for none (the prompt declares no `output`)",
                    index + 1
                )))
            }
            (None, Some(_)) if turn.text.is_none() => {
                return Err(script_error(format!(
                    "script turn {} makes tool calls, but the request asks for a structured reply (the prompt declares an `output`): give the turn as `reply`",
                    index + 1
                )))
            }
            _ => {}
        }
        let offered: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        let mut calls = Vec::new();
        for (i, call) in turn.tool_calls.iter().enumerate() {
            if !offered.contains(&call.name.as_str()) {
                return Err(script_error(format!(
                    "script turn {} calls tool `{}`, which was not offered (offered: {})",
                    index + 1,
                    call.name,
                    if offered.is_empty() {
                        "none".to_owned()
                    } else {
                        offered.join(", ")
                    }
                )));
            }
            let arguments = match &call.arguments {
                Value::String(raw) => raw.clone(),
                Value::Null => "{}".to_owned(),
                other => other.to_string(),
            };
            calls.push(ModelToolCall {
                id: format!("script_{}_{}", index + 1, i + 1),
                name: call.name.clone(),
                arguments,
            });
        }
        Ok(ModelResponse {
            text: turn.text.clone(),
            finish: if calls.is_empty() {
                FinishReason::Stop
            } else {
                FinishReason::ToolCalls
            },
            tool_calls: calls,
            usage: Usage::default(),
            ..ModelResponse::default()
        })
    }
}

impl Model for ScriptedModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn complete<'a>(&'a self, request: &'a ModelRequest) -> ModelFuture<'a> {
        let response = self.respond(request);
        Box::pin(async move { response })
    }
}
