//! Sides and turns: which side of an agent speaks next, and when its turn is over.
//!
//! An `ai_human` agent has one side (`a`) and its turn ends the thread's run. A `dual_ai` agent
//! has two: side `a` speaks first, and when a side's turn is over the other side takes the next
//! one, until the session has had `maxSessionTurns` turns. Each assistant message of a `dual_ai`
//! thread records its side and its session turn in its metadata, so the position in the session
//! is read back from the history after a restart, never kept only in memory.

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

/// Where a thread is in its session: the side whose turn it is, the turn's number (from 1) and
/// how many model steps that turn has taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Position {
    pub side: Side,
    pub turn: u32,
    pub steps: u32,
    dual: bool,
}

impl Position {
    /// The position the stored history of a thread of `agent` is at.
    pub fn from_history(agent: &AgentDef, history: &[Message]) -> Self {
        let replies = history
            .iter()
            .filter(|m| m.role == Role::Assistant && m.depth == 0 && !is_queued(m));
        if agent.kind == AgentKind::AiHuman {
            // A turn is everything since the person's last message.
            // A sub-prompt's first message (nested) is not the person's.
            let turn = history.iter().filter(|m| is_person(m)).count() as u32;
            let steps = history
                .iter()
                .rev()
                .take_while(|m| !is_person(m))
                .filter(|m| m.role == Role::Assistant && m.depth == 0 && !is_queued(m))
                .count() as u32;
            return Self {
                side: Side::A,
                turn: turn.max(1),
                steps,
                dual: false,
            };
        }
        let last = replies
            .clone()
            .rev()
            .find_map(|m| Some((side_of(m)?, turn_of(m)?)));
        let Some((side, turn)) = last else {
            return Self {
                side: Side::A,
                turn: 1,
                steps: 0,
                dual: true,
            };
        };
        let steps = replies
            .filter(|m| side_of(m) == Some(side) && turn_of(m) == Some(turn))
            .count() as u32;
        Self {
            side,
            turn,
            steps,
            dual: true,
        }
    }

    /// The position of a conversation with one side that has just begun (a sub-prompt's).
    pub fn single() -> Self {
        Self {
            side: Side::A,
            turn: 1,
            steps: 0,
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
    // The turn's latest reply, if nothing the person wrote came after it.
    let reply = history
        .iter()
        .rev()
        .take_while(|m| !is_person(m))
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
        if is_last && reply.tool_calls.is_empty() && side.stop_on_response {
            return Some(StopReason::Response);
        }
    }
    (position.steps >= max_steps).then_some(StopReason::MaxSteps(max_steps))
}
