//! # toolhost-providers: models
//!
//! The [`Model`] contract every adapter implements, and the scripted [`ScriptedModel`] (the
//! spec's `test` provider) that replays assistant turns from a script so that agents run with no
//! API key and tests are deterministic.
//!
//! ## Contract
//! - A model answers a [`ModelRequest`] (the conversation and the offered tools) with a
//!   [`ModelResponse`]: text, tool calls, and usage where known (unknown counts are `None`,
//!   never zero).
//! - A failure is a [`ModelError`] that says what went wrong and whether a retry may help.

mod model;
mod scripted;

pub use model::{
    ChatMessage, ChatRole, FinishReason, Model, ModelError, ModelFuture, ModelRequest,
    ModelResponse, ModelToolCall, Usage,
};
pub use scripted::{ScriptError, ScriptedModel, ScriptedTurn};
