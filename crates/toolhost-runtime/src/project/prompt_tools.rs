//! Prompts offered as tools (spec 001 §4): an entry of a prompt's `tools` that names another
//! prompt makes that prompt a tool (its name, its `toolDescription`, its `requiredSchema` or a
//! default taking a `message`), and the entry's `SubpromptConfig` settings say what the call
//! returns and how its arguments become the sub-prompt's first message.
//!
//! Checked when the project loads, each refusal naming the file and the field: a
//! `requiredSchema` outside the schema subset, an `init…Property` the prompt tool's arguments
//! lack, settings given for something that is not a prompt, and prompt tools nested deeper than
//! [`MAX_SUBPROMPT_DEPTH`] (a cycle, such as a prompt offering itself, always is).

use super::prompt::PromptDef;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::{AnyTool, SchemaError};

/// How deep prompt tools may nest: a prompt's prompt tool is at depth 1, a prompt tool it
/// offers at depth 2, and so on.
pub const MAX_SUBPROMPT_DEPTH: usize = 4;

/// The argument a prompt tool without `requiredSchema` takes: the sub-prompt's first message.
pub const DEFAULT_MESSAGE_PROPERTY: &str = "message";

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
/// A `requiredSchema` outside the schema subset is the error.
pub fn prompt_tool(prompt: &PromptDef) -> Result<AnyTool, SchemaError> {
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
                        .map_err(|e| {
                            problems.push((target.name.clone(), format!("`requiredSchema`: {e}")))
                        })
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
