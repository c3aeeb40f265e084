//! One `tools/call`: started on the session's thread, carried out by the runtime, and what it
//! waits for asked of the client's user where the protocol and the client allow it (a request
//! to the client under 2025-11-25, an `input_required` answer under 2026-07-28).

use super::asks::{ClientAnswerer, Way};
use super::content::blocks_of;
use super::elicit::{
    approval_form, ask, secrets_url, thread_page, values_of, variables_form, verdict_of,
    went_to_page,
};
use super::progress::LOG_LEVEL_META;
use super::question_rounds::Round;
use super::rounds::{asks_within_call, Asked, INPUT_KEY};
use super::{object_schema, progress, Answering, McpTools, SECRETS_WAIT};
use rmcp::model::{CallToolResponse, CallToolResult, InputResponses};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::ErrorData as McpError;
use serde_json::Value;
use std::sync::Arc;
use toolhost_core::AnyTool;
use toolhost_runtime::engine::{
    fit_arguments, RunOutcome, Runtime, RuntimeError, ScratchCall, Waiting,
};

/// How often a call that waits for a person's answer looks for one it could not hear of: given
/// through another process that shares a SQLite file (one given through this process, or any
/// node of a shared PostgreSQL, is heard as it commits).
const ANSWER_LOOK: std::time::Duration = std::time::Duration::from_millis(250);

/// How long a cancelled call's run may take to stop (a tool that does not heed its abort
/// signal); past it the run is dropped and the call's outcome is unknown.
const CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

impl McpTools {
    /// Runs one call on the session's thread, unless the client cancels it. `round` is what a
    /// 2026-07-28 request carries for what the tool asks (see `question_rounds`).
    pub(super) async fn call(
        &self,
        name: &str,
        arguments: Value,
        context: &RequestContext<RoleServer>,
        round: Option<Round>,
    ) -> Result<CallToolResponse, McpError> {
        let tool = self.offered_tool(name)?;
        let text = arguments.to_string();
        // Arguments that do not fit are the caller's to fix, told as a tool result.
        if let Err(e) = fit_arguments(&tool, &text) {
            return Ok(Self::error(format!(
                "the arguments do not fit tool \"{name}\": {e}"
            )));
        }
        let mut session = self.session.lock().await;
        let started = match session.as_deref() {
            Some(thread) => self.runtime().add_scratch_call(thread, name, &text).await,
            None => {
                self.runtime()
                    .start_scratch_call(&self.agent, name, &text, Vec::new())
                    .await
            }
        };
        let ScratchCall {
            thread, call_id, ..
        } = match started {
            Ok(call) => call,
            Err(e) => return Ok(Self::error(format!("the call could not start: {e}"))),
        };
        let way = Arc::new(Way::of(context, round));
        let answer = self
            .relayed(&tool, &thread.id, &call_id, context, way.clone())
            .await;
        // The session's next call goes on the same thread once this one has its result; a call
        // left waiting (or cancelled) keeps its thread to itself, and the next starts another.
        let journal = toolhost_store::AsyncStore::new(self.runtime().store().clone());
        let completed = matches!(
            journal.call(&thread.id, &call_id).await,
            Ok(Some(record)) if record.state == toolhost_store::CallState::Completed
        );
        *session = completed.then(|| thread.id.clone());
        // The tool asked what the request did not answer: its result is not the call's.
        if let (Way::Retry(round), Ok(CallToolResponse::Complete(result))) = (&*way, &answer) {
            // Failed for want of a capability: the refusal went uncaught into the error.
            let failed = result.is_error == Some(true)
                && serde_json::to_string(&result.content)
                    .is_ok_and(|content| content.contains(super::asks::UNDECLARED));
            if let Some(input_required) = self.asked_again(round, name, &arguments, failed)? {
                return Ok(input_required);
            }
        }
        answer
    }

