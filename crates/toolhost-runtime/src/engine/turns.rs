//! Sides and turns: which side of an agent speaks next, and when its turn is over.
//!
//! An `ai_human` agent has one side (`a`) and its turn ends the thread's run. A `dual_ai` agent
//! has two: side `a` speaks first, and when a side's turn is over the other side takes the next
//! one, until the session has had `maxSessionTurns` turns. Each assistant message of a `dual_ai`
//! thread records its side and its session turn in its metadata, so the position in the session
//! is read back from the history after a restart, never kept only in memory.

use super::combined::gives_output;
use super::outcome::StopReason;
use crate::project::{AgentDef, AgentKind, SideDef};
use std::collections::HashSet;
pub use toolhost_store::Side;
use toolhost_store::{Message, MessageMeta, Role};

/// The default number of turns of a `dual_ai` session when the agent sets none.
pub const DEFAULT_MAX_SESSION_TURNS: u32 = 10;

/// The side a stored message was written by, when the thread records sides.
pub(super) fn side_of(message: &Message) -> Option<Side> {
    message.metadata.side
}

fn turn_of(message: &Message) -> Option<u32> {
    message.metadata.turn
}

/// A message of the thread's own conversation written by its user (not a sub-prompt's).
fn is_person(message: &Message) -> bool {
    message.role == Role::User && message.depth == 0
}

fn is_queued(message: &Message) -> bool {
    message.metadata.queued
}

/// A message from outside the conversation of a `dual_ai` thread (its first message, a
/// person's, a parent's to its sub-agent): it opens a session. Nested messages (a sub-prompt's
/// first message) are not.
pub(super) fn opens_session(message: &Message) -> bool {
    message.depth == 0 && (message.role == Role::User || message.metadata.inbound)
}

/// A reply of a side of a `dual_ai` session, with its side and turn.
fn side_reply(message: &Message) -> Option<(Side, u32)> {
    let reply = message.role == Role::Assistant && message.depth == 0 && !is_queued(message);
    reply.then(|| Some((side_of(message)?, turn_of(message)?)))?
}

/// Where a thread is in its session: the side whose turn it is, the turn's number (from 1,
/// counted over the whole thread) and how many model steps that turn has taken.
///
/// A `dual_ai` thread has a session per message from outside ([`opens_session`]): the side the
/// message is addressed to takes the session's first turn, and the session has its own
/// `maxSessionTurns`. Turn numbers go on across sessions, so a turn number names one turn of
/// the thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Position {
    pub side: Side,
    pub turn: u32,
    pub steps: u32,
    /// The number of the session's first turn.
    first_turn: u32,
    dual: bool,
}

impl Position {
    /// The position the stored history of a thread of `agent` is at.
    pub fn from_history(agent: &AgentDef, history: &[Message]) -> Self {
        if agent.kind == AgentKind::AiHuman {
            // A turn is everything since the person's last message.
            // A sub-prompt's first message (nested) is not the person's.
            let turn = history.iter().filter(|m| is_person(m)).count() as u32;
            let steps = history
                .iter()
                .rev()
                .take_while(|m| !is_person(m))
                // A queued tool is a step too (spec: queued tools count against maxSteps).
                .filter(|m| m.role == Role::Assistant && m.depth == 0)
                .count() as u32;
            let turn = turn.max(1);
            return Self {
                side: Side::A,
                turn,
                steps,
                first_turn: turn,
                dual: false,
            };
        }
        // The session is everything since the last message from outside.
        let opened = history.iter().rposition(opens_session);
        let (before, session) = match opened {
            Some(i) => (&history[..i], &history[i + 1..]),
            None => (&history[..0], history),
        };
        let in_session = || session.iter().filter_map(side_reply);
        let Some((side, turn)) = in_session().next_back() else {
            // Nothing answered it yet: the addressed side takes the session's first turn.
            let earlier = before.iter().filter_map(side_reply).map(|(_, t)| t).max();
            let turn = earlier.unwrap_or(0) + 1;
            let addressed = match opened.map(|i| &history[i]) {
                Some(m) if m.role == Role::Assistant => Side::B,
                _ => Side::A,
            };
            return Self {
                side: addressed,
                turn,
                steps: 0,
                first_turn: turn,
                dual: true,
            };
        };
        let steps = in_session().filter(|r| *r == (side, turn)).count() as u32;
        let first_turn = in_session().map(|(_, t)| t).min().unwrap_or(turn);
        Self {
            side,
            turn,
            steps,
            first_turn,
            dual: true,
        }
    }

    /// The position of a conversation with one side that has just begun (a sub-prompt's).
    pub fn single() -> Self {
        Self {
            side: Side::A,
            turn: 1,
            steps: 0,
            first_turn: 1,
            dual: false,
        }
    }

    /// Whether `message` was written in this position's turn.
    pub fn owns(&self, message: &Message) -> bool {
        !self.dual || (side_of(message) == Some(self.side) && turn_of(message) == Some(self.turn))
    }

    /// The metadata that marks a reply as this turn's (none for `ai_human` threads).
    pub fn mark(&self, metadata: &mut MessageMeta) {
        if self.dual {
            metadata.side = Some(self.side);
            metadata.turn = Some(self.turn);
        }
    }

    /// Hands the session to the other side for the next turn.
    pub fn next_turn(&mut self) {
        self.side = self.side.other();
        self.turn += 1;
        self.steps = 0;
    }

    /// Ends the turn and gives the next one to `side` (which may be the same side again).
    pub fn force_turn(&mut self, side: Side) {
        self.side = side;
        self.turn += 1;
        self.steps = 0;
    }

    /// The turn's number within its session (from 1).
    pub fn session_turn(&self) -> u32 {
        self.turn.saturating_sub(self.first_turn) + 1
    }

    /// Whether the thread has two sides.
    pub fn is_dual(&self) -> bool {
        self.dual
    }

    /// The same position, seen from `side` (for where that side's turn starts).
    pub fn as_side(&self, side: Side) -> Self {
        Self { side, ..*self }
    }
}

/// Why the turn at `position` is over, given the history and the side's rules; `None` while it
/// goes on. `max_steps` is the side's step budget for one turn; `answered` holds the calls that
/// have a result.
pub(super) fn turn_over(
    position: &Position,
    side: &SideDef,
    max_steps: u32,
    history: &[Message],
    answered: &HashSet<String>,
) -> Option<StopReason> {
    // The turn's latest reply, if nothing from outside came after it.
    let reply = history
        .iter()
        .rev()
        .take_while(|m| !opens_session(m))
        .find(|m| m.role == Role::Assistant && m.depth == 0 && position.owns(m));
    if let Some(reply) = reply {
        if let Some(stop) = &side.stop_tool {
            if reply.tool_calls.iter().any(|c| &c.name == stop)
                && reply.tool_calls.iter().all(|c| answered.contains(&c.id))
            {
                return Some(StopReason::StopTool(stop.clone()));
            }
        }
        let is_last = history.last().is_some_and(|m| m.id == reply.id);
        match &reply.metadata.combined {
            // Spec 004: the turn ends on a reply that gives its output, once its calls (made
            // in the same step) have their results; a reply without one goes on.
            Some(combined) => {
                if gives_output(combined)
                    && side.stop_on_response
                    && reply.tool_calls.iter().all(|c| answered.contains(&c.id))
                {
                    return Some(StopReason::Response);
                }
            }
            None => {
                if is_last && reply.tool_calls.is_empty() && side.stop_on_response {
                    return Some(StopReason::Response);
                }
            }
        }
    }
    (position.steps >= max_steps).then_some(StopReason::MaxSteps(max_steps))
}
