//! The store conformance suite: every backend must pass every case here, unchanged.
//!
//! Each case is a public function taking a fresh, empty store. A backend's test file runs them
//! all with [`store_conformance_tests!`](crate::store_conformance_tests), giving it an expression
//! that makes a fresh store.

mod decisions;
mod deletion;
mod files;
mod leases;
mod pages;
mod since;
mod tokens;
mod work;

pub use decisions::*;
pub use deletion::*;
pub use files::*;
pub use leases::*;
pub use pages::*;
pub use since::*;
pub use tokens::*;
pub use work::*;

use crate::path::normalize;
use crate::*;
use serde_json::json;

fn p(path: &str) -> path::FsPath {
    normalize(path).expect("test paths are valid")
}

fn thread(store: &dyn Store) -> String {
    store
        .create_thread(NewThread {
            agent: "agent".into(),
            ..NewThread::default()
        })
        .expect("create thread")
        .id
}

fn text(role: Role, content: &str) -> Write {
    Write::AppendMessage(NewMessage {
        role: Some(role),
        content: Some(content.into()),
        ..NewMessage::default()
    })
}

fn assistant_calling(call_ids: &[&str]) -> Write {
    Write::AppendMessage(NewMessage {
        role: Some(Role::Assistant),
        tool_calls: call_ids
            .iter()
            .map(|id| ToolCallRecord {
                id: (*id).into(),
                name: "echo".into(),
                arguments: "{}".into(),
            })
            .collect(),
        ..NewMessage::default()
    })
}

fn intent(call_id: &str) -> Write {
    Write::RecordIntent(CallIntent {
        call_id: call_id.into(),
        tool: "echo".into(),
        arguments: "{}".into(),
        message_id: None,
    })
}

fn result(call_id: &str, content: &str) -> Write {
    Write::CompleteCall {
        call_id: call_id.into(),
        result: NewMessage {
            content: Some(content.into()),
            status: Some(ToolStatus::Success),
            ..NewMessage::default()
        },
    }
}

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
    assert_eq!(
        uuid::Uuid::parse_str(&a.id).map(|u| u.get_version_num()),
        Ok(4)
    );
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
    assert_eq!(store.stat(&t, &p("/attachments/chart.png")).unwrap(), None);
    assert!(store.calls(&t).unwrap().is_empty());
    assert!(matches!(
        store.apply(&t, vec![Write::DeleteMessage("gone".into())]),
        Err(StoreError::MessageNotFound(_))
    ));
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

/// Runs every conformance case as its own `#[test]`, each on a fresh store from `$make`, an
/// expression that dereferences to a store (a `Box`, an `Arc`, or a guard that cleans up).
#[macro_export]
macro_rules! store_conformance_tests {
    ($make:expr) => {
        $crate::store_conformance_tests!(@cases $make;
            threads_are_created_listed_and_found,
            unknown_threads_are_reported,
            messages_keep_order_and_every_field,
            a_failed_batch_writes_nothing,
            calls_are_journaled_intent_then_result_once,
            values_are_set_overwritten_and_deleted_by_null,
            queued_work_is_ordered_and_dequeued_through_a_position,
            events_and_status_are_stored,
            deleting_a_message_cascades_to_results_and_attachments,
            files_and_folders_behave_like_a_file_system,
            large_files_are_chunked_and_read_back_whole,
            threads_are_isolated,
            approvals_are_decided_once_and_only_when_they_match,
            variables_and_their_requests_are_stored,
            a_thread_has_one_owner_at_a_time,
            an_expired_or_dead_owner_is_taken_over_and_fenced_out,
            leases_are_renewed_and_carry_stop_requests,
            racing_claims_have_one_winner,
            a_thread_is_created_with_its_first_writes,
            tokens_are_stored_found_and_unique,
            tokens_are_revoked_once,
            tokens_keep_their_expiry,
            every_threads_messages_and_events_follow_in_store_order,
            lists_come_a_page_at_a_time,
            threads_with_work_are_found_in_one_read,
            a_handoff_changes_the_threads_agent_and_keeps_the_rest,
            deleting_a_thread_removes_all_of_it_and_nothing_else
        );
    };
    (@cases $make:expr; $($case:ident),*) => {
        $(
            #[test]
            fn $case() {
                let holder = $make;
                $crate::conformance::$case(&*holder);
            }
        )*
    };
}
