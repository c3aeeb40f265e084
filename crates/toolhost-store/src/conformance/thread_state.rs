//! Conformance cases for what a thread keeps besides its messages: durable values, queued work,
//! events and status, and what deleting a message takes with it.

use super::*;

/// Durable values: set, overwrite, and `null` deletes.
pub fn values_are_set_overwritten_and_deleted_by_null(store: &dyn Store) {
    let t = thread(store);
    store
        .apply(
            &t,
            vec![
                Write::SetValue {
                    key: "b".into(),
                    value: Some(json!({"n": 1})),
                },
                Write::SetValue {
                    key: "a".into(),
                    value: Some(json!("x")),
                },
            ],
        )
        .unwrap();
    store
        .apply(
            &t,
            vec![Write::SetValue {
                key: "b".into(),
                value: Some(json!([2])),
            }],
        )
        .unwrap();
    assert_eq!(store.value(&t, "b").unwrap(), Some(json!([2])));
    assert_eq!(
        store.values(&t).unwrap(),
        vec![("a".to_owned(), json!("x")), ("b".to_owned(), json!([2]))]
    );
    store
        .apply(
            &t,
            vec![
                Write::SetValue {
                    key: "b".into(),
                    value: Some(serde_json::Value::Null),
                },
                Write::SetValue {
                    key: "a".into(),
                    value: None,
                },
            ],
        )
        .unwrap();
    assert!(store.values(&t).unwrap().is_empty());
}

/// Queued work keeps its order and is removed only through the position given.
pub fn queued_work_is_ordered_and_dequeued_through_a_position(store: &dyn Store) {
    let t = thread(store);
    let applied = store
        .apply(
            &t,
            vec![
                Write::Enqueue(QueueItem::Message {
                    role: Role::User,
                    content: "one".into(),
                }),
                Write::Enqueue(QueueItem::Tool {
                    name: "echo".into(),
                    arguments: json!({"a": 1}),
                }),
                Write::Enqueue(QueueItem::Message {
                    role: Role::User,
                    content: "three".into(),
                }),
            ],
        )
        .unwrap();
    assert_eq!(applied.queued.len(), 3);
    store
        .apply(
            &t,
            vec![Write::Dequeue {
                through: applied.queued[1],
            }],
        )
        .unwrap();
    let left = store.queued(&t).unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(
        left[0].item,
        QueueItem::Message {
            role: Role::User,
            content: "three".into()
        }
    );
}

/// Work queued once under a key is queued the first time only, also after it was taken, and
/// the key is the thread's own: another thread may queue under the same key.
pub fn work_queued_once_under_a_key_is_queued_once(store: &dyn Store) {
    let t = thread(store);
    let other = thread(store);
    let once = |content: &str| Write::EnqueueOnce {
        key: "result-of-child-1".into(),
        item: QueueItem::Message {
            role: Role::User,
            content: content.into(),
        },
    };
    let first = store.apply(&t, vec![once("first")]).unwrap();
    assert_eq!(first.queued.len(), 1);
    let again = store.apply(&t, vec![once("second")]).unwrap();
    assert!(again.queued.is_empty(), "a second delivery is a no-op");
    store
        .apply(
            &t,
            vec![Write::Dequeue {
                through: first.queued[0],
            }],
        )
        .unwrap();
    let after_taken = store.apply(&t, vec![once("third")]).unwrap();
    assert!(after_taken.queued.is_empty(), "the key outlives the work");
    assert!(store.queued(&t).unwrap().is_empty());
    assert_eq!(
        store.apply(&other, vec![once("x")]).unwrap().queued.len(),
        1
    );
    assert_eq!(store.queued(&other).unwrap().len(), 1);
}

/// Events are kept in order and read after a position; status changes are stored.
pub fn events_and_status_are_stored(store: &dyn Store) {
    let t = thread(store);
    let a = store
        .apply(
            &t,
            vec![
                Write::Event {
                    kind: EventKind::Custom("started".into()),
                    data: json!({"n": 1}),
                },
                Write::SetStatus(ThreadStatus::Running),
            ],
        )
        .unwrap();
    store
        .apply(
            &t,
            vec![Write::Event {
                kind: EventKind::ApprovalRequested,
                data: json!(50),
            }],
        )
        .unwrap();
    let later = store.events(&t, a.events[0]).unwrap();
    assert_eq!(
        later.iter().map(|e| e.kind.clone()).collect::<Vec<_>>(),
        [EventKind::ApprovalRequested]
    );
    assert_eq!(
        store.events(&t, 0).unwrap()[0].kind,
        EventKind::Custom("started".into())
    );
    assert_eq!(store.events(&t, 0).unwrap().len(), 2);
    // A tool's event cannot pass for one of toolhost's own.
    let spoofed = store.apply(
        &t,
        vec![Write::Event {
            kind: EventKind::Custom("approval_decided".into()),
            data: json!({}),
        }],
    );
    assert!(matches!(spoofed, Err(StoreError::ReservedEventName(_))));
    assert_eq!(store.events(&t, 0).unwrap().len(), 2);
    assert_eq!(store.thread(&t).unwrap().status, ThreadStatus::Running);
}

