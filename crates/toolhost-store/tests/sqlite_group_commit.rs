//! Writes from many threads at once share commits, and a batch that fails in a shared commit
//! fails alone: the batches beside it are stored whole.

mod common;

use std::sync::{Arc, Barrier};
use toolhost_store::{NewMessage, NewThread, Role, Store, StoreError, Write};

fn text(content: &str) -> Write {
    Write::AppendMessage(NewMessage {
        role: Some(Role::User),
        content: Some(content.into()),
        ..NewMessage::default()
    })
}

#[test]
fn concurrent_batches_share_commits_and_fail_alone() {
    let store = common::TempStore::new();
    let threads: Vec<String> = (0..16)
        .map(|i| {
            store
                .create_thread(NewThread {
                    agent: format!("agent-{i}"),
                    ..NewThread::default()
                })
                .unwrap()
                .id
        })
        .collect();
    let before = store.write_stats();
    let barrier = Arc::new(Barrier::new(threads.len()));
    std::thread::scope(|scope| {
        for (i, thread) in threads.iter().enumerate() {
            let (store, barrier) = (&store, barrier.clone());
            scope.spawn(move || {
                barrier.wait();
                for n in 0..40 {
                    let good = store.apply(thread, vec![text(&format!("{i}-{n}"))]);
                    assert!(good.is_ok(), "{good:?}");
                    // A batch that fails after its first write: nothing of it is stored.
                    let bad = store.apply(
                        thread,
                        vec![
                            text("never stored"),
                            Write::CompleteCall {
                                call_id: "not-journaled".into(),
                                result: NewMessage::default(),
                            },
                        ],
                    );
                    assert!(matches!(bad, Err(StoreError::CallNotJournaled(_))));
                }
            });
        }
    });
    let after = store.write_stats();
    let writes = after.writes - before.writes;
    let commits = after.commits - before.commits;
    assert_eq!(writes, 16 * 40 * 2);
    assert!(
        commits < writes,
        "{writes} writes from 16 threads at once took {commits} commits: none were shared"
    );
    for (i, thread) in threads.iter().enumerate() {
        let messages = store.messages(thread).unwrap();
        let expected: Vec<String> = (0..40).map(|n| format!("{i}-{n}")).collect();
        let stored: Vec<String> = messages.into_iter().filter_map(|m| m.content).collect();
        assert_eq!(
            stored, expected,
            "thread {i} holds exactly its good batches, in order"
        );
    }
    eprintln!("{writes} writes in {commits} commits");
}
