//! Approvals: a call whose tool's policy asks for one runs only after a decision that is bound to
//! the call id, the hash of its canonical arguments and the fingerprint of the tool (its
//! definition and, for a project tool, the process activity behind it; see [`super::fingerprint`]).
//!
//! The arguments a person is shown are the ones the decision is bound to: a decision is refused
//! when they do not hash to the call's recorded hash (the stored request was changed), and a
//! call whose arguments differ from the ones approved does not run.
//!
//! A decision comes from a handler the embedding program installed, from an "always" decision
//! made earlier in the thread for the same tool, or from a person through
//! [`super::Runtime::decide`]. With none of them the thread pauses durably at the call: the calls before
//! it are done, the ones after it wait, and the request survives a restart.

use super::events::{ApprovalDecided, ApprovalRequested, ThreadEvent};
use super::fingerprint::fingerprint;
use super::loaded::LoadedProject;
use super::plan::Gate;
use super::request::RunRequest;
use super::stop::Stop;
use super::verdict::{ApprovalHandler, Verdict};
use super::RuntimeError;
use crate::variables::Redactor;
use serde_json::Value;
use std::sync::Arc;
use toolhost_core::approval::{rejection_text, ApprovalContext, ApprovalPolicy};
use toolhost_core::canonical::canonical_hash;
use toolhost_core::AnyTool;
use toolhost_store::{
    ApprovalDecision, ApprovalRecord, ApprovalRequest, AsyncStore, StoreError, Write,
};

/// The fingerprint of a tool's definition alone: what the model was shown and what was
/// validated. The runtime binds decisions on a project tool to the activity behind it as well.
pub fn tool_fingerprint(tool: &AnyTool) -> String {
    fingerprint(tool, None)
}

/// The result of a call whose tool changed while it waited for approval.
pub const CHANGED_WHILE_WAITING: &str = "ToolCallError: this call was not run: the tool, the program behind it or the call's arguments changed while it waited for approval. Call it again if it is still needed.";

/// The result of a call whose decision was made for other arguments or another tool.
const DECIDED_FOR_OTHER: &str = "ToolCallError: this call was not run: its approval was given for other arguments or another definition of the tool (or program behind it) than it has now.";

/// The approvals of a runtime's threads: the step every call passes before it runs, and the
/// decisions people make. What it needs and nothing more: the project (for tools and their
/// fingerprints), the store (where requests and decisions are kept) and the handler the
/// embedding program installed.
pub(super) struct Approvals<'a> {
    pub(super) project: &'a LoadedProject,
    pub(super) db: &'a AsyncStore,
    pub(super) handler: Option<&'a Arc<dyn ApprovalHandler>>,
}

