//! Agents offered as tools (spec 001 §5): an entry of a prompt's `tools` that names an agent
//! makes that agent a tool. A call of a `dual_ai` agent runs it as a sub-agent in a child
//! thread; a call of an `ai_human` agent hands the thread over to it (a handoff).
//! The entry's `SubagentToolConfig` settings say how the call waits and how its arguments
//! become the child's first message.
//!
//! What is offered: the agent's name, its `description` as the tool's, and as arguments the
//! `requiredSchema` of its first side's prompt (the side that answers the first message) or a
//! default taking a `message`.

use super::agent::{AgentDef, AgentKind};
use super::offers::{ReceivingSide, SubagentToolConfig};
use super::prompt::PromptDef;
use super::prompt_tools::prompt_tool_schema;
use serde_json::Value;
use std::collections::BTreeMap;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::{AnyTool, SchemaError};

/// How deep sub-agents nest: a thread's child is at depth 1, its grandchild at depth 2.
pub const MAX_SUBAGENT_DEPTH: usize = 4;

/// The tool a prompt that offers resumable agents gets to start an instance of one.
pub const SUBAGENT_CREATE: &str = "subagent_create";

/// The tool a prompt that offers resumable agents gets to send a message to an instance.
pub const SUBAGENT_MESSAGE: &str = "subagent_message";

/// The tool an agent is when a prompt offers it; `first` is the prompt of its first side. The
/// engine runs its calls as sub-agents; the handler only answers a call made outside a
/// thread's run. Idempotent: a call run again after a crash finds the child it started.
/// A `requiredSchema` outside the schema subset is the error.
pub fn agent_tool(agent: &AgentDef, first: &PromptDef) -> Result<AnyTool, SchemaError> {
    let name = agent.name.clone();
    let description = agent
        .description
        .clone()
        .unwrap_or_else(|| format!("Runs the agent \"{name}\" and returns its result."));
    let mut tool = DynamicTool::new(&agent.name, &description);
    // An agent whose first prompt declares its final `output` (spec 004) answers with it: its
    // callers (a parent's model, MCP clients) are told its shape.
    if let Some(output) = &first.output {
        tool = tool.output_schema(output.clone());
    }
    tool.parameters(prompt_tool_schema(first))
        .idempotent(true)
        .handler(move |_: Value, _| {
            let name = name.clone();
            async move {
                Err::<String, _>(ToolError::new(format!(
                    "agent tool \"{name}\" runs only inside a thread's run, as a sub-agent"
                )))
            }
        })
        .build()
}

/// Checks the agents every prompt offers; returns each problem with the prompt whose file it
/// is in: settings given for an `ai_human` agent (a handoff, which takes none), an
/// `initUserMessageProperty` the agent tool's arguments lack, and a name that is both an agent
/// and a prompt.
pub(super) fn check_agent_tools(
    prompts: &BTreeMap<String, PromptDef>,
    agents: &BTreeMap<String, AgentDef>,
) -> Vec<(String, String)> {
    let mut problems = Vec::new();
    for prompt in prompts.values() {
        for (i, offer) in prompt.tools.iter().enumerate() {
            let Some(agent) = agents.get(&offer.name) else {
                if offer.agent.is_some() {
                    problems.push((prompt.name.clone(), format!(
                        "`tools[{i}]` gives agent-tool settings for \"{}\", which is not an agent in agents/agents/",
                        offer.name
                    )));
                }
                continue;
            };
            let mut problem = |message: String| problems.push((prompt.name.clone(), message));
            if prompts.contains_key(&offer.name) {
                problem(format!(
                    "`tools[{i}]` offers \"{}\", which names both an agent and a prompt; rename one of them",
                    offer.name
                ));
                continue;
            }
            // An ai_human agent is a handoff, which takes no settings.
            if agent.kind == AgentKind::AiHuman {
                if offer.settings.is_some() || offer.agent.is_some() {
                    problem(format!(
                        "`tools[{i}]` gives settings for the ai_human agent \"{}\": offering it hands the thread over, which takes none (name it alone)",
                        offer.name
                    ));
                }
                continue;
            }
            if offer.has_prompt_only_settings() {
                problem(format!(
                    "`tools[{i}]` gives prompt-tool settings for agent \"{}\": an agent's are `blocking`, `immediate`, `initUserMessageProperty`, `initAttachmentsProperty`, `initAgentNameProperty`, `optional` and `resumable`",
                    offer.name
                ));
                continue;
            }
            let config = offer.subagent();
            if config.resumable.is_some() && config.immediate.is_some() {
                problem(format!(
                    "`tools[{i}]`: agent \"{}\" is both `resumable` and `immediate`; toolhost starts resumable instances only through `subagent_create`",
                    offer.name
                ));
                continue;
            }
            if config.resumable.is_some() && config.init_agent_name_property.is_some() {
                problem(format!(
                    "`tools[{i}].initAgentNameProperty`: a resumable agent's instances are named by `subagent_create`'s `name` argument",
                ));
                continue;
            }
            if config
                .resumable
                .as_ref()
                .is_some_and(|r| r.max_instances == Some(0))
            {
                problem(format!(
                    "`tools[{i}].resumable.maxInstances` is 0: no instance of \"{}\" could ever start",
                    offer.name
                ));
                continue;
            }
            if let Some(r) = &config.resumable {
                if r.receives_messages == ReceivingSide::SideB && agent.side_b.is_none() {
                    problem(format!(
                        "`tools[{i}].resumable.receives_messages` is \"side_b\", but agent \"{}\" has no side B",
                        offer.name
                    ));
                    continue;
                }
                let clash = [SUBAGENT_CREATE, SUBAGENT_MESSAGE]
                    .into_iter()
                    .find(|name| prompt.tools.iter().any(|t| t.name == *name));
                if let Some(name) = clash {
                    problem(format!(
                        "`tools[{i}]`: agent \"{}\" is resumable, so the prompt is given the tool \"{name}\", which it also names; rename that tool",
                        offer.name
                    ));
                    continue;
                }
            }
            for message in argument_problems(i, &offer.name, agent, &config, prompts) {
                problem(message);
            }
        }
    }
    problems
}

