//! What a pending call needs next, decided without side effects from what is known of it: its
//! journal state, the tools the prompt offers, the thread's variables and the approval gate's
//! verdict. An unknown tool, arguments that do not parse or validate, a stop, and (after a crash)
//! a non-idempotent call whose outcome is unknown are answered at once; a call missing a
//! required variable waits; the rest run, with their intent journaled first. The loop in `calls`
//! reads the journal, asks the gate, and carries out the plan.

use super::middleware::Failed;
use super::outcome::{Waiting, NOT_RUN_STOPPED, OUTCOME_UNKNOWN};
use super::records::result_message;
use super::repair::reask_text;
use super::stop::Stop;
use crate::variables::Resolved;
use serde_json::Value;
use std::collections::BTreeMap;
use toolhost_core::{parse_tool_args, AnyTool, ToolResult, ToolSet, ToolSetError};
use toolhost_store::{
    ApprovalRequest, ArgumentsEditor, CallIntent, CallState, RanWith, ToolCallRecord, Write,
};

/// What the approval step decided for one call.
pub(super) enum Gate {
    /// No approval is needed, or it was given: run with these arguments.
    Run(Value),
    /// Rejected: the text the model sees, and the writes recording how it was decided.
    Rejected(String, Vec<Write>),
    /// Run with these arguments after storing these writes (a handler's or an "always" decision).
    RunAfter(Value, Vec<Write>),
    /// Run with these arguments, which the decision gave in place of the call's, after storing
    /// these writes (possibly none).
    RunEdited(Value, Vec<Write>),
    /// No decision yet: the thread waits for this request.
    Wait(ApprovalRequest),
    /// Evaluating the policy failed (its `when`, `reason` or `rejectMessage`): the run stops.
    Fail(Stop),
}

/// A call whose plan is to run it: its tool, and the arguments and values it runs with.
pub(super) struct Planned {
    pub tool: AnyTool,
    pub args: Value,
    pub env: BTreeMap<String, String>,
    /// The arguments it runs with, when they are not the ones its call shows.
    pub ran_with: Option<RanWith>,
}

/// What a pending call needs next.
pub(super) enum Plan {
    /// Answered without running: the writes that store its result.
    Answered(Vec<Write>),
    /// To be run; `before` are the writes to store first: the journal entry when there is none
    /// yet, and how its approval was decided.
    Run { before: Vec<Write>, run: Planned },
    /// Waits for a person: a decision on its approval, or variables it needs.
    Wait(Waiting),
    /// Its input middleware or its approval policy failed: the run stops (see [`super::stop`]).
    Fail(Stop),
}

/// What is known of a call before it is planned.
#[derive(Debug, Clone, Copy)]
pub(super) struct CallFacts {
    /// Its journal state, if it has one.
    pub journaled: Option<CallState>,
    /// Its intent was journaled by this run with its reply, and it has not started.
    pub fresh: bool,
    /// The run was asked to stop.
    pub stopped: bool,
}

/// What the checks before the approval gate decide: a plan already, or a call for the gate.
pub(super) enum Checked {
    /// Decided without the gate.
    Decided(Plan),
    /// Valid, not stopped, not of unknown outcome, with every required variable: the gate
    /// decides whether it runs with these (validated, middleware-changed) arguments.
    ToGate {
        tool: AnyTool,
        args: Value,
        env: BTreeMap<String, String>,
        /// Input middleware changed the arguments.
        changed: bool,
    },
}

