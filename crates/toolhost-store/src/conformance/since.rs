//! Conformance case for following every thread at once: messages and events of all threads after
//! a position, in store order, each with its thread, bounded by a limit.

use super::{text, thread};
use crate::*;
use serde_json::json;

/// `messages_since` and `events_since` interleave threads in the order things were stored, name
/// each item's thread, resume after any position they returned, and stop at the limit.
pub fn every_threads_messages_and_events_follow_in_store_order(store: &dyn Store) {
    let a = thread(store);
    let b = thread(store);
    store.apply(&a, vec![text(Role::User, "a1")]).unwrap();
    store.apply(&b, vec![text(Role::User, "b1")]).unwrap();
    store.apply(&a, vec![text(Role::Assistant, "a2")]).unwrap();
    let event = |name: &str| Write::Event {
        kind: EventKind::Custom(name.into()),
        data: json!({"name": name}),
    };
    store.apply(&b, vec![event("eb")]).unwrap();
    store.apply(&a, vec![event("ea")]).unwrap();

    let all = store.messages_since(0, 100).unwrap();
    let seen: Vec<(&str, &str)> = all
        .iter()
        .map(|(t, m)| (t.as_str(), m.content.as_deref().unwrap()))
        .collect();
    assert_eq!(
        seen,
        [(a.as_str(), "a1"), (b.as_str(), "b1"), (a.as_str(), "a2")]
    );
    let after_first = store.messages_since(all[0].1.seq, 100).unwrap();
    assert_eq!(after_first.len(), 2);
    assert_eq!(after_first[0].1.content.as_deref(), Some("b1"));
    let limited = store.messages_since(0, 2).unwrap();
    assert_eq!(limited.len(), 2);
    assert!(store.messages_since(all[2].1.seq, 100).unwrap().is_empty());

    let events = store.events_since(0, 100).unwrap();
    let seen: Vec<(&str, &str)> = events
        .iter()
        .map(|(t, e)| (t.as_str(), e.kind.as_str()))
        .collect();
    assert_eq!(seen, [(b.as_str(), "eb"), (a.as_str(), "ea")]);
    assert_eq!(events[1].1.data, json!({"name": "ea"}));
    let rest = store.events_since(events[0].1.seq, 1).unwrap();
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].1.kind.as_str(), "ea");
}
