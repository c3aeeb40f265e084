//! Printing what a thread waits for (calls to approve, variables to supply) and how its approval
//! requests were decided.

use super::data::EPHEMERAL;
use super::output::{errln, outln};
use serde_json::{json, Value};
use std::collections::BTreeSet;
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
            Some(d) => outln!(
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
                outln!("waiting for approval: call {} to {}", r.call_id, r.tool);
                outln!("  arguments: {}", r.arguments);
                if canonical_hash(&r.arguments) != r.args_hash {
                    outln!("  warning: these arguments do not match the hash recorded with the call (the stored request was changed); a decision on it is refused");
                }
                if let Some(reason) = &r.reason {
                    outln!("  reason: {reason}");
                }
            }
        }
    }
    for request in open_requests(store, thread_id) {
        outln!(
            "waiting for variables (request {}): {}",
            request.id,
            request.names.join(", ")
        );
    }
}

/// ` --data DIR` for a command that must find the thread where this one kept it; nothing for
/// the default data folder.
pub fn data_flag(data: &Path) -> String {
    if data == Path::new(super::data::default_data()) {
        String::new()
    } else {
        format!(" --data {}", shell_word(&super::data::shown(data)))
    }
}

/// `text` as one word for a POSIX shell: as it is when it holds only plain characters, else in
/// single quotes.
pub fn shell_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:,+=@%".contains(c));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// Prints how to continue a paused thread kept in `data`. A variable that any definition
/// declares secret is asked for with `--secret NAME`, which reads the value from standard
/// input, so that it never stands on a command line or in a shell's history.
pub fn print_how_to_continue(
    store: &dyn Store,
    dir: &Path,
    data: &Path,
    thread_id: &str,
    secret_names: &BTreeSet<String>,
) {
    if data == Path::new(EPHEMERAL) {
        errln!(
            "the thread was kept in memory (--data {EPHEMERAL}) and is gone when this command ends; \
             run it with a data folder to continue it later"
        );
        return;
    }
    let base = format!(
        "toolhost resume {}{} {thread_id}",
        shell_word(&dir.display().to_string()),
        data_flag(data)
    );
    for record in open_approvals(store, thread_id)
        .into_iter()
        .filter(|a| a.decision.is_none())
    {
        let call = &record.request.call_id;
        errln!("continue with: {base} --approve {call}");
        errln!("           or: {base} --deny {call} --message \"why\"");
    }
    for request in open_requests(store, thread_id) {
        let flags: Vec<String> = request
            .names
            .iter()
            .map(|n| {
                if secret_names.contains(n) {
                    format!("--secret {n}")
                } else {
                    format!("--var {n}=VALUE")
                }
            })
            .collect();
        errln!("continue with: {base} {}", flags.join(" "));
        if request.names.iter().any(|n| secret_names.contains(n)) {
            errln!(
                "  (each --secret reads its value from standard input, one line each, in order)"
            );
        }
    }
}
