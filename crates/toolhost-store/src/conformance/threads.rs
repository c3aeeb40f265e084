//! Conformance cases for threads and their messages: creation and lookup, every field of a
//! message, all-or-nothing batches, the call journal, and isolation between threads.

use super::*;

/// Threads get distinct random ids, start idle, and are listed newest first.
pub fn threads_are_created_listed_and_found(store: &dyn Store) {
    let a = store
        .create_thread(NewThread {
            agent: "a".into(),
            tags: vec!["name:first".into()],
            ..Default::default()
        })
        .unwrap();
    let b = store
        .create_thread(NewThread {
            agent: "b".into(),
            parent: Some(a.id.clone()),
            ..Default::default()
        })
        .unwrap();
    assert_ne!(a.id, b.id);
    // Time-ordered ids (UUID v7): a thread made later sorts after.
    assert_eq!(
        uuid::Uuid::parse_str(&a.id).map(|u| u.get_version_num()),
        Ok(7)
    );
    assert!(a.id < b.id, "{} then {}", a.id, b.id);
    assert_eq!(a.status, ThreadStatus::Idle);
    assert_eq!(store.thread(&a.id).unwrap().tags, ["name:first"]);
    let all: Vec<String> = store
        .threads(None)
        .unwrap()
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(all, [b.id.clone(), a.id.clone()]);
    let children: Vec<String> = store
        .threads(Some(&a.id))
        .unwrap()
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(children, [b.id]);
}

/// An unknown thread is an error naming it, for reads and writes alike.
pub fn unknown_threads_are_reported(store: &dyn Store) {
    assert!(matches!(store.thread("nope"), Err(StoreError::ThreadNotFound(id)) if id == "nope"));
    assert!(matches!(
        store.messages("nope"),
        Err(StoreError::ThreadNotFound(_))
    ));
    assert!(matches!(
        store.apply("nope", vec![text(Role::User, "hi")]),
        Err(StoreError::ThreadNotFound(_))
    ));
    let orphan = store.create_thread(NewThread {
        agent: "a".into(),
        parent: Some("nope".into()),
        ..Default::default()
    });
    assert!(matches!(orphan, Err(StoreError::ThreadNotFound(_))));
}

/// Messages come back in append order with every field of the spec's record.
pub fn messages_keep_order_and_every_field(store: &dyn Store) {
    let t = thread(store);
    let first = store
        .apply(
            &t,
            vec![text(Role::System, "be brief"), text(Role::User, "hi")],
        )
        .unwrap();
    let full = NewMessage {
        id: Some("m-fixed".into()),
        role: Some(Role::Assistant),
        content: Some("calling".into()),
        name: Some("helper".into()),
        tool_calls: vec![ToolCallRecord {
            id: "c1".into(),
            name: "echo".into(),
            arguments: "{\"a\":1}".into(),
        }],
        tool_call_id: None,
        parent_id: Some(first.messages[1].id.clone()),
        depth: 2,
        silent: true,
        metadata: MessageMeta {
            side: Some(Side::B),
            turn: Some(2),
            repairs: vec![ArgumentRepair {
                call_id: "c1".into(),
                original: "{\"a\":1,}".into(),
                notes: vec!["trailing comma".into()],
            }],
            extra: serde_json::from_value(json!({"embedder": {"k": [1, 2]}})).unwrap(),
            ..MessageMeta::default()
        },
        status: None,
    };
    store
        .apply(&t, vec![Write::AppendMessage(full.clone())])
        .unwrap();
    let all = store.messages(&t).unwrap();
    assert_eq!(all.len(), 3);
    assert!(
        all.windows(2).all(|w| w[0].seq < w[1].seq),
        "positions increase"
    );
    let m = &all[2];
    assert_eq!(
        (m.id.as_str(), m.role, m.name.as_deref(), m.depth, m.silent),
        ("m-fixed", Role::Assistant, Some("helper"), 2, true)
    );
    assert_eq!(m.tool_calls, full.tool_calls);
    assert_eq!(m.parent_id, full.parent_id);
    assert_eq!(m.metadata, full.metadata);
    let after = store.messages_after(&t, all[0].seq).unwrap();
    assert_eq!(after.len(), 2);
}

