//! Group commit, for the backends that share commits between writes (not in
//! [`store_conformance_tests!`](crate::store_conformance_tests): an in-memory store has nothing
//! to share a commit for).

use super::text;
use crate::*;
use std::sync::{Arc, Barrier};

/// Sixteen threads write at once, `rounds` times each, a good batch and then one that fails
/// after its first write: the writes share commits, each failed batch leaves nothing, and each
/// thread holds exactly its good batches, in order.
pub fn concurrent_batches_share_commits_and_fail_alone(store: &dyn Store, rounds: usize) {
    let threads: Vec<String> = (0..16).map(|_| super::thread(store)).collect();
    let stats = || {
        store
            .write_stats()
            .expect("a store that shares commits counts them")
    };
    let before = stats();
    let barrier = Arc::new(Barrier::new(threads.len()));
    std::thread::scope(|scope| {
        for (i, thread) in threads.iter().enumerate() {
            let barrier = barrier.clone();
            scope.spawn(move || {
                barrier.wait();
                for n in 0..rounds {
                    let good = store.apply(thread, vec![text(Role::User, &format!("{i}-{n}"))]);
                    assert!(good.is_ok(), "{good:?}");
                    let bad = store.apply(
                        thread,
                        vec![
                            text(Role::User, "never stored"),
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
    let after = stats();
    let writes = after.writes - before.writes;
    let commits = after.commits - before.commits;
    assert_eq!(writes, (16 * rounds * 2) as u64);
    assert!(
        commits < writes,
        "{writes} writes from 16 threads at once took {commits} commits: none were shared"
    );
    for (i, thread) in threads.iter().enumerate() {
        let stored: Vec<String> = store
            .messages(thread)
            .unwrap()
            .into_iter()
            .filter_map(|m| m.content)
            .collect();
        let expected: Vec<String> = (0..rounds).map(|n| format!("{i}-{n}")).collect();
        assert_eq!(
            stored, expected,
            "thread {i} holds exactly its good batches"
        );
    }
    eprintln!("{writes} writes in {commits} commits");
}
