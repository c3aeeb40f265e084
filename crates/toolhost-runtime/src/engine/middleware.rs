//! Middleware and tool hooks (spec 003): code of the embedding program that sees, and may
//! replace, what passes between the thread, the model and the tools.
//!
//! Middleware is registered for every agent, for one agent, or for one prompt (the spec's
//! request level). It runs agent-level first (every-agent, then the agent's), then prompt-level,
//! each in registration order. Each callback gets the arguments of spec 003's types (the value
//! as it is now, the value as the runtime made it, the session turn, the call's ids); returning
//! `Ok(None)` keeps the value, a replacement passes on to the next. Tool input middleware runs
//! after validation and before the approval check, which sees the changed arguments; changed
//! arguments are validated again.
//!
//! An `Err` from middleware is a run error ("errors thrown by middleware surface as prompt run
//! errors"): the run stops with [`super::RuntimeError::Middleware`], the thread is marked
//! failed, and nothing of the step that failed is stored as if it had gone well (a request is
//! not sent, a reply is not stored, a call whose input middleware failed is answered "not run",
//! a result whose output middleware failed is withheld).
//!
//! Hooks ([`ToolHooks`]) are observers: they see a call's end (before its result is stored,
//! and may replace it; after it succeeded; after it failed). A hook that fails is logged
//! (secrets redacted) and the original data goes on.

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
    /// The runtime's own id of the call (the spec's `internalCallId`).
    pub call_id: String,
    /// The id the model's API gave the call (the spec's `toolCallId`), when it came from a
    /// model's answer.
    pub tool_call_id: Option<String>,
    /// The tool called.
    pub tool: String,
    /// The session turn the call was made in (from 1).
    pub turn: u32,
}

/// Where a model request is: the thread, its agent and prompt, and the session turn.
#[derive(Debug, Clone)]
pub struct StepInfo {
    /// The thread.
    pub thread_id: String,
    /// The agent running it.
    pub agent: String,
    /// The prompt whose model is asked.
    pub prompt: String,
    /// The session turn (from 1).
    pub turn: u32,
}

/// What completion request middleware sees (spec 003 `CompletionRequestMiddlewareArgs`).
#[derive(Debug, Clone, Copy)]
pub struct CompletionRequestArgs<'a> {
    /// The session turn.
    pub turn: u32,
    /// The request as earlier middleware left it.
    pub request: &'a ModelRequest,
    /// The request as the runtime made it.
    pub original_request: &'a ModelRequest,
    /// Where the request is.
    pub step: &'a StepInfo,
}

/// What completion response middleware sees (spec 003 `CompletionResponseMiddlewareArgs`).
#[derive(Debug, Clone, Copy)]
pub struct CompletionResponseArgs<'a> {
    /// The session turn.
    pub turn: u32,
    /// The request that was sent.
    pub request: &'a ModelRequest,
    /// The response as earlier middleware left it.
    pub response: &'a ModelResponse,
    /// The response as the model gave it.
    pub original_response: &'a ModelResponse,
    /// Where the request is.
    pub step: &'a StepInfo,
}

/// What tool input middleware sees (spec 003 `ToolInputMiddlewareArgs`).
#[derive(Debug, Clone, Copy)]
pub struct ToolInputArgs<'a> {
    /// The tool called.
    pub tool_name: &'a str,
    /// The validated arguments as earlier middleware left them.
    pub args: &'a Value,
    /// The validated arguments of the call.
    pub original_args: &'a Value,
    /// The session turn.
    pub turn: u32,
    /// The id the model's API gave the call.
    pub tool_call_id: Option<&'a str>,
    /// The runtime's own id of the call.
    pub internal_call_id: &'a str,
    /// The call, with its thread, agent and prompt.
    pub call: &'a CallInfo,
}

/// What tool output middleware sees (spec 003 `ToolOutputMiddlewareArgs`).
#[derive(Debug, Clone, Copy)]
pub struct ToolOutputArgs<'a> {
    /// The tool called.
    pub tool_name: &'a str,
    /// The arguments the call ran with.
    pub args: &'a Value,
    /// The result as earlier middleware left it.
    pub result: &'a ToolResult,
    /// The result as the tool gave it.
    pub original_result: &'a ToolResult,
    /// The session turn.
    pub turn: u32,
    /// The id the model's API gave the call.
    pub tool_call_id: Option<&'a str>,
    /// The runtime's own id of the call.
    pub internal_call_id: &'a str,
    /// The call, with its thread, agent and prompt.
    pub call: &'a CallInfo,
}

/// A replacement output middleware gives (spec 003 `ToolOutputMiddlewareResult`).
#[derive(Debug, Clone, PartialEq)]
pub enum OutputReplacement {
    /// A text: the result keeps its status, its content becomes the text.
    Text(String),
    /// A whole result (structured content, attachments, status).
    Result(ToolResult),
}

/// An error raised by middleware; it stops the run (see the module page).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MiddlewareError(pub String);

impl<T: Into<String>> From<T> for MiddlewareError {
    fn from(text: T) -> Self {
        Self(text.into())
    }
}