/// Deleting a message deletes the results of its calls and their attachments, and the messages
/// nested under its calls (sub-prompts) with theirs.
pub fn deleting_a_message_cascades_to_results_and_attachments(store: &dyn Store) {
    let t = thread(store);
    let keep = store.apply(&t, vec![text(Role::User, "keep")]).unwrap();
    let call = store
        .apply(&t, vec![assistant_calling(&["c1"]), intent("c1")])
        .unwrap();
    // A sub-prompt nested under the call: its messages and its own call go with it.
    let nested = |w: Write| match w {
        Write::AppendMessage(m) => Write::AppendMessage(NewMessage {
            parent_id: Some("c1".into()),
            depth: 1,
            ..m
        }),
        Write::CompleteCall { call_id, result } => Write::CompleteCall {
            call_id,
            result: NewMessage {
                parent_id: Some("c1".into()),
                depth: 1,
                ..result
            },
        },
        other => other,
    };
    store
        .apply(
            &t,
            vec![
                nested(text(Role::User, "sub")),
                nested(assistant_calling(&["c2"])),
                intent("c2"),
                nested(result("c2", "inner")),
            ],
        )
        .unwrap();
    let res = store.apply(&t, vec![result("c1", "chart made")]).unwrap();
    store
        .apply(
            &t,
            vec![Write::WriteFile {
                path: p("/attachments/chart.png"),
                bytes: vec![1, 2, 3],
                mime_type: Some("image/png".into()),
                message_id: Some(res.messages[0].id.clone()),
            }],
        )
        .unwrap();
    store
        .apply(&t, vec![Write::DeleteMessage(call.messages[0].id.clone())])
        .unwrap();
    let left: Vec<String> = store
        .messages(&t)
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(left, [keep.messages[0].id.clone()]);
    assert_eq!(
        store.message_tally(&t).unwrap(),
        MessageTally::of(&store.messages(&t).unwrap()),
        "the tally counts what a cascade removed"
    );
    assert_eq!(store.stat(&t, &p("/attachments/chart.png")).unwrap(), None);
    assert!(store.calls(&t).unwrap().is_empty());
    assert!(matches!(
        store.apply(&t, vec![Write::DeleteMessage("gone".into())]),
        Err(StoreError::MessageNotFound(_))
    ));
}

/// A thread's tally (how many messages, the sum of their positions) is what its messages add up
/// to after every append and removal, for that thread alone.
pub fn the_message_tally_follows_appends_and_removals(store: &dyn Store) {
    let (t, other) = (thread(store), thread(store));
    let tally = |t: &str| store.message_tally(t).unwrap();
    let actual = |t: &str| MessageTally::of(&store.messages(t).unwrap());
    assert_eq!(
        tally(&t),
        MessageTally {
            count: 0,
            seq_sum: 0
        }
    );
    store
        .apply(&other, vec![text(Role::User, "elsewhere")])
        .unwrap();
    let first = store.apply(&t, vec![text(Role::User, "one")]).unwrap();
    store
        .apply(
            &t,
            vec![text(Role::Assistant, "two"), text(Role::User, "three")],
        )
        .unwrap();
    assert_eq!(tally(&t).count, 3);
    assert_eq!(tally(&t), actual(&t));
    assert_eq!(tally(&other), actual(&other));
    store
        .apply(&t, vec![Write::DeleteMessage(first.messages[0].id.clone())])
        .unwrap();
    assert_eq!(tally(&t).count, 2);
    assert_eq!(tally(&t), actual(&t));
    // A batch that fails changes no tally.
    let failed = store.apply(
        &t,
        vec![
            text(Role::User, "four"),
            Write::DeleteMessage("no-such-message".into()),
        ],
    );
    assert!(failed.is_err());
    assert_eq!(tally(&t), actual(&t));
    assert!(matches!(
        store.message_tally("no-such-thread"),
        Err(StoreError::ThreadNotFound(_))
    ));
}