/// The checks before the approval gate. `input` is the input middleware (its result is
/// validated again).
pub(super) fn check_call(
    call: &ToolCallRecord,
    offered: &ToolSet,
    facts: CallFacts,
    variables: &Resolved,
    input: Option<&dyn Fn(Value) -> Result<Value, Failed>>,
) -> Checked {
    let journaled = facts.journaled.is_some();
    let answered = |result: ToolResult| Checked::Decided(answer(call, journaled, &result));
    if facts.stopped {
        return answered(ToolResult::error(NOT_RUN_STOPPED));
    }
    let checked = match offered.get(&call.name) {
        None => Err(ToolSetError::NotFound {
            tool_name: call.name.clone(),
            available: offered.values().map(|t| t.name().to_owned()).collect(),
        }),
        Some(tool) => parse_tool_args(&call.arguments)
            .map_err(|source| ToolSetError::Json {
                tool_name: call.name.clone(),
                source,
            })
            .and_then(|args| {
                tool.validate(args).map_err(|failure| ToolSetError::Call {
                    tool_name: call.name.clone(),
                    failure,
                })
            })
            .map(|args| (tool.clone(), args)),
    };
    let (tool, args) = match checked {
        Ok(ok) => ok,
        // Arguments no repair could mend (see `repair`): the model is asked to call again.
        Err(e @ (ToolSetError::Json { .. } | ToolSetError::Call { .. })) => {
            return answered(ToolResult::error(reask_text(&e.model_text(), &call.name)));
        }
        Err(e) => return answered(e.into_result()),
    };
    // Input middleware may change the arguments; what it returns is validated again.
    let (args, changed) = match input {
        None => (args, false),
        Some(middleware) => match middleware(args.clone()).map(|changed| tool.validate(changed)) {
            Err(failed) => return Checked::Decided(Plan::Fail(Stop::Middleware(failed))),
            Ok(validated) => match validated {
                Ok(valid) => {
                    let changed = valid != args;
                    (valid, changed)
                }
                Err(failure) => {
                    let e = ToolSetError::Call {
                        tool_name: call.name.clone(),
                        failure,
                    };
                    return answered(e.into_result());
                }
            },
        },
    };
    if facts.journaled == Some(CallState::Intent) && !facts.fresh && !tool.definition().idempotent {
        return answered(ToolResult::error(OUTCOME_UNKNOWN));
    }
    // Required variables the tool declared and the thread lacks pause the thread here.
    let declared = &tool.definition().variables;
    let missing: Vec<String> = declared
        .iter()
        .filter(|d| d.required && variables.get(&d.name).is_none())
        .map(|d| d.name.clone())
        .collect();
    if !missing.is_empty() {
        return Checked::Decided(Plan::Wait(Waiting::Variables {
            request_id: String::new(),
            names: missing,
        }));
    }
    let env = declared
        .iter()
        .filter_map(|d| Some((d.name.clone(), variables.get(&d.name)?.to_owned())))
        .collect();
    Checked::ToGate {
        tool,
        args,
        env,
        changed,
    }
}

/// The plan once the approval gate has spoken.
/// `changed` says that input middleware changed the call's arguments.
pub(super) fn after_gate(
    call: &ToolCallRecord,
    journaled: bool,
    gate: Gate,
    tool: AnyTool,
    env: BTreeMap<String, String>,
    changed: bool,
) -> Plan {
    let middleware = changed.then_some(ArgumentsEditor::Middleware);
    let (args, mut before, edited_by) = match gate {
        Gate::Run(args) => (args, Vec::new(), middleware),
        Gate::RunAfter(args, writes) => (args, writes, middleware),
        Gate::RunEdited(args, writes) => (args, writes, Some(ArgumentsEditor::Approval)),
        Gate::Rejected(text, writes) => {
            let result = ToolResult::error(text);
            let answer = answer_writes(call, journaled, &result);
            return Plan::Answered(writes.into_iter().chain(answer).collect());
        }
        Gate::Wait(request) => return Plan::Wait(Waiting::Approval(request)),
        Gate::Fail(stop) => return Plan::Fail(stop),
    };
    let ran_with = edited_by.map(|edited_by| RanWith {
        arguments: args.clone(),
        edited_by,
    });
    // Idempotent (or, in a race, already completed elsewhere): run with the same key. The
    // journal records the arguments the call runs with.
    if !journaled {
        let mut intent = intent_of(call);
        if let (Write::RecordIntent(i), Some(ran)) = (&mut intent, &ran_with) {
            i.arguments = ran.arguments.to_string();
        }
        before.push(intent);
    }
    Plan::Run {
        before,
        run: Planned {
            tool,
            args,
            env,
            ran_with,
        },
    }
}

/// The journal entry of a call about to run.
pub(super) fn intent_of(call: &ToolCallRecord) -> Write {
    Write::RecordIntent(CallIntent {
        call_id: call.id.clone(),
        tool: call.name.clone(),
        arguments: call.arguments.clone(),
        message_id: None,
    })
}

fn answer(call: &ToolCallRecord, journaled: bool, result: &ToolResult) -> Plan {
    Plan::Answered(answer_writes(call, journaled, result))
}