/// A batch is all or nothing: a failing write undoes the writes before it.
pub fn a_failed_batch_writes_nothing(store: &dyn Store) {
    let t = thread(store);
    let err = store.apply(
        &t,
        vec![
            text(Role::User, "lost"),
            Write::SetValue {
                key: "k".into(),
                value: Some(json!(1)),
            },
            result("never-journaled", "x"),
        ],
    );
    assert!(
        matches!(err, Err(StoreError::CallNotJournaled(_))),
        "{err:?}"
    );
    assert!(store.messages(&t).unwrap().is_empty());
    assert_eq!(store.value(&t, "k").unwrap(), None);
}

/// The journal: intent before execution, one result after, never two.
pub fn calls_are_journaled_intent_then_result_once(store: &dyn Store) {
    let t = thread(store);
    store
        .apply(
            &t,
            vec![assistant_calling(&["c1", "c2"]), intent("c1"), intent("c2")],
        )
        .unwrap();
    store.apply(&t, vec![intent("c1")]).unwrap();
    let calls = store.calls(&t).unwrap();
    assert_eq!(
        calls.iter().map(|c| c.call_id.as_str()).collect::<Vec<_>>(),
        ["c1", "c2"]
    );
    assert!(calls.iter().all(|c| c.state == CallState::Intent));
    let done = store.apply(&t, vec![result("c1", "one")]).unwrap();
    let msg = &done.messages[0];
    assert_eq!(
        (msg.role, msg.tool_call_id.as_deref()),
        (Role::Tool, Some("c1"))
    );
    let c1 = store.call(&t, "c1").unwrap().unwrap();
    assert_eq!(c1.state, CallState::Completed);
    assert_eq!(c1.result_message_id.as_deref(), Some(msg.id.as_str()));
    assert!(matches!(
        store.apply(&t, vec![result("c1", "again")]),
        Err(StoreError::CallAlreadyCompleted(_))
    ));
    assert_eq!(
        store.call(&t, "c2").unwrap().unwrap().state,
        CallState::Intent
    );
    assert_eq!(store.call(&t, "c3").unwrap(), None);
}

/// Threads do not see each other's data.
pub fn threads_are_isolated(store: &dyn Store) {
    let a = thread(store);
    let b = thread(store);
    store
        .apply(
            &a,
            vec![
                text(Role::User, "a only"),
                Write::SetValue {
                    key: "k".into(),
                    value: Some(json!(1)),
                },
                Write::WriteFile {
                    path: p("/f"),
                    bytes: b"a".to_vec(),
                    mime_type: None,
                    message_id: None,
                },
            ],
        )
        .unwrap();
    assert!(store.messages(&b).unwrap().is_empty());
    assert_eq!(store.value(&b, "k").unwrap(), None);
    assert!(matches!(
        store.read_file(&b, &p("/f")),
        Err(StoreError::FileNotFound(_))
    ));
}

/// Text may hold U+0000 (a program's output, a model's answer): it is stored, kept or with
/// U+FFFD in its place (PostgreSQL's text cannot hold U+0000), and what was written with it is
/// found by it again. JSON keeps it exactly.
pub fn text_with_nul_characters_is_stored_and_found_again(store: &dyn Store) {
    let held = |text: &str| text.replace('\0', "\u{FFFD}");
    let t = store
        .create_thread(NewThread {
            agent: "agent\0x".into(),
            ..NewThread::default()
        })
        .unwrap()
        .id;
    store
        .apply(
            &t,
            vec![
                text(Role::User, "before\0after"),
                Write::SetValue {
                    key: "key\0".into(),
                    value: Some(serde_json::json!({"text": "a\0b"})),
                },
                Write::Event {
                    kind: EventKind::Custom("noted".into()),
                    data: serde_json::json!("c\0d"),
                },
            ],
        )
        .unwrap();
    assert_eq!(held(&store.thread(&t).unwrap().agent), "agent\u{FFFD}x");
    let messages = store.messages(&t).unwrap();
    assert_eq!(
        held(messages[0].content.as_deref().unwrap()),
        "before\u{FFFD}after"
    );
    assert_eq!(
        store.value(&t, "key\0").unwrap(),
        Some(serde_json::json!({"text": "a\0b"}))
    );
    let events = store.events(&t, 0).unwrap();
    assert!(
        events.iter().any(|e| e.data == serde_json::json!("c\0d")),
        "{events:?}"
    );
}
