//! Printing what a thread waits for (calls to approve, variables to supply) and how its approval
//! requests were decided.

use serde_json::{json, Value};
use std::path::Path;
use toolhost_runtime::engine::canonical_hash;
use toolhost_store::{ApprovalRecord, Store, VariableRequest};

fn open_approvals(store: &dyn Store, thread_id: &str) -> Vec<ApprovalRecord> {
    store.approvals(thread_id).unwrap_or_default()
}

fn open_requests(store: &dyn Store, thread_id: &str) -> Vec<VariableRequest> {
    store
        .variable_requests(thread_id)
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.answered_at.is_none())
        .collect()
}

/// What the thread waits for, and every approval with its decision, as JSON.
pub fn pending_json(store: &dyn Store, thread_id: &str) -> Value {
    let approvals = open_approvals(store, thread_id);
    json!({
        "approvals": approvals.iter().filter(|a| a.decision.is_none()).map(|a| &a.request).collect::<Vec<_>>(),
        "variables": open_requests(store, thread_id),
        "decisions": approvals.iter().filter(|a| a.decision.is_some()).collect::<Vec<_>>(),
    })
}

/// Prints the thread's approval history and what it waits for.
pub fn print_pending(store: &dyn Store, thread_id: &str) {
    for record in open_approvals(store, thread_id) {
        let r = &record.request;
        match &record.decision {
            Some(d) => println!(
                "approval of {} ({}): {}{} by {}",
                r.call_id,
                r.tool,
                if d.approved { "approved" } else { "denied" },
                if d.edited_arguments.is_some() {
                    " with edited arguments"
                } else {
                    ""
                },
                d.decided_by
            ),
            None => {
                println!("waiting for approval: call {} to {}", r.call_id, r.tool);
                println!("  arguments: {}", r.arguments);
                if canonical_hash(&r.arguments) != r.args_hash {
                    println!("  warning: these arguments do not match the hash recorded with the call (the stored request was changed); a decision on it is refused");
                }
                if let Some(reason) = &r.reason {
                    println!("  reason: {reason}");
                }
            }
        }
    }
    for request in open_requests(store, thread_id) {
        println!(
            "waiting for variables (request {}): {}",
            request.id,
            request.names.join(", ")
        );
    }
}

/// Prints how to continue a paused thread.
pub fn print_how_to_continue(store: &dyn Store, dir: &Path, thread_id: &str) {
    let base = format!("toolhost resume {} {thread_id}", dir.display());
    for record in open_approvals(store, thread_id)
        .into_iter()
        .filter(|a| a.decision.is_none())
    {
        let call = &record.request.call_id;
        eprintln!("continue with: {base} --approve {call}");
        eprintln!("           or: {base} --deny {call} --message \"why\"");
    }
    for request in open_requests(store, thread_id) {
        let flags: Vec<String> = request
            .names
            .iter()
            .map(|n| format!("--var {n}=VALUE (or --secret {n})"))
            .collect();
        eprintln!("continue with: {base} {}", flags.join(" "));
    }
}
