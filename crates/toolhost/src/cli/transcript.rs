//! Printing a thread for people (a transcript) and for scripts (JSON).

use super::output::outln;
use serde_json::{json, Value};
use toolhost_runtime::engine::work_state;
use toolhost_store::{CallRecord, Message, Role, Thread};

/// The whole thread record as JSON: the thread, its messages and its call journal, and the
/// state document of a thread in spec 004's mode (`state`, when it holds anything).
pub fn thread_json(thread: &Thread, messages: &[Message], calls: &[CallRecord]) -> Value {
    let mut record = json!({"thread": thread, "messages": messages, "calls": calls});
    if let Some(state) = work_state(messages) {
        record["state"] = state;
    }
    record
}

/// `text` on one line, cut after `max` characters. A `[redacted NAME]` marker is kept whole or
/// left out, never cut in two (stored text is redacted already; this cut comes after).
pub(super) fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((mut cut, _)) => {
            if let Some(open) = flat[..cut].rfind('[') {
                let marker = flat[open..].starts_with("[redacted ");
                if marker && !flat[open..cut].contains(']') {
                    cut = open;
                }
            }
            format!("{}…", &flat[..cut])
        }
        None => flat,
    }
}

/// The `_reasoningForCall` the model wrote into call `i` of a combined reply (spec 004), when
/// the call's arguments do not carry it themselves.
fn reasoning_for_call(m: &Message, i: usize) -> Option<&str> {
    let why = m.metadata.combined.as_ref()?["calls"][i]["_reasoningForCall"].as_str()?;
    let in_arguments = m.tool_calls[i].arguments.contains("\"_reasoningForCall\"");
    (!in_arguments).then_some(why)
}

/// Prints messages readably: each tool call with its arguments, then its result and status
/// (and the arguments it ran with, when a person or middleware changed them). A prompt tool's
/// sub-prompt is shown between its call and its result, indented by its depth.
pub fn print_messages(messages: &[Message]) {
    for m in messages {
        let pad = "    ".repeat(m.depth as usize);
        let (user, assistant) = if m.depth == 0 {
            ("user", "assistant")
        } else {
            ("sub-prompt", "sub-prompt answer")
        };
        match m.role {
            Role::System => {}
            Role::User => outln!("{pad}{user}: {}", m.content.as_deref().unwrap_or("")),
            Role::Assistant => {
                if let Some(text) = m.content.as_deref().filter(|t| !t.is_empty()) {
                    outln!("{pad}{assistant}: {text}");
                }
                for (i, call) in m.tool_calls.iter().enumerate() {
                    outln!(
                        "{pad}  call {}({})",
                        call.name,
                        one_line(&call.arguments, 200)
                    );
                    // Spec 004: why the model made the call, kept with its reply.
                    if let Some(why) = reasoning_for_call(m, i) {
                        outln!("{pad}    why: {}", one_line(why, 300));
                    }
                    if let Some(notes) = repair_notes(m, &call.id) {
                        outln!("{pad}    arguments repaired: {}", one_line(&notes, 300));
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
                    outln!(
                        "{pad}    ran with arguments {}: {}",
                        ran.edited_by.describe(),
                        one_line(&ran.arguments.to_string(), 200)
                    );
                }
                outln!(
                    "{pad}  {} {}{by}: {}",
                    if ok { "ok" } else { "error" },
                    m.name.as_deref().unwrap_or("tool"),
                    one_line(m.content.as_deref().unwrap_or(""), 300)
                );
            }
        }
    }
    // Spec 004: what the results at their `_outputPath`s make of the thread's state.
    if let Some(state) = work_state(messages) {
        outln!("state: {}", one_line(&state.to_string(), 600));
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

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn a_preview_never_cuts_a_redaction_marker_in_two() {
        let text = "refused token [redacted CARD_TOKEN] again";
        assert_eq!(one_line(text, 20), "refused token …");
        assert_eq!(one_line(text, 36), "refused token [redacted CARD_TOKEN] …");
        assert_eq!(one_line("a  b\n c", 10), "a b c");
    }
}
