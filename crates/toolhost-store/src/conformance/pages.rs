//! Conformance case for paged reads: threads newest first with their filters and cursor, and a
//! thread's messages page by page.

use super::{text, thread};
use crate::*;

/// Pages of threads follow [`Store::threads`]' order, filter by agents, status and parent, continue
/// after the cursor and never pass the limit; messages come `limit` at a time after a position.
pub fn lists_come_a_page_at_a_time(store: &dyn Store) {
    let mut ids = Vec::new();
    for agent in ["a", "b", "a", "c", "a"] {
        ids.push(
            store
                .create_thread(NewThread {
                    agent: agent.into(),
                    ..NewThread::default()
                })
                .unwrap()
                .id,
        );
    }
    store
        .apply(&ids[2], vec![Write::SetStatus(ThreadStatus::Done)])
        .unwrap();
    let newest: Vec<String> = store
        .threads(None)
        .unwrap()
        .into_iter()
        .map(|t| t.id)
        .collect();
    let page = |agents: Option<Vec<&str>>, status, after: Option<&str>, limit| {
        store
            .thread_page(&ThreadQuery {
                agents: agents.map(|a| a.into_iter().map(String::from).collect()),
                status,
                parent: None,
                after: after.map(String::from),
                limit,
            })
            .unwrap()
            .into_iter()
            .map(|t| t.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(page(None, None, None, 10), newest);
    assert_eq!(page(None, None, None, 2), newest[..2]);
    assert_eq!(page(None, None, Some(&newest[1]), 2), newest[2..4]);
    assert_eq!(page(None, None, Some(&newest[4]), 2), Vec::<String>::new());
    let of_a: Vec<String> = newest
        .iter()
        .filter(|id| [&ids[0], &ids[2], &ids[4]].contains(id))
        .cloned()
        .collect();
    assert_eq!(page(Some(vec!["a"]), None, None, 10), of_a);
    assert_eq!(page(Some(vec!["a"]), None, Some(&of_a[0]), 1), of_a[1..2]);
    assert_eq!(page(Some(vec![]), None, None, 10), Vec::<String>::new());
    assert_eq!(
        page(Some(vec!["a", "b"]), Some(ThreadStatus::Done), None, 10),
        [ids[2].clone()]
    );
    // Sub-threads: only the children of the parent asked for.
    let child = |parent: &str| {
        store
            .create_thread(NewThread {
                agent: "a".into(),
                parent: Some(parent.into()),
                ..NewThread::default()
            })
            .unwrap()
            .id
    };
    let (first, second, other) = (child(&ids[0]), child(&ids[0]), child(&ids[1]));
    let children = |parent: &str| {
        store
            .thread_page(&ThreadQuery {
                agents: None,
                status: None,
                parent: Some(parent.into()),
                after: None,
                limit: 10,
            })
            .unwrap()
            .into_iter()
            .map(|t| t.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(children(&ids[0]), [second, first]);
    assert_eq!(children(&ids[1]), [other]);
    assert_eq!(children(&ids[2]), Vec::<String>::new());

    match store.thread_page(&ThreadQuery {
        agents: None,
        status: None,
        parent: None,
        after: Some("no-such-thread".into()),
        limit: 1,
    }) {
        Err(StoreError::ThreadNotFound(id)) => assert_eq!(id, "no-such-thread"),
        other => panic!("a cursor naming no thread was taken: {other:?}"),
    }

    let t = thread(store);
    for i in 0..5 {
        store
            .apply(&t, vec![text(Role::User, &format!("m{i}"))])
            .unwrap();
    }
    let first = store.message_page(&t, 0, 2).unwrap();
    let said = |ms: &[Message]| {
        ms.iter()
            .map(|m| m.content.clone().unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(said(&first), ["m0", "m1"]);
    let next = store.message_page(&t, first[1].seq, 10).unwrap();
    assert_eq!(said(&next), ["m2", "m3", "m4"]);
    assert!(store.message_page(&t, next[2].seq, 10).unwrap().is_empty());
    assert!(matches!(
        store.message_page("nope", 0, 1),
        Err(StoreError::ThreadNotFound(_))
    ));
}