/// What a middleware callback returns: `Ok(None)` keeps the value, `Ok(Some(..))` replaces it,
/// `Err` stops the run.
pub type MiddlewareResult<T> = Result<Option<T>, MiddlewareError>;

/// Sees and may replace requests, responses, tool arguments and tool results. Every method
/// keeps the value by default.
pub trait Middleware: Send + Sync {
    /// Before a request goes to the model.
    fn completion_request(
        &self,
        _args: &CompletionRequestArgs<'_>,
    ) -> MiddlewareResult<ModelRequest> {
        Ok(None)
    }
    /// After the model answered, before the reply is stored.
    fn completion_response(
        &self,
        _args: &CompletionResponseArgs<'_>,
    ) -> MiddlewareResult<ModelResponse> {
        Ok(None)
    }
    /// Validated arguments, before the approval check and the call.
    fn tool_input(&self, _args: &ToolInputArgs<'_>) -> MiddlewareResult<Value> {
        Ok(None)
    }
    /// A tool's result, before the hooks and before it is stored.
    fn tool_output(&self, _args: &ToolOutputArgs<'_>) -> MiddlewareResult<OutputReplacement> {
        Ok(None)
    }
}

/// What a hook before a call decides (catalogue AN-11).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BeforeCall {
    /// The call runs.
    Run,
    /// The call does not run; the reason is the result the model sees.
    Skip(String),
    /// The call does not run and the run stops ([`super::RuntimeError::Cancelled`]).
    Cancel(String),
}

/// What a hook after a failed call decides (catalogue AN-13).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterFailure {
    /// The failure is the result the model sees, and the run goes on.
    GoOn,
    /// The failure's result is stored, and the run stops
    /// ([`super::RuntimeError::EndedByHook`]).
    EndRun(String),
}

/// An error raised by a tool hook: logged (secrets redacted), and it changes nothing (see
/// [`ToolHooks`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookError(pub String);

impl<T: Into<String>> From<T> for HookError {
    fn from(text: T) -> Self {
        Self(text.into())
    }
}

/// Hooks at a call's start and end. Each outcome they decide is recorded on the call's result
/// ([`toolhost_store::HookOutcome`]). An `Err` is logged (secrets redacted) and changes nothing.
pub trait ToolHooks: Send + Sync {
    /// After input middleware and the approval decision, before the call runs: run it, skip it
    /// with a result, or cancel the run.
    fn before_call(&self, _call: &CallInfo, _args: &Value) -> Result<BeforeCall, HookError> {
        Ok(BeforeCall::Run)
    }
    /// Before the result is stored; may replace it.
    fn before_result_stored(
        &self,
        _call: &CallInfo,
        _result: &ToolResult,
    ) -> Result<Option<ToolResult>, HookError> {
        Ok(None)
    }
    /// After the call succeeded.
    fn after_success(&self, _call: &CallInfo, _result: &ToolResult) -> Result<(), HookError> {
        Ok(())
    }
    /// After the call failed: let the run go on, or end it.
    fn after_failure(
        &self,
        _call: &CallInfo,
        _result: &ToolResult,
    ) -> Result<AfterFailure, HookError> {
        Ok(AfterFailure::GoOn)
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

/// Which middleware callback failed, for the run error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MiddlewareStage {
    /// `completion_request`.
    Request,
    /// `completion_response`.
    Response,
    /// `tool_input`.
    ToolInput,
    /// `tool_output`.
    ToolOutput,
}

impl MiddlewareStage {
    /// The callback's name.
    pub fn as_str(self) -> &'static str {
        match self {
            MiddlewareStage::Request => "completion_request",
            MiddlewareStage::Response => "completion_response",
            MiddlewareStage::ToolInput => "tool_input",
            MiddlewareStage::ToolOutput => "tool_output",
        }
    }
}

/// The middleware that applies to one prompt of one agent, in the order it runs, and the hooks.
#[derive(Clone, Default)]
pub(super) struct Pipeline {
    middleware: Vec<Arc<dyn Middleware>>,
    hooks: Vec<Arc<dyn ToolHooks>>,
}