/// The writes that give a call its result without running it (its intent first, unless it is
/// `journaled`).
pub(super) fn answer_writes(
    call: &ToolCallRecord,
    journaled: bool,
    result: &ToolResult,
) -> Vec<Write> {
    let mut writes = Vec::new();
    if !journaled {
        writes.push(intent_of(call));
    }
    writes.push(Write::CompleteCall {
        call_id: call.id.clone(),
        result: result_message(&call.name, result),
    });
    writes
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_core::tool::{DynamicTool, ToolError};

    fn tools(idempotent: bool) -> ToolSet {
        let mut tool = DynamicTool::new("echo", "Echoes.")
            .parameters(serde_json::json!({
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"]
            }))
            .handler(|_: Value, _| async move { Ok::<_, ToolError>("ok".to_owned()) });
        if idempotent {
            tool = tool.idempotent(true);
        }
        ToolSet::from_tools([tool.build().unwrap()])
    }

    fn call(arguments: &str) -> ToolCallRecord {
        ToolCallRecord {
            id: "c1".into(),
            name: "echo".into(),
            arguments: arguments.into(),
        }
    }

    fn facts(journaled: Option<CallState>, fresh: bool, stopped: bool) -> CallFacts {
        CallFacts {
            journaled,
            fresh,
            stopped,
        }
    }

    /// The text of the one result an answered plan stores, and whether it journals an intent.
    fn answered(checked: Checked) -> (String, bool) {
        let Checked::Decided(Plan::Answered(writes)) = checked else {
            panic!("not answered");
        };
        let intent = writes.iter().any(|w| matches!(w, Write::RecordIntent(_)));
        let text = writes
            .iter()
            .find_map(|w| match w {
                Write::CompleteCall { result, .. } => result.content.clone(),
                _ => None,
            })
            .unwrap();
        (text, intent)
    }

    #[test]
    fn a_valid_call_goes_to_the_gate_and_a_fresh_intent_is_not_unknown() {
        let vars = Resolved::default();
        let ok = r#"{"text": "hi"}"#;
        for f in [
            facts(None, false, false),
            facts(Some(CallState::Intent), true, false),
        ] {
            assert!(matches!(
                check_call(&call(ok), &tools(false), f, &vars, None),
                Checked::ToGate { .. }
            ));
        }
        let unknown = check_call(
            &call(ok),
            &tools(false),
            facts(Some(CallState::Intent), false, false),
            &vars,
            None,
        );
        assert_eq!(answered(unknown), (OUTCOME_UNKNOWN.to_owned(), false));
        // An idempotent tool runs again with the same key.
        assert!(matches!(
            check_call(
                &call(ok),
                &tools(true),
                facts(Some(CallState::Intent), false, false),
                &vars,
                None
            ),
            Checked::ToGate { .. }
        ));
    }

    #[test]
    fn a_stop_bad_arguments_and_unknown_tools_are_answered_with_an_intent_when_none_exists() {
        let vars = Resolved::default();
        let (text, intent) = answered(check_call(
            &call(r#"{"text": "hi"}"#),
            &tools(false),
            facts(None, false, true),
            &vars,
            None,
        ));
        assert_eq!((text.as_str(), intent), (NOT_RUN_STOPPED, true));
        let (text, _) = answered(check_call(
            &call(r#"{"text": 3}"#),
            &tools(false),
            facts(None, false, false),
            &vars,
            None,
        ));
        assert!(text.contains("again"), "{text}");
        let mut other = call("{}");
        other.name = "nope".into();
        let (text, intent) = answered(check_call(
            &other,
            &tools(false),
            facts(Some(CallState::Intent), true, false),
            &vars,
            None,
        ));
        assert!(text.contains("nope"), "{text}");
        assert!(!intent, "already journaled");
    }

    #[test]
    fn middleware_arguments_are_validated_again() {
        let vars = Resolved::default();
        let breaks = |_: Value| Ok(serde_json::json!({"text": 1}));
        let (text, _) = answered(check_call(
            &call(r#"{"text": "hi"}"#),
            &tools(false),
            facts(None, false, false),
            &vars,
            Some(&breaks),
        ));
        assert!(text.contains("text"), "{text}");
    }

    #[test]
    fn a_failing_input_middleware_fails_the_plan() {
        let vars = Resolved::default();
        let fails = |_: Value| {
            Err((
                super::super::middleware::MiddlewareStage::ToolInput,
                "no".into(),
            ))
        };
        let checked = check_call(
            &call(r#"{"text": "hi"}"#),
            &tools(false),
            facts(None, false, false),
            &vars,
            Some(&fails),
        );
        assert!(matches!(checked, Checked::Decided(Plan::Fail(_))));
    }
}
