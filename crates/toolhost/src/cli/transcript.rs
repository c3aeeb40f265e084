//! Printing a thread for people (a transcript) and for scripts (JSON).

use serde_json::{json, Value};
use toolhost_store::{CallRecord, Message, Role, Thread};

/// The whole thread record as JSON: the thread, its messages and its call journal.
pub fn thread_json(thread: &Thread, messages: &[Message], calls: &[CallRecord]) -> Value {
    json!({"thread": thread, "messages": messages, "calls": calls})
}

/// `text` on one line, cut after `max` characters.
pub(super) fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// Prints messages readably: each tool call with its arguments, then its result and status
/// (and the arguments it ran with, when a person or middleware changed them).
pub fn print_messages(messages: &[Message]) {
    for m in messages.iter().filter(|m| m.depth == 0) {
        match m.role {
            Role::System => {}
            Role::User => println!("user: {}", m.content.as_deref().unwrap_or("")),
            Role::Assistant => {
                if let Some(text) = m.content.as_deref().filter(|t| !t.is_empty()) {
                    println!("assistant: {text}");
                }
                for call in &m.tool_calls {
                    println!("  call {}({})", call.name, one_line(&call.arguments, 200));
                    if let Some(notes) = repair_notes(m, &call.id) {
                        println!("    arguments repaired: {}", one_line(&notes, 300));
                    }
                }
            }
            Role::Tool => {
                let ok = m.status == Some(toolhost_store::ToolStatus::Success);
                let by = if m.metadata.provider_run {
                    " (run by the provider)"
                } else {
                    ""
                };
                // What ran, when it is not what the call above shows.
                if let Some(ran) = &m.metadata.ran_with {
                    println!(
                        "    ran with arguments {}: {}",
                        ran.edited_by.describe(),
                        one_line(&ran.arguments.to_string(), 200)
                    );
                }
                println!(
                    "  {} {}{by}: {}",
                    if ok { "ok" } else { "error" },
                    m.name.as_deref().unwrap_or("tool"),
                    one_line(m.content.as_deref().unwrap_or(""), 300)
                );
            }
        }
    }
}

/// The repair notes a reply's metadata records for one of its calls, joined.
fn repair_notes(reply: &Message, call_id: &str) -> Option<String> {
    let repair = reply
        .metadata
        .repairs
        .iter()
        .find(|r| r.call_id == call_id)?;
    Some(repair.notes.join("; "))
}
