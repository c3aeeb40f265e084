//! The engine's decisions, as plain functions over what is stored: which calls still need a
//! result, and what the step after them is (take in queued work, end the run, hand the turn to
//! the other side, or ask the model). The loop in `run` reads the store, asks these functions,
//! and carries out what they say; nothing here does I/O or imports from the loop.

use super::outcome::StopReason;
use super::session::session_end;
use super::turns::{side_of, turn_over, Position};
use crate::project::SideDef;
use std::collections::HashSet;
use toolhost_store::{Message, Role, Side, ToolCallRecord};

/// What the run does next, once no call of the last reply waits for its result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    /// Take the queued work into the conversation before the model is asked again.
    TakeQueued,
    /// The queued work is tools only and the turn's step budget is used up: store each as
    /// not run, naming the budget, and end the run.
    RefuseQueued(StopReason),
    /// The run ends.
    End(StopReason),
    /// The turn is over and, in a `dual_ai` session, the other side takes the next one.
    HandOver,
    /// Ask the model.
    Ask,
}

/// The calls of the thread's last reply that have no result yet, in call order, with the side
/// whose reply made them and the reply's position; `None` when every call has its result.
pub(super) fn pending_calls(
    history: &[Message],
    answered: &HashSet<String>,
) -> Option<(Side, i64, Vec<ToolCallRecord>)> {
    let last = history
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant && m.depth == 0)?;
    let pending: Vec<ToolCallRecord> = last
        .tool_calls
        .iter()
        .filter(|c| !answered.contains(&c.id))
        .cloned()
        .collect();
    (!pending.is_empty()).then(|| (side_of(last).unwrap_or(Side::A), last.seq, pending))
}

/// The rules of the side whose turn it is, and of the session.
pub(super) struct TurnRules<'a> {
    /// The side's definition (stop on response, stop tool).
    pub side: &'a SideDef,
    /// The side's step budget per turn.
    pub max_steps: u32,
    /// The turns a `dual_ai` session has.
    pub max_session_turns: u32,
}

/// What waits in the thread's queue, as far as the next step cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Queued {
    /// Nothing.
    Nothing,
    /// Tools (queued by tools, activities or a caller), with nothing that opens a new turn:
    /// each costs a step of the turn.
    ToolsOnly,
    /// Work that is taken whatever the budget: it opens a new turn, or has no tools.
    Messages,
}

