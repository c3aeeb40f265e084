//! What a project's prompts reach: the prompts and agents a prompt offers as tools, and how a
//! call of each runs. Plain functions of the loaded project (and, for the offers that depend on
//! the thread, of its text variables and its children), used to build a run's offer and to
//! check an agent before it runs.

use super::loaded::LoadedProject;
use super::offer::AgentOffer;
use super::subagent::{has_room, instance_counts, instances};
use crate::project::{AgentKind, PromptDef, SubagentToolConfig, SubpromptConfig};
use std::collections::HashMap;

impl LoadedProject {
    /// The agents `prompt` offers, by name, with what a call of each does; a sub-agent whose
    /// `optional` flag is off in `texts` (the thread's text variables) is not among them;
    /// without `texts` (checking what an agent reaches) every one is. Resumable agents are
    /// offered through `subagent_create` (those that may take one more instance, given the
    /// thread's `children`) and `subagent_message` (once the thread has an instance); without
    /// `children` both are offered for every one.
    pub(super) fn offered_subagents(
        &self,
        prompt: &crate::project::PromptDef,
        texts: Option<&std::collections::BTreeMap<String, String>>,
        children: Option<&[toolhost_store::Thread]>,
    ) -> HashMap<String, AgentOffer> {
        let mut offered = HashMap::new();
        let mut resumable = Vec::new();
        for t in &prompt.tools {
            if self.tools.contains(t) || !self.agent_tools.contains_key(&t.name) {
                continue;
            }
            let Some(agent) = self.defs.agents.get(&t.name) else {
                continue;
            };
            let offer = match agent.kind {
                AgentKind::DualAi if texts.is_some_and(|v| !t.subagent().is_offered(v)) => continue,
                AgentKind::DualAi if t.subagent().resumable.is_some() => {
                    resumable.push(t.subagent());
                    continue;
                }
                AgentKind::DualAi => AgentOffer::Sub(t.subagent()),
                AgentKind::AiHuman => AgentOffer::Handoff,
            };
            offered.insert(t.name.clone(), offer);
        }
        if resumable.is_empty() {
            return offered;
        }
        let counts = children.map(instance_counts);
        let creatable: Vec<SubagentToolConfig> = resumable
            .iter()
            .filter(|c| counts.as_ref().is_none_or(|n| has_room(c, n)))
            .cloned()
            .collect();
        if !creatable.is_empty() {
            offered.insert(
                crate::project::SUBAGENT_CREATE.to_owned(),
                AgentOffer::Create(creatable),
            );
        }
        if children.is_none_or(|c| instances(c).next().is_some()) {
            offered.insert(
                crate::project::SUBAGENT_MESSAGE.to_owned(),
                AgentOffer::Message(resumable),
            );
        }
        offered
    }
    /// Every agent `prompt` can start, whatever its flags (for checking what an agent reaches).
    pub(super) fn agents_offered(&self, prompt: &crate::project::PromptDef) -> Vec<String> {
        let mut names = Vec::new();
        for (key, offer) in self.offered_subagents(prompt, None, None) {
            match offer {
                AgentOffer::Sub(_) | AgentOffer::Handoff => names.push(key),
                AgentOffer::Create(configs) => names.extend(configs.into_iter().map(|c| c.name)),
                AgentOffer::Message(_) => {}
            }
        }
        names
    }
    /// Whether a prompt of `agent`'s sides offers a resumable agent (whose offer depends on the
    /// thread's instances).
    pub(super) fn offers_resumable(&self, agent: &crate::project::AgentDef) -> bool {
        agent
            .sides()
            .into_iter()
            .filter_map(|(_, side)| self.defs.prompts.get(&side.prompt))
            .flat_map(|p| p.tools.iter())
            .any(|t| t.agent.as_ref().is_some_and(|c| c.resumable.is_some()))
    }
    /// The settings of the prompt tools `prompt` offers, by name.
    pub(super) fn offered_subprompts(
        &self,
        prompt: &PromptDef,
    ) -> HashMap<String, SubpromptConfig> {
        prompt
            .tools
            .iter()
            .filter(|t| !self.tools.contains(t) && self.prompt_tools.contains_key(&t.name))
            .map(|t| (t.name.clone(), t.subprompt()))
            .collect()
    }
    /// The prompts `prompt` reaches as prompt tools, directly or through others, each once
    /// (the limit on nesting bounds the walk; a name that is also a tool is not followed).
    pub(super) fn reached_prompts<'a>(&'a self, prompt: &'a PromptDef) -> Vec<&'a PromptDef> {
        let mut reached: Vec<&PromptDef> = Vec::new();
        let mut next = vec![prompt];
        while let Some(p) = next.pop() {
            for offer in &p.tools {
                let Some(sub) = self.defs.prompts.get(&offer.name) else {
                    continue;
                };
                if self.tools.contains(offer) || reached.iter().any(|r| r.name == sub.name) {
                    continue;
                }
                reached.push(sub);
                next.push(sub);
            }
        }
        reached
    }
}
