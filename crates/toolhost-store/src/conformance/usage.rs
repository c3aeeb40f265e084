//! Conformance case for the limits a batch checks of what its thread holds.

use super::{p, thread};
use crate::*;
use serde_json::json;

/// A batch ending with [`Write::CheckUsage`] is refused whole when the thread would hold more
/// than a limit allows, naming what and how much; space freed (a file removed, a value
/// overwritten) counts; toolhost's own events and other threads do not.
pub fn a_batch_over_a_threads_usage_limit_is_refused_whole(store: &dyn Store) {
    let id = thread(store);
    let other = thread(store);
    let limits = UsageLimits {
        file_bytes: Some(100),
        value_bytes: Some(50),
        event_bytes: Some(60),
    };
    let file = |path: &str, size: usize| Write::WriteFile {
        path: p(path),
        bytes: vec![b'x'; size],
        mime_type: None,
        message_id: None,
    };
    let check = Write::CheckUsage(limits);

    // Files: 60 + 40 fit, 60 + 41 do not; the refused batch wrote nothing.
    store
        .apply(&id, vec![file("/a", 60), file("/b", 40), check.clone()])
        .unwrap();
    let refused = store.apply(&id, vec![file("/b", 41), check.clone()]);
    assert!(
        matches!(
            refused,
            Err(StoreError::OverLimit {
                usage: Usage::FileBytes,
                limit: 100,
                reached: 101
            })
        ),
        "{refused:?}"
    );
    assert_eq!(store.stat(&id, &p("/b")).unwrap().unwrap().size, 40);
    // A file removed frees its bytes.
    store
        .apply(
            &id,
            vec![Write::Unlink(p("/a")), file("/c", 60), check.clone()],
        )
        .unwrap();
    // Another thread's files are its own.
    store
        .apply(&other, vec![file("/a", 100), check.clone()])
        .unwrap();

    // Values: each key and its value as JSON; an overwrite replaces the old bytes.
    let value = |key: &str, text: &str| Write::SetValue {
        key: key.into(),
        value: Some(json!(text)),
    };
    // "k" + "\"" + 38 x + "\"" = 41 bytes.
    store
        .apply(&id, vec![value("k", &"x".repeat(38)), check.clone()])
        .unwrap();
    store
        .apply(&id, vec![value("k", &"x".repeat(47)), check.clone()])
        .unwrap();
    let refused = store.apply(&id, vec![value("k2", "xx"), check.clone()]);
    assert!(
        matches!(
            refused,
            Err(StoreError::OverLimit {
                usage: Usage::ValueBytes,
                limit: 50,
                ..
            })
        ),
        "{refused:?}"
    );
    assert_eq!(store.value(&id, "k2").unwrap(), None);

    // Events of tools' own: each name and its data; toolhost's events are not counted.
    let event = |kind: EventKind, data: serde_json::Value| Write::Event { kind, data };
    store
        .apply(
            &id,
            vec![
                event(EventKind::RunEnded, json!({"why": "x".repeat(500)})),
                event(EventKind::Custom("note".into()), json!("x".repeat(40))),
                check.clone(),
            ],
        )
        .unwrap();
    let refused = store.apply(
        &id,
        vec![
            event(EventKind::Custom("note".into()), json!("x".repeat(20))),
            check.clone(),
        ],
    );
    assert!(
        matches!(
            refused,
            Err(StoreError::OverLimit {
                usage: Usage::EventBytes,
                limit: 60,
                ..
            })
        ),
        "{refused:?}"
    );
    let custom = store
        .events(&id, 0)
        .unwrap()
        .into_iter()
        .filter(|e| matches!(e.kind, EventKind::Custom(_)))
        .count();
    assert_eq!(custom, 1);

    // No limit, no check.
    store
        .apply(
            &id,
            vec![
                file("/big", 1000),
                Write::CheckUsage(UsageLimits::default()),
            ],
        )
        .unwrap();
}