    /// A 2026-07-28 retry of a call that answered `input_required`: takes the answer the
    /// client's user gave, then goes on with the call.
    pub(super) async fn retry(
        &self,
        state: &str,
        responses: Option<InputResponses>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(round) = self.rounds.take(state) else {
            return Ok(Self::error(
                "this server does not know the call this retry continues (it was answered already, it restarted, or the retry came too late); call the tool again".to_owned(),
            ));
        };
        let tool = self.offered_tool(&round.tool)?;
        let answer = responses
            .and_then(|r| r.get(INPUT_KEY).cloned())
            .unwrap_or(Value::Null);
        let thread = round.thread_id.as_str();
        let taken = match &round.asked {
            Asked::Approval { call_id } => match verdict_of(&answer) {
                Some(verdict) => self
                    .runtime()
                    .decide(thread, call_id, verdict)
                    .await
                    .map(|_| ())
                    .map_err(|e| format!("the decision was not taken: {e}")),
                None => Err(format!(
                    "the call waits for a person's approval; {}",
                    self.answering.approval(thread, call_id)
                )),
            },
            Asked::Variables { names } => match values_of(&answer, names) {
                Some(values) => self
                    .runtime()
                    .set_variables(thread, values)
                    .await
                    .map_err(|e| format!("the values were not taken: {e}")),
                None => Err(format!("the call waits for values of {}", names.join(", "))),
            },
            Asked::Secrets { request_id } => {
                if went_to_page(&answer) && self.given(thread, request_id, context).await {
                    Ok(())
                } else {
                    Err(format!(
                        "the call waits for secrets; {}",
                        self.answering.variables(thread, request_id)
                    ))
                }
            }
        };
        if let Err(why) = taken {
            return Ok(Self::error(why));
        }
        let way = Arc::new(Way::Unanswerable(
            "this call goes on from a retry that answered its approval or values; a question the tool asks now cannot be carried too: call the tool again",
        ));
        self.relayed(&tool, thread, &round.call_id, context, way)
            .await
    }

    /// The tool `name` when the agent offers it; a protocol error otherwise.
    pub(super) fn offered_tool(&self, name: &str) -> Result<AnyTool, McpError> {
        self.runtime()
            .tools()
            .get(name)
            .filter(|_| self.offered().iter().any(|n| n == name))
            .cloned()
            .ok_or_else(|| {
                McpError::invalid_params(
                    format!("tool \"{name}\" is not offered; see tools/list"),
                    None,
                )
            })
    }

    /// [`McpTools::carry_out`] with the call's progress and log messages passed on, all of them
    /// before the answer.
    async fn relayed(
        &self,
        tool: &AnyTool,
        thread_id: &str,
        call_id: &str,
        context: &RequestContext<RoleServer>,
        way: Arc<Way>,
    ) -> Result<CallToolResponse, McpError> {
        // A 2025-11-25 session's level; from 2026-07-28 on (where logging is deprecated,
        // SEP-2577) only a request that opts in through its `_meta` gets log messages.
        let logs_from = if super::is_stateless(context) {
            context
                .meta
                .get(LOG_LEVEL_META)
                .cloned()
                .and_then(|level| serde_json::from_value(level).ok())
        } else {
            Some(*self.log_level.lock().unwrap_or_else(|e| e.into_inner()))
        };
        let relay = progress::relay(
            &self.runtime(),
            context,
            thread_id,
            (call_id, tool.name()),
            logs_from,
        );
        // What the tool asks while it runs goes to this call's client.
        let asks = ClientAnswerer::new(context, way);
        let _answering = self
            .runtime()
            .answer_asks(thread_id, call_id, Arc::new(asks));
        let answer = self.carry_out(tool, thread_id, call_id, context).await;
        if let Some(relay) = relay {
            relay.finish().await;
        }
        answer
    }

    /// Waits (at most [`SECRETS_WAIT`], and not past the client's cancellation) until the
    /// variable request `request_id` of the thread is answered; true once it is.
    async fn given(
        &self,
        thread_id: &str,
        request_id: &str,
        context: &RequestContext<RoleServer>,
    ) -> bool {
        let store = toolhost_store::AsyncStore::new(self.runtime().store().clone());
        // Subscribed before the first read, so that no answer falls between the two.
        let mut changes = toolhost_store::ThreadChanges::new(store.blocking().as_ref(), thread_id);
        let deadline = tokio::time::Instant::now() + SECRETS_WAIT;
        while tokio::time::Instant::now() < deadline && !context.ct.is_cancelled() {
            changes.mark();
            let answered = store
                .variable_requests(thread_id)
                .await
                .is_ok_and(|requests| {
                    requests
                        .iter()
                        .any(|r| r.id == request_id && r.answered_at.is_some())
                });
            if answered {
                return true;
            }
            // An answer given through this process is heard as it commits; one given through
            // another process sharing a SQLite file is found at the next look.
            tokio::select! {
                () = changes.next(ANSWER_LOOK) => {}
                () = context.ct.cancelled() => {}
            }
        }
        false
    }

