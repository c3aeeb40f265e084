//! What makes a model's answer malformed: output no API is documented to send, which no tool
//! can be asked about. Such an answer is not stored and none of its calls runs; the runtime asks
//! again within the model's attempt bound (see [`toolhost_providers::Model::max_attempts`]) and
//! then fails the run with an error that says what was wrong (catalogue AN-8).
//!
//! Malformed are: a call whose tool name is empty or blank, a call whose id is empty, and two
//! calls under one id that differ in name or arguments (which of them the model meant is not
//! knowable). The same call repeated under its id is not malformed: it runs once. A call of a
//! tool that does not exist is not malformed either: the model is told which tools exist.

use crate::variables::Redactor;
use std::collections::HashMap;
use toolhost_providers::ModelResponse;

/// Why an answer is malformed, naming the call (counting from 1) and what is wrong with it,
/// with every secret of `redactor` redacted: the reason quotes the model's call ids and tool
/// names, which may hold anything, and it goes to the log and into an error a client reads.
pub(super) fn malformed(response: &ModelResponse, redactor: &Redactor) -> Option<String> {
    fault(response).map(|reason| redactor.text(&reason))
}

/// What is wrong with the answer, quoting it as it is.
fn fault(response: &ModelResponse) -> Option<String> {
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    for (i, call) in response.tool_calls.iter().enumerate() {
        let at = i + 1;
        if blank(&call.name) {
            return Some(format!("call {at} (id {:?}) has no tool name", call.id));
        }
        if blank(&call.id) {
            return Some(format!("call {at} (tool \"{}\") has no call id", call.name));
        }
        if let Some(&first) = by_id.get(call.id.as_str()) {
            let earlier = &response.tool_calls[first];
            if earlier.name != call.name || earlier.arguments != call.arguments {
                return Some(format!(
                    "calls {} and {at} share the id {:?} but differ in tool or arguments",
                    first + 1,
                    call.id
                ));
            }
            continue;
        }
        by_id.insert(&call.id, i);
    }
    None
}

/// Whether `text` holds nothing a person could read: empty, or only white space, control
/// characters and the invisible format characters (zero-width spaces and joiners, the word
/// joiner, the byte-order mark) that `str::trim` leaves.
fn blank(text: &str) -> bool {
    text.chars().all(|c| {
        c.is_whitespace()
            || c.is_control()
            || matches!(
                c,
                '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}' | '\u{00AD}'
            )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_providers::ModelToolCall;

    fn malformed(response: &ModelResponse) -> Option<String> {
        super::malformed(response, &Redactor::default())
    }

    fn answer(calls: &[(&str, &str, &str)]) -> ModelResponse {
        ModelResponse {
            tool_calls: calls
                .iter()
                .map(|(id, name, arguments)| ModelToolCall {
                    id: (*id).into(),
                    name: (*name).into(),
                    arguments: (*arguments).into(),
                })
                .collect(),
            ..ModelResponse::default()
        }
    }

    #[test]
    fn empty_names_empty_ids_and_conflicting_ids_are_malformed() {
        assert_eq!(malformed(&answer(&[("a", "t", "{}")])), None);
        let no_name = malformed(&answer(&[("a", "t", "{}"), ("b", " ", "{}")])).unwrap();
        assert!(no_name.contains("call 2"), "{no_name}");
        assert!(no_name.contains("no tool name"), "{no_name}");
        let no_id = malformed(&answer(&[("", "t", "{}")])).unwrap();
        assert!(no_id.contains("no call id"), "{no_id}");
        let clash = malformed(&answer(&[("a", "t", "{}"), ("a", "t", "{\"x\":1}")])).unwrap();
        assert!(clash.contains("calls 1 and 2 share the id"), "{clash}");
        // The same call repeated under its id is not malformed (it runs once).
        assert_eq!(
            malformed(&answer(&[("a", "t", "{}"), ("a", "t", "{}")])),
            None
        );
        // An unknown tool is for the model to hear about, not malformed.
        assert_eq!(malformed(&answer(&[("a", "nope", "{}")])), None);
        // Nor is a name a person cannot see a name.
        for invisible in ["", "\u{200B}", "\u{FEFF}\u{2060}", "\u{0}", "\t\u{200D}"] {
            let refused = malformed(&answer(&[("a", invisible, "{}")])).unwrap();
            assert!(refused.contains("no tool name"), "{invisible:?}: {refused}");
        }
    }

    #[test]
    fn a_secret_in_a_quoted_id_or_name_is_redacted() {
        let red = Redactor::new([("TOKEN".to_owned(), "sk-live-Q7fX9mZ2".to_owned())]);
        for calls in [
            vec![("id-sk-live-Q7fX9mZ2", "", "{}")],
            vec![("", "tool-sk-live-Q7fX9mZ2", "{}")],
            vec![
                ("sk-live-Q7fX9mZ2", "t", "{}"),
                ("sk-live-Q7fX9mZ2", "t", "{\"x\":1}"),
            ],
        ] {
            let reason = super::malformed(&answer(&calls), &red).unwrap();
            assert!(reason.contains("[redacted TOKEN]"), "{reason}");
            assert!(!reason.contains("Q7fX9mZ2"), "{reason}");
        }
    }
}
