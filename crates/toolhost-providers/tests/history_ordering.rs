//! The history check pairs every tool call with exactly one result right after the message that
//! made it: valid conversations pass untouched, and each kind of fault is repaired and reported.

use proptest::prelude::*;
use toolhost_providers::{
    check_history, ChatMessage, ChatRole, HistoryRepair, HistoryRepairKind, ModelToolCall,
    RESULT_UNAVAILABLE,
};

fn text(role: ChatRole, content: &str) -> ChatMessage {
    ChatMessage {
        role,
        content: Some(content.to_owned()),
        ..ChatMessage::default()
    }
}

fn system(content: &str) -> ChatMessage {
    text(ChatRole::System, content)
}

fn user(content: &str) -> ChatMessage {
    text(ChatRole::User, content)
}

fn reply(content: &str) -> ChatMessage {
    text(ChatRole::Assistant, content)
}

/// An assistant message calling `read_file` once per id.
fn calls(ids: &[&str]) -> ChatMessage {
    ChatMessage {
        role: ChatRole::Assistant,
        tool_calls: ids
            .iter()
            .map(|id| ModelToolCall {
                id: (*id).to_owned(),
                name: "read_file".to_owned(),
                arguments: format!("{{\"path\":\"{id}.txt\"}}"),
            })
            .collect(),
        ..ChatMessage::default()
    }
}

fn result(id: &str, content: &str) -> ChatMessage {
    ChatMessage {
        role: ChatRole::Tool,
        content: Some(content.to_owned()),
        tool_call_id: Some(id.to_owned()),
        ..ChatMessage::default()
    }
}

fn unavailable(id: &str) -> ChatMessage {
    ChatMessage {
        role: ChatRole::Tool,
        content: Some(RESULT_UNAVAILABLE.to_owned()),
        tool_call_id: Some(id.to_owned()),
        is_error: true,
        ..ChatMessage::default()
    }
}

fn kinds(repairs: &[HistoryRepair]) -> Vec<(HistoryRepairKind, Option<&str>, usize)> {
    repairs
        .iter()
        .map(|r| (r.kind, r.call_id.as_deref(), r.message_index))
        .collect()
}

#[test]
fn a_valid_conversation_with_parallel_calls_passes_untouched() {
    let conversation = vec![
        system("You read files."),
        user("Read a and b."),
        calls(&["a", "b"]),
        result("a", "alpha"),
        result("b", "beta"),
        reply("Done reading."),
        user("And c?"),
        calls(&["c"]),
        ChatMessage {
            is_error: true,
            ..result("c", "ToolCallError: no such file")
        },
        reply("c does not exist."),
    ];
    assert_eq!(check_history(&conversation), None);
}

#[test]
fn conversations_without_tool_calls_pass_untouched() {
    assert_eq!(check_history(&[]), None);
    assert_eq!(
        check_history(&[system("s"), user("hi"), reply("hello"), user("bye")]),
        None
    );
}

#[test]
fn a_missing_result_becomes_an_error_result() {
    let conversation = vec![
        user("Read a and b."),
        calls(&["a", "b"]),
        result("a", "alpha"),
        user("Still there?"),
    ];
    let (repaired, repairs) = check_history(&conversation).unwrap();
    assert_eq!(
        repaired,
        vec![
            user("Read a and b."),
            calls(&["a", "b"]),
            result("a", "alpha"),
            unavailable("b"),
            user("Still there?"),
        ]
    );
    assert_eq!(
        kinds(&repairs),
        [(HistoryRepairKind::MissingResult, Some("b"), 1)]
    );
    assert!(repairs[0].detail.contains("\"b\""), "{}", repairs[0].detail);
    assert!(
        repairs[0].detail.contains("read_file"),
        "{}",
        repairs[0].detail
    );
}