impl Approvals<'_> {
    /// The approval step of one call with validated (and middleware-changed) arguments.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn gate(
        &self,
        thread_id: &str,
        agent: &str,
        call_id: &str,
        tool: &AnyTool,
        args: Value,
        redactor: &Redactor,
        request_settings: &RunRequest,
    ) -> Result<Gate, RuntimeError> {
        // A policy given for this request only wins over the tool's own.
        let policy: &dyn ApprovalPolicy = match request_settings.approvals.get(tool.name()) {
            Some(policy) => policy.as_ref(),
            None => match tool.approval() {
                Some(policy) => policy.as_ref(),
                None => return Ok(Gate::Run(args)),
            },
        };
        let ctx = ApprovalContext {
            tool_name: tool.name(),
            args: &args,
            tool_call_id: Some(call_id),
            internal_call_id: call_id,
            thread_id: Some(thread_id),
            agent: Some(agent),
        };
        let failed = |part: &'static str, message: String| {
            Ok(Gate::Fail(Stop::Policy {
                part,
                message: redactor.text(&message),
            }))
        };
        match policy.requires_approval(&ctx) {
            Ok(true) => {}
            Ok(false) => return Ok(Gate::Run(args)),
            Err(e) => return failed("when", e),
        }
        let reason = match policy.reason(&ctx) {
            Ok(reason) => reason,
            Err(e) => return failed("reason", e),
        };
        let reject_message = match policy.reject_message(&ctx) {
            Ok(text) => text,
            Err(e) => return failed("rejectMessage", e),
        };
        // What a person is shown, stored and hashed never holds a secret (input middleware may
        // have put one in the arguments); the call runs with the real arguments.
        let shown = redactor.json(args.clone());
        let request = ApprovalRequest {
            call_id: call_id.to_owned(),
            tool: tool.name().to_owned(),
            args_hash: canonical_hash(&shown),
            tool_fingerprint: self.project.fingerprint_of(tool).await,
            reason,
            reject_message,
            arguments: shown,
        };
        let records = self.db.approvals(thread_id).await?;
        if let Some(record) = records.iter().find(|r| r.request.call_id == call_id) {
            return Ok(match &record.decision {
                // The tool, the program behind it or the arguments changed while it waited.
                None if record.request.tool_fingerprint != request.tool_fingerprint
                    || record.request.args_hash != request.args_hash =>
                {
                    closed_as_changed(record)
                }
                None => Gate::Wait(record.request.clone()),
                Some(decision) => apply_decision(tool, &request, args, decision, Vec::new()),
            });
        }
        let verdict = match standing_verdict(&records, &request) {
            Some(verdict) => Some(verdict),
            // A handler given with the request wins over the runtime's.
            None => match request_settings.approval_handler.as_ref().or(self.handler) {
                Some(handler) => handler.decide(thread_id, &request).await,
                None => None,
            },
        };
        let Some(verdict) = verdict else {
            return Ok(Gate::Wait(request));
        };
        let decision = decision_for(&request, verdict);
        let writes = vec![
            Write::RequestApproval(request.clone()),
            decided_event(&request, &decision),
            Write::DecideApproval {
                call_id: call_id.to_owned(),
                decision: decision.clone(),
            },
        ];
        Ok(apply_decision(tool, &request, args, &decision, writes))
    }

    /// Records a person's decision (see [`super::Runtime::decide`]); what they typed is redacted with
    /// the thread's `redactor` before it is stored.
    pub(super) async fn decide(
        &self,
        thread_id: &str,
        call_id: &str,
        verdict: Verdict,
        redactor: &Redactor,
    ) -> Result<ApprovalRecord, RuntimeError> {
        // What a person types is stored like everything else: a secret pasted into a denial's
        // message or into edited arguments is kept (and run) as its marker, never in clear.
        let verdict = Verdict {
            message: verdict.message.map(|m| redactor.text(&m)),
            reason: verdict.reason.map(|r| redactor.text(&r)),
            edited_arguments: verdict.edited_arguments.map(|a| redactor.json(a)),
            decided_by: redactor.text(&verdict.decided_by),
            ..verdict
        };
        let records = self.db.approvals(thread_id).await?;
        let refused = |reason: String| {
            RuntimeError::Store(StoreError::DecisionRefused {
                call_id: call_id.to_owned(),
                reason,
            })
        };
        let record = records
            .into_iter()
            .find(|r| r.request.call_id == call_id)
            .ok_or_else(|| {
                refused("no call of this thread waits for approval under this id".to_owned())
            })?;
        let tool = self
            .project
            .tools
            .get(&record.request.tool)
            .ok_or_else(|| {
                refused(format!(
                    "tool \"{}\" is no longer defined",
                    record.request.tool
                ))
            })?;
        if let Some(edited) = &verdict.edited_arguments {
            tool.validate(edited.clone()).map_err(|failure| {
                refused(format!("the edited arguments are invalid: {failure}"))
            })?;
        }
        // What the person was shown must be what the call waits with: a stored request whose
        // arguments no longer hash to its recorded hash was changed after it was made.
        if canonical_hash(&record.request.arguments) != record.request.args_hash {
            return Err(refused(
                "the arguments shown for approval are not the ones the call waits with (they do not match the hash recorded with the call); nothing was decided and nothing runs".to_owned(),
            ));
        }
        let current = ApprovalRequest {
            tool_fingerprint: self.project.fingerprint_of(tool).await,
            ..record.request.clone()
        };
        if current.tool_fingerprint != record.request.tool_fingerprint {
            return Err(refused(format!(
                "tool \"{}\" or the program behind it (its activity's command, arguments, environment or files) changed since the call asked for approval; nothing was decided. Resume without a decision: the call is answered as not run and the model may call again",
                record.request.tool
            )));
        }
        let decision = decision_for(&current, verdict);
        self.db
            .apply(
                thread_id,
                vec![
                    Write::DecideApproval {
                        call_id: call_id.to_owned(),
                        decision: decision.clone(),
                    },
                    decided_event(&current, &decision),
                ],
            )
            .await?;
        Ok(ApprovalRecord {
            decision: Some(decision),
            ..record
        })
    }
}

fn decision_for(request: &ApprovalRequest, verdict: Verdict) -> ApprovalDecision {
    ApprovalDecision {
        approved: verdict.approved,
        always: verdict.always,
        message: verdict.message,
        reason: verdict.reason,
        edited_arguments: verdict.edited_arguments,
        decided_by: verdict.decided_by,
        args_hash: request.args_hash.clone(),
        tool_fingerprint: request.tool_fingerprint.clone(),
    }
}