/// A middleware failure: the stage and the error.
pub(super) type Failed = (MiddlewareStage, MiddlewareError);

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

    /// Whether no middleware is registered (hooks may be).
    pub fn has_no_middleware(&self) -> bool {
        self.middleware.is_empty()
    }

    /// The request after request middleware, or `None` when none changed it.
    pub fn request(
        &self,
        step: &StepInfo,
        original: &ModelRequest,
    ) -> Result<Option<ModelRequest>, Failed> {
        let mut current: Option<ModelRequest> = None;
        for m in &self.middleware {
            let args = CompletionRequestArgs {
                turn: step.turn,
                request: current.as_ref().unwrap_or(original),
                original_request: original,
                step,
            };
            match m.completion_request(&args) {
                Ok(Some(next)) => current = Some(next),
                Ok(None) => {}
                Err(e) => return Err((MiddlewareStage::Request, e)),
            }
        }
        Ok(current)
    }

    /// The response after response middleware.
    pub fn response(
        &self,
        step: &StepInfo,
        request: &ModelRequest,
        original: ModelResponse,
    ) -> Result<ModelResponse, Failed> {
        let mut current: Option<ModelResponse> = None;
        for m in &self.middleware {
            let args = CompletionResponseArgs {
                turn: step.turn,
                request,
                response: current.as_ref().unwrap_or(&original),
                original_response: &original,
                step,
            };
            match m.completion_response(&args) {
                Ok(Some(next)) => current = Some(next),
                Ok(None) => {}
                Err(e) => return Err((MiddlewareStage::Response, e)),
            }
        }
        Ok(current.unwrap_or(original))
    }

    /// The arguments after input middleware.
    pub fn input(&self, call: &CallInfo, original: Value) -> Result<Value, Failed> {
        let mut current: Option<Value> = None;
        for m in &self.middleware {
            let args = ToolInputArgs {
                tool_name: &call.tool,
                args: current.as_ref().unwrap_or(&original),
                original_args: &original,
                turn: call.turn,
                tool_call_id: call.tool_call_id.as_deref(),
                internal_call_id: &call.call_id,
                call,
            };
            match m.tool_input(&args) {
                Ok(Some(next)) => current = Some(next),
                Ok(None) => {}
                Err(e) => return Err((MiddlewareStage::ToolInput, e)),
            }
        }
        Ok(current.unwrap_or(original))
    }

    /// Output middleware, then the hooks, on a result of a call that ran with `args`; with it,
    /// the reason an after-failure hook gave for ending the run. A failing hook's error is
    /// logged with secret values redacted; a failing middleware is returned.
    pub fn output(
        &self,
        call: &CallInfo,
        args: &Value,
        original: ToolResult,
        redactor: &Redactor,
    ) -> Result<(ToolResult, Option<String>), Failed> {
        let mut current: Option<ToolResult> = None;
        for m in &self.middleware {
            let now = current.as_ref().unwrap_or(&original);
            let output = ToolOutputArgs {
                tool_name: &call.tool,
                args,
                result: now,
                original_result: &original,
                turn: call.turn,
                tool_call_id: call.tool_call_id.as_deref(),
                internal_call_id: &call.call_id,
                call,
            };
            match m.tool_output(&output) {
                Ok(Some(OutputReplacement::Result(next))) => current = Some(next),
                Ok(Some(OutputReplacement::Text(text))) => {
                    let mut next = now.clone();
                    if next.is_success() {
                        next.result = Some(text);
                    } else {
                        next.error = Some(text);
                    }
                    next.content = None;
                    current = Some(next);
                }
                Ok(None) => {}
                Err(e) => return Err((MiddlewareStage::ToolOutput, e)),
            }
        }
        let mut result = current.unwrap_or(original);
        for hook in &self.hooks {
            match hook.before_result_stored(call, &result) {
                Ok(Some(next)) => result = next,
                Ok(None) => {}
                Err(e) => failed_hook("before_result_stored", call, &redactor.text(&e.0)),
            }
        }
        let mut ended = None;
        for hook in &self.hooks {
            if result.is_success() {
                if let Err(e) = hook.after_success(call, &result) {
                    failed_hook("after_success", call, &redactor.text(&e.0));
                }
                continue;
            }
            match hook.after_failure(call, &result) {
                Ok(AfterFailure::GoOn) => {}
                Ok(AfterFailure::EndRun(reason)) => {
                    ended.get_or_insert(redactor.text(&reason));
                }
                Err(e) => failed_hook("after_failure", call, &redactor.text(&e.0)),
            }
        }
        Ok((result, ended))
    }

    /// What the hooks decide before a call runs with `args`: the first that does not let it
    /// run decides. A failing hook is logged and lets it run.
    pub fn before_call(&self, call: &CallInfo, args: &Value, redactor: &Redactor) -> BeforeCall {
        for hook in &self.hooks {
            match hook.before_call(call, args) {
                Ok(BeforeCall::Run) => {}
                Ok(BeforeCall::Skip(reason)) => return BeforeCall::Skip(redactor.text(&reason)),
                Ok(BeforeCall::Cancel(reason)) => {
                    return BeforeCall::Cancel(redactor.text(&reason))
                }
                Err(e) => failed_hook("before_call", call, &redactor.text(&e.0)),
            }
        }
        BeforeCall::Run
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

/// The run error of a middleware failure, its message redacted of the thread's secrets.
pub(super) fn middleware_error(
    (stage, error): Failed,
    tool: Option<&str>,
    redactor: &Redactor,
) -> super::RuntimeError {
    super::RuntimeError::Middleware {
        stage: stage.as_str(),
        tool: tool.map(str::to_owned),
        message: redactor.text(&error.0),
    }
}

impl super::Runtime {
    /// Marks the thread failed for a middleware failure and returns the run error.
    pub(super) async fn failed_in(
        &self,
        thread_id: &str,
        owner: &super::OwnerId,
        failed: Failed,
        tool: Option<&str>,
        redactor: &Redactor,
    ) -> super::RuntimeError {
        let error = middleware_error(failed, tool, redactor);
        self.mark_failed(thread_id, owner, error).await
    }
}