#[test]
fn a_call_at_the_end_without_results_gets_error_results() {
    let conversation = vec![user("Read a and b."), calls(&["a", "b"])];
    let (repaired, repairs) = check_history(&conversation).unwrap();
    assert_eq!(
        repaired,
        vec![
            user("Read a and b."),
            calls(&["a", "b"]),
            unavailable("a"),
            unavailable("b"),
        ]
    );
    assert_eq!(
        kinds(&repairs),
        [
            (HistoryRepairKind::MissingResult, Some("a"), 1),
            (HistoryRepairKind::MissingResult, Some("b"), 1),
        ]
    );
}

#[test]
fn a_late_result_is_moved_up_to_its_call() {
    let conversation = vec![
        user("Read a."),
        calls(&["a"]),
        user("Hurry up."),
        result("a", "alpha"),
        reply("Here it is."),
    ];
    let (repaired, repairs) = check_history(&conversation).unwrap();
    assert_eq!(
        repaired,
        vec![
            user("Read a."),
            calls(&["a"]),
            result("a", "alpha"),
            user("Hurry up."),
            reply("Here it is."),
        ]
    );
    assert_eq!(
        kinds(&repairs),
        [(HistoryRepairKind::MovedResult, Some("a"), 3)]
    );
    assert!(
        repairs[0].detail.contains("message 3") && repairs[0].detail.contains("message 1"),
        "{}",
        repairs[0].detail
    );
}

#[test]
fn results_out_of_call_order_are_put_in_call_order() {
    let conversation = vec![
        calls(&["a", "b", "c"]),
        result("c", "gamma"),
        result("a", "alpha"),
        result("b", "beta"),
    ];
    let (repaired, repairs) = check_history(&conversation).unwrap();
    assert_eq!(
        repaired,
        vec![
            calls(&["a", "b", "c"]),
            result("a", "alpha"),
            result("b", "beta"),
            result("c", "gamma"),
        ]
    );
    assert_eq!(
        kinds(&repairs),
        [(HistoryRepairKind::MovedResult, Some("c"), 1)]
    );
}

#[test]
fn a_result_answering_no_call_is_dropped() {
    let long = "x".repeat(200);
    let conversation = vec![
        user("Hi."),
        result("ghost", &long),
        reply("Hello."),
        ChatMessage {
            tool_call_id: None,
            ..result("", "no id at all")
        },
        user("Bye."),
    ];
    let (repaired, repairs) = check_history(&conversation).unwrap();
    assert_eq!(repaired, vec![user("Hi."), reply("Hello."), user("Bye.")]);
    assert_eq!(
        kinds(&repairs),
        [
            (HistoryRepairKind::OrphanResult, Some("ghost"), 1),
            (HistoryRepairKind::OrphanResult, None, 3),
        ]
    );
    let detail = &repairs[0].detail;
    assert!(detail.contains("\"ghost\""), "{detail}");
    assert!(
        detail.contains(&format!("\"{}…\"", "x".repeat(80))),
        "{detail}"
    );
    assert!(!detail.contains(&"x".repeat(81)), "{detail}");
    assert!(
        repairs[1].detail.contains("no id at all"),
        "{}",
        repairs[1].detail
    );
}

#[test]
fn a_result_before_its_call_answers_nothing() {
    let conversation = vec![result("a", "stale"), user("Read a."), calls(&["a"])];
    let (repaired, repairs) = check_history(&conversation).unwrap();
    assert_eq!(
        repaired,
        vec![user("Read a."), calls(&["a"]), unavailable("a")]
    );
    assert_eq!(
        kinds(&repairs),
        [
            (HistoryRepairKind::OrphanResult, Some("a"), 0),
            (HistoryRepairKind::MissingResult, Some("a"), 2),
        ]
    );
}

#[test]
fn a_second_result_for_a_call_is_dropped() {
    let conversation = vec![
        calls(&["a"]),
        result("a", "first"),
        result("a", "second"),
        reply("ok"),
    ];
    let (repaired, repairs) = check_history(&conversation).unwrap();
    assert_eq!(
        repaired,
        vec![calls(&["a"]), result("a", "first"), reply("ok")]
    );
    assert_eq!(
        kinds(&repairs),
        [(HistoryRepairKind::DuplicateResult, Some("a"), 2)]
    );
    let detail = &repairs[0].detail;
    assert!(
        detail.contains("\"second\"") && detail.contains("message 1"),
        "{detail}"
    );
}