/// A waiting call whose tool, program or arguments changed while it waited: what a person
/// would approve is not what would run. It is closed as not run, so the model can call again
/// and a new request is made.
fn closed_as_changed(record: &ApprovalRecord) -> Gate {
    let decision = ApprovalDecision {
        approved: false,
        always: false,
        message: Some(CHANGED_WHILE_WAITING.to_owned()),
        reason: None,
        edited_arguments: None,
        decided_by: "toolhost".to_owned(),
        args_hash: record.request.args_hash.clone(),
        tool_fingerprint: record.request.tool_fingerprint.clone(),
    };
    let writes = vec![
        decided_event(&record.request, &decision),
        Write::DecideApproval {
            call_id: record.request.call_id.clone(),
            decision,
        },
    ];
    Gate::Rejected(CHANGED_WHILE_WAITING.to_owned(), writes)
}

/// The verdict an earlier "always" decision on this tool (as it is defined now) gives
/// `request`, if one was made in the thread: the latest counts.
fn standing_verdict(records: &[ApprovalRecord], request: &ApprovalRequest) -> Option<Verdict> {
    let standing = records.iter().rev().find_map(|r| {
        let d = r.decision.as_ref()?;
        (d.always
            && r.request.tool == request.tool
            && d.tool_fingerprint == request.tool_fingerprint)
            .then_some(d)
    })?;
    Some(Verdict {
        approved: standing.approved,
        always: false,
        message: standing.message.clone(),
        reason: standing.reason.clone(),
        edited_arguments: None,
        decided_by: format!("always, as decided by {}", standing.decided_by),
    })
}

/// The event that shows a decision in the thread's history.
fn decided_event(request: &ApprovalRequest, decision: &ApprovalDecision) -> Write {
    ApprovalDecided {
        call_id: request.call_id.clone(),
        tool: request.tool.clone(),
        approved: decision.approved,
        always: decision.always,
        decided_by: decision.decided_by.clone(),
        edited: decision.edited_arguments.is_some(),
    }
    .write()
}

/// The event that shows a request in the thread's history.
pub(super) fn requested_event(request: &ApprovalRequest) -> Write {
    ApprovalRequested {
        call_id: request.call_id.clone(),
        tool: request.tool.clone(),
        reason: request.reason.clone(),
    }
    .write()
}

/// What a decision on `current` makes of the call: `args` are the arguments it runs with
/// (the request holds them as shown, secrets redacted).
fn apply_decision(
    tool: &AnyTool,
    current: &ApprovalRequest,
    args: Value,
    decision: &ApprovalDecision,
    writes: Vec<Write>,
) -> Gate {
    if decision.tool_fingerprint != current.tool_fingerprint
        || decision.args_hash != current.args_hash
    {
        return Gate::Rejected(DECIDED_FOR_OTHER.to_owned(), writes);
    }
    if !decision.approved {
        let text = rejection_text(
            decision.message.as_deref(),
            decision.reason.as_deref(),
            current.reject_message.as_deref(),
        );
        return Gate::Rejected(text, writes);
    }
    let args = match &decision.edited_arguments {
        None => args,
        Some(edited) => match tool.validate(edited.clone()) {
            Ok(valid) if valid != current.arguments => return Gate::RunEdited(valid, writes),
            // Edited back to what was shown: the call runs as it was made.
            Ok(_) => args,
            Err(failure) => {
                return Gate::Rejected(
                    format!(
                        "ToolCallError: the arguments edited at approval are invalid: {failure}"
                    ),
                    writes,
                )
            }
        },
    };
    if writes.is_empty() {
        Gate::Run(args)
    } else {
        Gate::RunAfter(args, writes)
    }
}

impl LoadedProject {
    /// The fingerprint a decision on `tool` is bound to: its definition, and the process
    /// activity behind it when a project file binds one (the files it names are read, off the
    /// executor's threads).
    async fn fingerprint_of(&self, tool: &AnyTool) -> String {
        let activity = self
            .bound
            .get(tool.name())
            .and_then(|name| self.defs.activities.get(name))
            .cloned();
        let Some(activity) = activity else {
            return fingerprint(tool, None);
        };
        let (tool, root) = (tool.clone(), self.root.clone());
        let blocking =
            tokio::task::spawn_blocking(move || fingerprint(&tool, Some((&activity, &root))));
        // A task that could not finish binds to nothing that matches: the call does not run.
        blocking
            .await
            .unwrap_or_else(|e| format!("unavailable: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_hash_ignores_key_order_and_sees_every_value() {
        let a = json!({"b": 1, "a": {"y": [1, 2], "x": "s"}});
        let b = json!({"a": {"x": "s", "y": [1, 2]}, "b": 1});
        assert_eq!(canonical_hash(&a), canonical_hash(&b));
        assert_ne!(
            canonical_hash(&a),
            canonical_hash(&json!({"b": 1, "a": {"y": [2, 1], "x": "s"}}))
        );
        assert_eq!(canonical_hash(&a).len(), 64);
    }
}
