//! The hooks before a call, as the step cycle asks them: run the call, answer it with the
//! hook's reason without running it (the outcome recorded on the result), or cancel the run.

use super::execute::{call_info, mark_hook};
use super::middleware::BeforeCall as Decided;
use super::offer::Offer;
use super::plan::answer_writes;
use super::state::ThreadState;
use serde_json::Value;
use toolhost_core::ToolResult;
use toolhost_store::{HookOutcome, ToolCallRecord, Write};

/// What the hooks before a call decided, in the writes it takes.
pub(super) enum BeforeCall {
    Run,
    /// The writes that answer the call with the hook's reason.
    Skip(Vec<Write>),
    Cancel(String),
}

/// Asks the hooks before `call` runs with `args` (see [`super::middleware::BeforeCall`]).
pub(super) fn before_call(
    state: &ThreadState,
    offer: &Offer,
    call: &ToolCallRecord,
    args: &Value,
) -> BeforeCall {
    if offer.pipeline.is_empty() {
        return BeforeCall::Run;
    }
    let info = call_info(state, offer, call);
    match offer.pipeline.before_call(&info, args, state.redactor()) {
        Decided::Run => BeforeCall::Run,
        Decided::Skip(reason) => {
            // The call's intent is journaled already (its plan's writes were stored).
            let mut writes = answer_writes(call, true, &ToolResult::success(reason.clone()));
            mark_hook(&mut writes, HookOutcome::Skipped { reason });
            BeforeCall::Skip(writes)
        }
        Decided::Cancel(reason) => BeforeCall::Cancel(reason),
    }
}