/// What is wrong with the argument settings of the agent tool `name` (offered at `tools[i]`,
/// for `agent` with `config`): an `immediate` agent that takes arguments, and `init*Property`
/// settings that name no argument of the tool.
fn argument_problems(
    i: usize,
    name: &str,
    agent: &AgentDef,
    config: &SubagentToolConfig,
    prompts: &BTreeMap<String, PromptDef>,
) -> Vec<String> {
    let mut problems = Vec::new();
    if config.immediate.is_some() {
        let required = prompts
            .get(&agent.side_a.prompt)
            .and_then(|p| p.required_schema.as_ref())
            .and_then(|schema| schema.get("required"))
            .and_then(Value::as_array)
            .is_some_and(|names| !names.is_empty());
        if required {
            problems.push(format!(
                "`tools[{i}].immediate`: agent \"{}\" takes arguments (its first side's prompt has a `requiredSchema`), but a sub-agent started before the first model step gets only a message; offer it without `immediate` or drop its `requiredSchema`",
                name
            ));
        }
    }
    // The arguments are the receiving side's (a resumable agent's) or side A's.
    let receiving = match config.resumable.as_ref().map(|r| r.receives_messages) {
        Some(ReceivingSide::SideB) => agent.side_b.as_ref().unwrap_or(&agent.side_a),
        _ => &agent.side_a,
    };
    let Some(first) = prompts.get(&receiving.prompt) else {
        return problems;
    };
    let schema = prompt_tool_schema(first);
    let properties = [
        (
            "initUserMessageProperty",
            &config.init_user_message_property,
        ),
        ("initAttachmentsProperty", &config.init_attachments_property),
        ("initAgentNameProperty", &config.init_agent_name_property),
    ];
    for (field, property) in properties {
        let Some(property) = property else { continue };
        if schema
            .get("properties")
            .and_then(|p| p.get(property))
            .is_none()
        {
            problems.push(format!(
                "`tools[{i}].{field}` names \"{property}\", which is not an argument of agent tool \"{}\" (the arguments are its receiving side's prompt's `requiredSchema`, or only `message`)",
                name
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_agent_whose_first_prompt_declares_its_output_says_so_as_a_tool() {
        let agent: AgentDef =
            serde_json::from_value(json!({"type": "ai_human", "sideA": {"prompt": "r"}})).unwrap();
        let output = json!({"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]});
        let mut prompt: PromptDef = serde_json::from_value(
            json!({"toolDescription": "x", "prompt": "y", "model": "m", "output": output}),
        )
        .unwrap();
        let tool = agent_tool(&agent, &prompt).unwrap();
        assert_eq!(tool.definition().output_schema.as_ref(), Some(&output));
        prompt.output = None;
        let tool = agent_tool(&agent, &prompt).unwrap();
        assert_eq!(tool.definition().output_schema, None);
    }
}
