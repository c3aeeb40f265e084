//! Latent tools (spec 004): a blueprint with no activity is done by the model itself. The model
//! writes the result into the call's `_output`, which is why only a latent tool is shown its
//! `_output` schema, and why that schema makes `_output` required: the call's arguments are
//! validated with it before anything else happens, so a missing or invalid `_output` is answered
//! with the violations and a request to call again, like any other argument that does not fit.
//!
//! The call's result is that `_output`, as the model gave it. A latent tool that declares no
//! `_output` has nothing more to give than the call itself: its result is the call's arguments.

use super::split_call;
use crate::tool::any::{BoxFuture, Execute};
use crate::tool::{CallFailure, ToolContext, ToolOutput};
use serde_json::Value;

/// What a latent call "runs": it hands back the answer the model wrote into the call.
pub(super) struct LatentExecute;

impl Execute for LatentExecute {
    fn execute<'a>(
        &'a self,
        call: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, CallFailure>> {
        let (args, meta) = split_call(call);
        let output = meta.output.unwrap_or(args);
        Box::pin(async move { Ok(ToolOutput::Value(output)) })
    }
}