/// The step after the calls: queued work goes in first (queued tools only while the turn's
/// step budget lasts: a tool that queues itself would otherwise never stop); then the turn ends
/// on a reply, its stop tool or its step budget, and a `dual_ai` session hands the next turn
/// over until it has had its turns; otherwise the model is asked.
pub(super) fn next_step(
    queued: Queued,
    position: &Position,
    rules: &TurnRules<'_>,
    history: &[Message],
    answered: &HashSet<String>,
) -> Step {
    match queued {
        Queued::Nothing => {}
        Queued::ToolsOnly if position.steps >= rules.max_steps => {
            return Step::RefuseQueued(StopReason::MaxSteps(rules.max_steps));
        }
        Queued::ToolsOnly | Queued::Messages => return Step::TakeQueued,
    }
    // A session binding's call ends the whole session, whatever turn it is.
    if let Some(end) = session_end(position, rules.side, history, answered) {
        return Step::End(end);
    }
    let Some(reason) = turn_over(position, rules.side, rules.max_steps, history, answered) else {
        return Step::Ask;
    };
    if !position.is_dual() {
        return Step::End(reason);
    }
    if position.session_turn() >= rules.max_session_turns {
        return Step::End(StopReason::MaxSessionTurns(rules.max_session_turns));
    }
    Step::HandOver
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::AgentDef;
    use toolhost_store::{MessageMeta, ToolCallRecord};

    fn message(role: Role, calls: &[&str], meta: MessageMeta) -> Message {
        Message {
            id: toolhost_store::new_id(),
            seq: 0,
            role,
            content: Some("x".into()),
            name: None,
            tool_calls: calls
                .iter()
                .map(|id| ToolCallRecord {
                    id: (*id).into(),
                    name: "t".into(),
                    arguments: "{}".into(),
                })
                .collect(),
            tool_call_id: None,
            created_at: 0,
            parent_id: None,
            depth: 0,
            silent: false,
            metadata: meta,
            status: None,
        }
    }

    fn agent(json: &str) -> AgentDef {
        serde_json::from_str(json).unwrap()
    }

    fn rules(side: &SideDef) -> TurnRules<'_> {
        TurnRules {
            side,
            max_steps: 3,
            max_session_turns: 2,
        }
    }

    #[test]
    fn the_calls_of_the_last_reply_without_results_are_pending_in_order() {
        let history = vec![
            message(Role::User, &[], MessageMeta::default()),
            message(Role::Assistant, &["a", "b", "c"], MessageMeta::default()),
        ];
        let answered: HashSet<String> = ["b".to_owned()].into();
        let (side, _, calls) = pending_calls(&history, &answered).unwrap();
        assert_eq!(side, Side::A);
        let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["a", "c"]);
        let all: HashSet<String> = ["a", "b", "c"].map(String::from).into();
        assert_eq!(pending_calls(&history, &all), None);
    }

    #[test]
    fn queued_work_goes_first_then_a_reply_ends_the_turn_else_the_model_is_asked() {
        let def = agent(r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#);
        let asked = vec![message(Role::User, &[], MessageMeta::default())];
        let position = Position::from_history(&def, &asked);
        let none = HashSet::new();
        let r = rules(&def.side_a);
        assert_eq!(
            next_step(Queued::Messages, &position, &r, &asked, &none),
            Step::TakeQueued
        );
        assert_eq!(
            next_step(Queued::Nothing, &position, &r, &asked, &none),
            Step::Ask
        );
        let mut replied = asked.clone();
        replied.push(message(Role::Assistant, &[], MessageMeta::default()));
        let position = Position::from_history(&def, &replied);
        assert_eq!(
            next_step(Queued::Nothing, &position, &r, &replied, &none),
            Step::End(StopReason::Response)
        );
        // The step budget ends a turn that keeps calling tools.
        let mut busy = asked.clone();
        let mut done = HashSet::new();
        for i in 0..3 {
            let id = format!("c{i}");
            busy.push(message(Role::Assistant, &[&id], MessageMeta::default()));
            done.insert(id);
        }
        let position = Position::from_history(&def, &busy);
        assert_eq!(
            next_step(Queued::Nothing, &position, &r, &busy, &done),
            Step::End(StopReason::MaxSteps(3))
        );
        // Queued tools count against it too: past it they are refused, a message still goes in.
        assert_eq!(
            next_step(Queued::ToolsOnly, &position, &r, &busy, &done),
            Step::RefuseQueued(StopReason::MaxSteps(3))
        );
        assert_eq!(
            next_step(Queued::Messages, &position, &r, &busy, &done),
            Step::TakeQueued
        );
        let mut queued = asked.clone();
        let marked = MessageMeta {
            queued: true,
            ..MessageMeta::default()
        };
        for i in 0..3 {
            let id = format!("q{i}");
            queued.push(message(Role::Assistant, &[&id], marked.clone()));
        }
        let position = Position::from_history(&def, &queued);
        assert_eq!(position.steps, 3, "queued tools are steps of the turn");
    }

    #[test]
    fn a_dual_session_hands_over_until_its_last_turn() {
        let def =
            agent(r#"{"type": "dual_ai", "sideA": {"prompt": "p"}, "sideB": {"prompt": "q"}}"#);
        let reply = |side, turn| MessageMeta {
            side: Some(side),
            turn: Some(turn),
            ..MessageMeta::default()
        };
        let none = HashSet::new();
        let first = vec![
            message(Role::User, &[], MessageMeta::default()),
            message(Role::Assistant, &[], reply(Side::A, 1)),
        ];
        let position = Position::from_history(&def, &first);
        assert_eq!(
            next_step(
                Queued::Nothing,
                &position,
                &rules(&def.side_a),
                &first,
                &none
            ),
            Step::HandOver
        );
        let mut second = first.clone();
        second.push(message(Role::Assistant, &[], reply(Side::B, 2)));
        let position = Position::from_history(&def, &second);
        let side_b = def.side_b.as_ref().unwrap();
        assert_eq!(
            next_step(Queued::Nothing, &position, &rules(side_b), &second, &none),
            Step::End(StopReason::MaxSessionTurns(2))
        );
        // A message from outside opens a new session: its own turns, turn numbers going on.
        let mut third = second.clone();
        third.push(message(Role::User, &[], MessageMeta::default()));
        let position = Position::from_history(&def, &third);
        assert_eq!((position.side, position.turn), (Side::A, 3));
        assert_eq!(position.session_turn(), 1);
        assert_eq!(
            next_step(
                Queued::Nothing,
                &position,
                &rules(&def.side_a),
                &third,
                &none
            ),
            Step::Ask
        );
        third.push(message(Role::Assistant, &[], reply(Side::A, 3)));
        let position = Position::from_history(&def, &third);
        assert_eq!(
            next_step(
                Queued::Nothing,
                &position,
                &rules(&def.side_a),
                &third,
                &none
            ),
            Step::HandOver
        );
        // An inbound assistant message (side A's voice) is answered by side B.
        let mut to_b = second;
        to_b.push(message(
            Role::Assistant,
            &[],
            MessageMeta {
                inbound: true,
                side: Some(Side::A),
                ..MessageMeta::default()
            },
        ));
        let position = Position::from_history(&def, &to_b);
        assert_eq!((position.side, position.turn), (Side::B, 3));
    }
}