#[test]
fn a_repeated_id_within_one_message_expects_one_result() {
    let conversation = vec![
        calls(&["a", "b", "a"]),
        result("a", "alpha"),
        result("b", "beta"),
    ];
    assert_eq!(check_history(&conversation), None);
    let (repaired, repairs) = check_history(&conversation[..2]).unwrap();
    assert_eq!(
        repaired,
        vec![
            calls(&["a", "b", "a"]),
            result("a", "alpha"),
            unavailable("b")
        ]
    );
    assert_eq!(
        kinds(&repairs),
        [(HistoryRepairKind::MissingResult, Some("b"), 0)]
    );
}

#[test]
fn a_reused_id_pairs_with_the_nearest_unanswered_call() {
    let conversation = vec![
        calls(&["a"]),
        result("a", "one"),
        calls(&["a"]),
        result("a", "two"),
    ];
    assert_eq!(check_history(&conversation), None);
    // Two calls with one id, one result after both: the later call gets it.
    let conversation = vec![calls(&["a"]), calls(&["a"]), result("a", "late")];
    let (repaired, repairs) = check_history(&conversation).unwrap();
    assert_eq!(
        repaired,
        vec![
            calls(&["a"]),
            unavailable("a"),
            calls(&["a"]),
            result("a", "late"),
        ]
    );
    assert_eq!(
        kinds(&repairs),
        [(HistoryRepairKind::MissingResult, Some("a"), 0)]
    );
}

fn mixed() -> Vec<ChatMessage> {
    vec![
        system("s"),
        user("Read a, b and c."),
        calls(&["a", "b", "c"]),
        result("b", "beta"),
        result("zzz", "orphan"),
        user("interjection"),
        result("a", "alpha"),
        result("a", "alpha again"),
        reply("Partial answer."),
        calls(&["d"]),
        result("d", "delta"),
        reply("Done."),
    ]
}

#[test]
fn mixed_faults_are_all_repaired_and_reported_in_order() {
    let (repaired, repairs) = check_history(&mixed()).unwrap();
    assert_eq!(
        repaired,
        vec![
            system("s"),
            user("Read a, b and c."),
            calls(&["a", "b", "c"]),
            result("a", "alpha"),
            result("b", "beta"),
            unavailable("c"),
            user("interjection"),
            reply("Partial answer."),
            calls(&["d"]),
            result("d", "delta"),
            reply("Done."),
        ]
    );
    assert_eq!(
        kinds(&repairs),
        [
            (HistoryRepairKind::MissingResult, Some("c"), 2),
            (HistoryRepairKind::OrphanResult, Some("zzz"), 4),
            (HistoryRepairKind::MovedResult, Some("a"), 6),
            (HistoryRepairKind::DuplicateResult, Some("a"), 7),
        ]
    );
    for repair in &repairs {
        assert!(!repair.detail.contains('\n'), "{repair}");
        assert!(repair.to_string().starts_with(repair.kind.as_str()));
    }
}

#[test]
fn a_repaired_conversation_checks_clean() {
    for conversation in [
        mixed(),
        vec![calls(&["a", "b"])],
        vec![
            result("x", "orphan"),
            calls(&["x"]),
            user("u"),
            result("x", "late"),
        ],
    ] {
        let (repaired, _) = check_history(&conversation).unwrap();
        assert_eq!(check_history(&repaired), None, "{repaired:#?}");
    }
}

#[test]
fn repairs_serialize_with_snake_case_kinds() {
    let (_, repairs) = check_history(&[calls(&["a"])]).unwrap();
    let json = serde_json::to_value(&repairs[0]).unwrap();
    assert_eq!(json["kind"], "missing_result");
    assert_eq!(json["call_id"], "a");
    assert_eq!(json["message_index"], 0);
}

