//! What each side of a thread runs with during a run ([`SideRun`]): its rules, its prompt's
//! model and offered tools (agents and prompts offered as tools, the lifecycle tools of
//! resumable agents), and the conversation it sees, built from the stored history.

use super::combined::Combined;
use super::context::{Context, Turn};
use super::history::ChatView;
use super::images::{ImageBudget, Shown};
use super::middleware::Pipeline;
use super::offer::Offer;
use super::turns::Side;
use super::work_state::WorkState;
use super::{Runtime, RuntimeError};
use crate::project::{SideDef, ToolChoice, DEFAULT_MAX_STEPS};
use std::collections::BTreeMap;
use std::sync::Arc;
use toolhost_core::ToolSet;
use toolhost_providers::{HistoryRepair, Model, ModelRequest, ToolChoice as WireToolChoice};
use toolhost_store::{Message, Thread};

/// What one side runs with: its rules, its prompt's model and tools, and the conversation it
/// sees, which grows as the thread does.
pub(super) struct SideRun<'a> {
    /// The side's definition (its turn rules).
    pub def: &'a SideDef,
    /// The agent the thread runs.
    pub agent: String,
    pub model: Arc<dyn Model>,
    pub offer: Offer,
    /// The side's step budget for one turn.
    pub max_steps: u32,
    pub view: ChatView,
    pub images: ImageBudget,
    pub request: ModelRequest,
    /// How many leading messages of `request` passed the ordering check with every call
    /// answered: only what was appended since is checked again.
    pub checked: usize,
    /// The repairs the last request needed, so a fault that stays is recorded once per run.
    pub last_repairs: Vec<HistoryRepair>,
    /// What of earlier turns the side's prompt shows.
    pub context: Context,
    /// The prompt's `recentImageThreshold`.
    pub recent_images: usize,
    /// How steps are asked and read when the prompt declares an `output` (spec 004's
    /// combined request); `None` for native tool calls.
    pub combined: Option<Combined>,
    /// In spec 004's mode: the thread's state document, kept up to date as messages are
    /// stored (see [`WorkState`]).
    pub state: Option<WorkState>,
}

impl SideRun<'_> {
    /// Takes a stored message into the state document (in spec 004's mode): every message of
    /// the thread, in order, whether or not this side's model sees it.
    pub fn record_state(&mut self, m: &Message) {
        if let Some(state) = &mut self.state {
            state.record(m);
        }
    }

    /// Adds a stored message, with what it shows, to what this side's model will be sent.
    pub fn see(&mut self, m: &Message, shown: impl FnOnce() -> Shown) {
        self.offer.learn_wire_ids(m);
        if let Some(message) = self.view.see(m) {
            self.images
                .push(&mut self.request.messages, message, shown());
        }
    }
}

/// Where `side`'s run is: side `b` is the second entry; a thread with one side has only `a`.
pub(super) fn index_of(sides: &[SideRun<'_>], side: Side) -> usize {
    match side {
        Side::B if sides.len() > 1 => 1,
        _ => 0,
    }
}

/// What `side` runs with.
pub(super) fn run_of<'s, 'a>(sides: &'s [SideRun<'a>], side: Side) -> &'s SideRun<'a> {
    &sides[index_of(sides, side)]
}

impl Runtime {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn side_run<'a>(
        &self,
        agent: &str,
        def: &'a SideDef,
        side: Option<Side>,
        history: &[Message],
        shown: &[Shown],
        texts: &BTreeMap<String, String>,
        children: Option<&[Thread]>,
        turn: Turn,
        thread_model: Option<&str>,
    ) -> Result<SideRun<'a>, RuntimeError> {
        let prompt =
            self.project
                .defs
                .prompts
                .get(&def.prompt)
                .ok_or_else(|| RuntimeError::Model {
                    name: def.prompt.clone(),
                    reason: "the agent's prompt did not load".to_owned(),
                })?;
        let model = self.model_for(&prompt.model, thread_model)?;
        // A name is a tool, else a prompt offered as a tool (a name that is both is refused
        // before a run starts).
        // An agent offered under an `optional` flag that is off is not offered at all.
        let subagents = self
            .project
            .offered_subagents(prompt, Some(texts), children);
        let mut offered = ToolSet::from_tools(
            prompt
                .tools
                .iter()
                .filter(|n| !self.project.withheld(n, &subagents))
                .filter_map(|name| {
                    self.project
                        .tools
                        .get(name)
                        .or_else(|| self.project.prompt_tools.get(&name.name))
                        .or_else(|| self.project.agent_tools.get(&name.name))
                        .cloned()
                }),
        );
        offered.add_many(
            self.project
                .lifecycle_tools(&subagents, children.unwrap_or_default()),
        );
        let subprompts = self.project.offered_subprompts(prompt);
        let definitions = offered.definitions();
        let combined = match &prompt.output {
            Some(output) => Some(
                Combined::new(
                    &definitions,
                    output,
                    self.project.fixed_output_paths(&definitions),
                )
                .map_err(|reason| RuntimeError::Model {
                    name: prompt.name.clone(),
                    reason: format!("the prompt's `output` schema does not compile: {reason}"),
                })?,
            ),
            None => None,
        };
        let mut run = SideRun {
            def,
            agent: agent.to_owned(),
            model,
            max_steps: prompt
                .max_steps
                .or(def.max_steps)
                .unwrap_or(DEFAULT_MAX_STEPS),
            view: ChatView::new(side, prompt.output.is_some()),
            images: ImageBudget::new(prompt.recent_image_threshold as usize),
            context: Context::of(prompt),
            recent_images: prompt.recent_image_threshold as usize,
            checked: 0,
            last_repairs: Vec::new(),
            request: ModelRequest {
                messages: ChatView::system(&prompt.system_text(texts))
                    .into_iter()
                    .collect(),
                // In spec 004's mode the tools are offered inside the combined request.
                tools: match combined {
                    Some(_) => Vec::new(),
                    None => definitions,
                },
                tool_choice: combined.is_none().then_some(match prompt.tool_choice {
                    ToolChoice::Auto => WireToolChoice::Auto,
                    ToolChoice::Required => WireToolChoice::Required,
                    ToolChoice::None => WireToolChoice::None,
                }),
                parallel_tool_calls: Some(prompt.parallel_tool_calls),
                response_format: combined.as_ref().map(|c| c.format().clone()),
            },
            state: combined.as_ref().map(|_| WorkState::default()),
            combined,
            offer: Offer {
                tools: Arc::new(offered),
                parallel: prompt.parallel_tool_calls,
                pipeline: Arc::new(Pipeline::select(
                    &self.services.middleware,
                    &self.services.hooks,
                    agent,
                    &prompt.name,
                )),
                prompt: prompt.name.clone(),
                subprompts: Arc::new(subprompts),
                subagents: Arc::new(subagents),
                nest: None,
                wire_ids: Arc::default(),
            },
        };
        for m in history {
            run.record_state(m);
        }
        for (i, (m, shown)) in history.iter().zip(shown).enumerate() {
            if turn.holds(i) {
                run.see(m, || shown.clone());
            } else if let Some(m) = run.context.earlier(m) {
                run.see(&m, || shown.clone());
            }
        }
        Ok(run)
    }
}
