//! Middleware and tool hooks (spec 003): code of the embedding program that sees, and may
//! replace, what passes between the thread, the model and the tools.
//!
//! Middleware is registered for every agent, for one agent, or for one prompt (the spec's
//! request level). It runs agent-level first (every-agent, then the agent's), then prompt-level,
//! each in registration order; returning `None` keeps the value, a replacement passes on to the
//! next. Tool input middleware runs after validation and before the approval check, which sees
//! the changed arguments; changed arguments are validated again.
//!
//! Hooks observe a call's end: before its result is stored (and may replace it), after it
//! succeeded, after it failed. A hook that fails is logged (secrets redacted) and the original
//! data goes on.

use crate::variables::Redactor;
use serde_json::Value;
use std::sync::Arc;
use toolhost_core::ToolResult;
use toolhost_providers::{ModelRequest, ModelResponse};

/// Which call a middleware or hook sees.
#[derive(Debug, Clone)]
pub struct CallInfo {
    /// The thread.
    pub thread_id: String,
    /// The agent running it.
    pub agent: String,
    /// The prompt whose model made the call.
    pub prompt: String,
    /// The call's id.
    pub call_id: String,
    /// The tool called.
    pub tool: String,
}

/// Sees and may replace requests, responses, tool arguments and tool results. Every method
/// keeps the value by default.
pub trait Middleware: Send + Sync {
    /// Before a request goes to the model.
    fn completion_request(&self, _request: &ModelRequest) -> Option<ModelRequest> {
        None
    }
    /// After the model answered, before the reply is stored.
    fn completion_response(&self, _response: &ModelResponse) -> Option<ModelResponse> {
        None
    }
    /// Validated arguments, before the approval check and the call.
    fn tool_input(&self, _call: &CallInfo, _args: &Value) -> Option<Value> {
        None
    }
    /// A tool's result, before the hooks and before it is stored.
    fn tool_output(&self, _call: &CallInfo, _result: &ToolResult) -> Option<ToolResult> {
        None
    }
}

/// Observes the end of tool calls. An `Err` is logged and changes nothing.
pub trait ToolHooks: Send + Sync {
    /// Before the result is stored; may replace it.
    fn before_result_stored(
        &self,
        _call: &CallInfo,
        _result: &ToolResult,
    ) -> Result<Option<ToolResult>, String> {
        Ok(None)
    }
    /// After the call succeeded.
    fn after_success(&self, _call: &CallInfo, _result: &ToolResult) -> Result<(), String> {
        Ok(())
    }
    /// After the call failed.
    fn after_failure(&self, _call: &CallInfo, _result: &ToolResult) -> Result<(), String> {
        Ok(())
    }
}

/// Where a middleware applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MiddlewareScope {
    /// Every agent (agent level).
    AllAgents,
    /// One agent, by name (agent level).
    Agent(String),
    /// One prompt, by name (request level).
    Prompt(String),
}

/// The middleware that applies to one prompt of one agent, in the order it runs, and the hooks.
#[derive(Clone, Default)]
pub(super) struct Pipeline {
    middleware: Vec<Arc<dyn Middleware>>,
    hooks: Vec<Arc<dyn ToolHooks>>,
}

impl Pipeline {
    /// Picks, from everything registered, what applies to `prompt` of `agent`.
    pub fn select(
        registered: &[(MiddlewareScope, Arc<dyn Middleware>)],
        hooks: &[Arc<dyn ToolHooks>],
        agent: &str,
        prompt: &str,
    ) -> Self {
        let level = |scope: &MiddlewareScope| match scope {
            MiddlewareScope::AllAgents => Some(0),
            MiddlewareScope::Agent(a) if a == agent => Some(1),
            MiddlewareScope::Prompt(p) if p == prompt => Some(2),
            _ => None,
        };
        let mut chosen: Vec<(u8, usize, Arc<dyn Middleware>)> = registered
            .iter()
            .enumerate()
            .filter_map(|(i, (scope, m))| Some((level(scope)?, i, m.clone())))
            .collect();
        chosen.sort_by_key(|(level, i, _)| (*level, *i));
        Self {
            middleware: chosen.into_iter().map(|(_, _, m)| m).collect(),
            hooks: hooks.to_vec(),
        }
    }

    /// Whether nothing is registered (the common case costs nothing).
    pub fn is_empty(&self) -> bool {
        self.middleware.is_empty() && self.hooks.is_empty()
    }

    pub fn request(&self, request: &ModelRequest) -> Option<ModelRequest> {
        let mut current: Option<ModelRequest> = None;
        for m in &self.middleware {
            if let Some(next) = m.completion_request(current.as_ref().unwrap_or(request)) {
                current = Some(next);
            }
        }
        current
    }

    pub fn response(&self, mut response: ModelResponse) -> ModelResponse {
        for m in &self.middleware {
            if let Some(next) = m.completion_response(&response) {
                response = next;
            }
        }
        response
    }

    pub fn input(&self, call: &CallInfo, mut args: Value) -> Value {
        for m in &self.middleware {
            if let Some(next) = m.tool_input(call, &args) {
                args = next;
            }
        }
        args
    }

    /// Output middleware, then the hooks, on a result of a call that ran. A failing hook's error
    /// is logged with secret values redacted.
    pub fn output(
        &self,
        call: &CallInfo,
        mut result: ToolResult,
        redactor: &Redactor,
    ) -> ToolResult {
        for m in &self.middleware {
            if let Some(next) = m.tool_output(call, &result) {
                result = next;
            }
        }
        for hook in &self.hooks {
            match hook.before_result_stored(call, &result) {
                Ok(Some(next)) => result = next,
                Ok(None) => {}
                Err(e) => failed_hook("before_result_stored", call, &redactor.text(&e)),
            }
        }
        for hook in &self.hooks {
            let (name, outcome) = if result.is_success() {
                ("after_success", hook.after_success(call, &result))
            } else {
                ("after_failure", hook.after_failure(call, &result))
            };
            if let Err(e) = outcome {
                failed_hook(name, call, &redactor.text(&e));
            }
        }
        result
    }
}

fn failed_hook(hook: &str, call: &CallInfo, error: &str) {
    tracing::warn!(
        hook,
        tool = %call.tool,
        call_id = %call.call_id,
        "a tool hook failed; the original data goes on: {error}"
    );
}