/// The rule every conversation sent to a model must follow, written independently of the check.
fn follows_rules(messages: &[ChatMessage]) -> Result<(), String> {
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        i += 1;
        match m.role {
            ChatRole::Tool => return Err(format!("tool message {} follows no call", i - 1)),
            ChatRole::Assistant => {
                let mut seen: Vec<&str> = Vec::new();
                for call in &m.tool_calls {
                    if seen.contains(&call.id.as_str()) {
                        continue;
                    }
                    seen.push(&call.id);
                    let next = messages.get(i).ok_or("a call has no result")?;
                    if next.role != ChatRole::Tool
                        || next.tool_call_id.as_deref() != Some(call.id.as_str())
                    {
                        return Err(format!("message {i} is not the result of {:?}", call.id));
                    }
                    i += 1;
                }
            }
            ChatRole::System | ChatRole::User => {}
        }
    }
    Ok(())
}

#[derive(Debug, Clone)]
enum Spec {
    System,
    User,
    Assistant(Vec<u8>),
    Tool(Option<u8>, bool),
}

fn spec() -> impl Strategy<Value = Spec> {
    prop_oneof![
        1 => Just(Spec::System),
        3 => Just(Spec::User),
        4 => prop::collection::vec(0u8..6, 0..4).prop_map(Spec::Assistant),
        6 => (prop::option::weighted(0.9, 0u8..6), any::<bool>())
            .prop_map(|(id, err)| Spec::Tool(id, err)),
    ]
}

/// A conversation from specs; every message's text is unique, so equal messages are the same.
fn build(specs: &[Spec]) -> Vec<ChatMessage> {
    specs
        .iter()
        .enumerate()
        .map(|(n, s)| {
            let label = format!("message {n}");
            match s {
                Spec::System => system(&label),
                Spec::User => user(&label),
                Spec::Assistant(ids) => {
                    let ids: Vec<String> = ids.iter().map(|i| format!("c{i}")).collect();
                    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                    ChatMessage {
                        content: Some(label),
                        ..calls(&ids)
                    }
                }
                Spec::Tool(id, is_error) => ChatMessage {
                    role: ChatRole::Tool,
                    content: Some(label),
                    tool_call_id: id.map(|i| format!("c{i}")),
                    is_error: *is_error,
                    ..ChatMessage::default()
                },
            }
        })
        .collect()
}

fn non_tool(messages: &[ChatMessage]) -> Vec<&ChatMessage> {
    messages
        .iter()
        .filter(|m| m.role != ChatRole::Tool)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_conversations_come_out_valid(specs in prop::collection::vec(spec(), 0..40)) {
        let input = build(&specs);
        let Some((output, repairs)) = check_history(&input) else {
            prop_assert_eq!(follows_rules(&input), Ok(()));
            return Ok(());
        };
        prop_assert!(follows_rules(&input).is_err());
        prop_assert!(!repairs.is_empty());
        prop_assert_eq!(follows_rules(&output), Ok(()));
        prop_assert_eq!(check_history(&output), None);
        prop_assert_eq!(non_tool(&input), non_tool(&output));

        let input_results: Vec<&ChatMessage> =
            input.iter().filter(|m| m.role == ChatRole::Tool).collect();
        let mut kept = 0;
        let mut made_up = 0;
        for m in output.iter().filter(|m| m.role == ChatRole::Tool) {
            if m.content.as_deref() == Some(RESULT_UNAVAILABLE) {
                prop_assert!(m.is_error);
                made_up += 1;
            } else {
                prop_assert!(input_results.contains(&m), "not in the input: {:?}", m);
                kept += 1;
            }
        }
        let count = |kind| repairs.iter().filter(|r| r.kind == kind).count();
        prop_assert_eq!(count(HistoryRepairKind::MissingResult), made_up);
        prop_assert_eq!(
            count(HistoryRepairKind::OrphanResult) + count(HistoryRepairKind::DuplicateResult),
            input_results.len() - kept
        );
        prop_assert!(count(HistoryRepairKind::MovedResult) <= kept);
    }
}