    /// Runs a started call's thread to its end, asking the client's user what it waits for
    /// where that can be done, and answers with its result or with what it waits for.
    async fn carry_out(
        &self,
        tool: &AnyTool,
        thread_id: &str,
        call_id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // The project as loaded when the call started, to its end.
        let runtime = self.runtime();
        let name = tool.name();
        let round = (thread_id, call_id, name);
        let within_call = asks_within_call(context);
        // The result comes from the run that stores it, as a value.
        let mut expected = runtime.expect_result(thread_id, call_id);
        let waiting_since = tokio::time::Instant::now();
        let outcome = loop {
            // A cancel that came before the run started: nothing starts it.
            if context.ct.is_cancelled() {
                return Err(McpError::internal_error("the call was cancelled", None));
            }
            let outcome = run_or_cancel(&runtime, thread_id, context).await?;
            // Another run owns the thread (the server resumes a thread whose variables were
            // given on its page): the call's result comes from that run, so wait for it to let
            // go (an owner in another process is looked for again every quarter second).
            if let Err(RuntimeError::ThreadBusy { .. }) = &outcome {
                if waiting_since.elapsed() < SECRETS_WAIT && !context.ct.is_cancelled() {
                    runtime
                        .until_released(thread_id, std::time::Duration::from_millis(250))
                        .await;
                    continue;
                }
            }
            let Ok(RunOutcome::Paused(waiting)) = &outcome else {
                break outcome;
            };
            match self
                .resume(&runtime, waiting, round, within_call, context)
                .await
            {
                Resume::Again => continue,
                Resume::Stay => break outcome,
                Resume::Answer(answer) => return *answer,
            }
        };
        let handed = expected.take();
        self.answer_of(tool, thread_id, call_id, outcome, handed)
            .await
    }

    /// Asks the client for what a paused run waits for (variables, a secret on the thread's
    /// page, a decision), within this call or as a round of questions, and says what the call
    /// does next.
    async fn resume(
        &self,
        runtime: &Runtime,
        waiting: &Waiting,
        round: (&str, &str, &str),
        within_call: bool,
        context: &RequestContext<RoleServer>,
    ) -> Resume {
        let (thread_id, _, name) = round;
        match waiting {
            Waiting::Variables { names, request_id } => {
                let wanted = self.wanted(names);
                if wanted.iter().any(|v| v.secret) {
                    // A secret only ever on the thread's page, never through the client.
                    let page = match self.answering {
                        Answering::Http => thread_page(context, thread_id),
                        Answering::CommandLine { .. } => None,
                    };
                    if let Some(page) = page {
                        let request = secrets_url(name, &page, request_id, names);
                        if within_call {
                            let asked = Asked::Secrets {
                                request_id: request_id.clone(),
                            };
                            return Resume::Answer(Box::new(
                                self.rounds.input_required(round, asked, request),
                            ));
                        }
                        if let Some(answer) = ask(context, request).await {
                            if went_to_page(&answer)
                                && self.given(thread_id, request_id, context).await
                            {
                                return Resume::Again;
                            }
                        }
                    }
                } else {
                    let request = variables_form(name, &wanted);
                    if within_call {
                        let asked = Asked::Variables {
                            names: names.clone(),
                        };
                        return Resume::Answer(Box::new(
                            self.rounds.input_required(round, asked, request),
                        ));
                    }
                    let values = ask(context, request)
                        .await
                        .and_then(|answer| values_of(&answer, names));
                    if let Some(values) = values {
                        if let Err(e) = runtime.set_variables(thread_id, values).await {
                            return Resume::Answer(Box::new(Ok(Self::error(format!(
                                "the values were not taken: {e}"
                            )))));
                        }
                        return Resume::Again;
                    }
                }
            }
            Waiting::Approval(request) => {
                let form = approval_form(request);
                if within_call {
                    let asked = Asked::Approval {
                        call_id: request.call_id.clone(),
                    };
                    return Resume::Answer(Box::new(
                        self.rounds.input_required(round, asked, form),
                    ));
                }
                let verdict = ask(context, form)
                    .await
                    .and_then(|answer| verdict_of(&answer));
                if let Some(verdict) = verdict {
                    if let Err(e) = self
                        .runtime()
                        .decide(thread_id, &request.call_id, verdict)
                        .await
                    {
                        return Resume::Answer(Box::new(Ok(Self::error(format!(
                            "the decision was not taken: {e}"
                        )))));
                    }
                    return Resume::Again;
                }
            }
        }
        Resume::Stay
    }

    /// What the client is answered once the call ran or stopped waiting: its result, or what
    /// it waits for and where a person gives it.
    async fn answer_of(
        &self,
        tool: &AnyTool,
        thread_id: &str,
        call_id: &str,
        outcome: Result<RunOutcome, RuntimeError>,
        handed: Option<toolhost_store::Message>,
    ) -> Result<CallToolResponse, McpError> {
        match outcome {
            Err(e) => Ok(Self::error(format!("the call failed: {e}"))),
            Ok(RunOutcome::Paused(Waiting::Approval(request))) => Ok(Self::error(format!(
                "the call of \"{}\" waits for a person's approval; {}",
                request.tool,
                self.answering.approval(thread_id, &request.call_id)
            ))),
            Ok(RunOutcome::Paused(Waiting::Variables { names, request_id })) => {
                let secrets: Vec<String> = self
                    .wanted(&names)
                    .into_iter()
                    .filter(|v| v.secret)
                    .map(|v| v.name)
                    .collect();
                let never = if secrets.is_empty() {
                    String::new()
                } else {
                    format!(
                        " ({} {} secret: a secret is never asked through an MCP client, which would see it in clear)",
                        secrets.join(", "),
                        if secrets.len() == 1 { "is a" } else { "are each a" }
                    )
                };
                Ok(Self::error(format!(
                    "the call waits for values of {}{never}; {}",
                    names.join(", "),
                    self.answering.variables(thread_id, &request_id)
                )))
            }
            Ok(RunOutcome::Done(_)) => {
                // Stored by another run (another process's, or one that took the thread
                // first): read from the thread.
                let result = match handed {
                    Some(result) => Some(result),
                    None => self.result_of(thread_id, call_id).await?,
                };
                let Some(result) = result else {
                    return Ok(Self::error(format!(
                        "the call's thread {thread_id} ended without a result"
                    )));
                };
                let text = result.content.clone().unwrap_or_default();
                let failed = result.status == Some(toolhost_store::ToolStatus::Error);
                // A tool with an output schema also gives its result as structured content,
                // beside the text copy.
                let structured = object_schema(tool.definition().output_schema.as_ref())
                    .filter(|_| !failed)
                    .and_then(|_| serde_json::from_str::<Value>(&text).ok())
                    .filter(Value::is_object);
                let store = toolhost_store::AsyncStore::new(self.runtime().store().clone());
                let content = blocks_of(&store, thread_id, &result).await;
                let mut answer = if failed {
                    CallToolResult::error(content)
                } else {
                    CallToolResult::success(content)
                };
                answer.structured_content = structured;
                Ok(answer.into())
            }
        }
    }

    /// The stored result of call `call_id` in `thread_id`, if it has one.
    async fn result_of(
        &self,
        thread_id: &str,
        call_id: &str,
    ) -> Result<Option<toolhost_store::Message>, McpError> {
        self.runtime()
            .call_result(thread_id, call_id)
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))
    }
}

/// What a call does after the client was asked what its paused run waits for.
enum Resume {
    /// Run the thread again: what it waited for was given.
    Again,
    /// Answer with the paused outcome (where the wait is answered).
    Stay,
    /// Answer with this.
    Answer(Box<Result<CallToolResponse, McpError>>),
}

/// Runs the thread until it ends or pauses; a cancel of the call stops the run while it still
/// owns the thread, and waits for it (briefly) to store the interrupted call.
async fn run_or_cancel(
    runtime: &Runtime,
    thread_id: &str,
    context: &RequestContext<RoleServer>,
) -> Result<Result<RunOutcome, RuntimeError>, McpError> {
    let run = runtime.run(thread_id);
    tokio::pin!(run);
    tokio::select! {
        // The run first: it must have claimed its thread before a stop can reach it.
        biased;
        outcome = &mut run => Ok(outcome),
        () = context.ct.cancelled() => {
            // The run is stopped while it still owns the thread, and awaited: the call
            // under way is interrupted (or, not started, answered "not run"), stored
            // with its error result, and the thread is left free. Dropping the run
            // instead would leave it `running` with an unanswered call.
            runtime.stop(thread_id).await;
            if tokio::time::timeout(CANCEL_GRACE, &mut run).await.is_err() {
                tracing::warn!(
                    thread = thread_id,
                    "a cancelled call did not stop within {} s; its run was dropped",
                    CANCEL_GRACE.as_secs()
                );
            }
            Err(McpError::internal_error("the call was cancelled", None))
        }
    }
}
