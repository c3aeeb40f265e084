//! Conformance cases for the threads a starting server takes up, and for work offered to any
//! node with room for it.

use super::{text, thread};
use crate::*;

/// Running threads, threads of any status but paused with queued work, paused ones whose wait
/// is over, and idle ones with an unanswered message from a person are found, oldest first;
/// threads that are answered, wait for a person, or are done or failed with nothing queued are
/// not.
pub fn threads_with_work_are_found_in_one_read(store: &dyn Store) {
    let with = |writes: Vec<Write>| {
        let id = thread(store);
        if !writes.is_empty() {
            store.apply(&id, writes).unwrap();
        }
        id
    };
    let _empty = with(vec![]);
    let unanswered = with(vec![text(Role::User, "hello?")]);
    let _answered = with(vec![
        text(Role::User, "hello?"),
        text(Role::Assistant, "hi"),
    ]);
    let running = with(vec![
        text(Role::User, "go"),
        text(Role::Assistant, "going"),
        Write::SetStatus(ThreadStatus::Running),
    ]);
    let queued = with(vec![
        text(Role::User, "go"),
        text(Role::Assistant, "done"),
        Write::Enqueue(QueueItem::Message {
            role: Role::User,
            content: "and then?".into(),
        }),
    ]);
    let asked = |call_id: &str| {
        Write::RequestApproval(ApprovalRequest {
            call_id: call_id.into(),
            tool: "pay".into(),
            arguments: serde_json::json!({"amount": 5}),
            args_hash: "hash-1".into(),
            tool_fingerprint: "tool-1".into(),
            reason: None,
            reject_message: None,
        })
    };
    let later = || {
        Write::Enqueue(QueueItem::Message {
            role: Role::User,
            content: "and then?".into(),
        })
    };
    let _paused = with(vec![
        text(Role::User, "pay"),
        asked("c1"),
        later(),
        Write::SetStatus(ThreadStatus::Paused),
    ]);
    let decided = with(vec![
        text(Role::User, "pay"),
        asked("c1"),
        Write::SetStatus(ThreadStatus::Paused),
        Write::DecideApproval {
            call_id: "c1".into(),
            decision: ApprovalDecision {
                approved: true,
                always: false,
                message: None,
                reason: None,
                edited_arguments: None,
                decided_by: "tester".into(),
                args_hash: "hash-1".into(),
                tool_fingerprint: "tool-1".into(),
            },
        },
    ]);
    let _asked_for_values = with(vec![
        text(Role::User, "log in"),
        Write::RequestVariables {
            id: "r1".into(),
            names: vec!["TOKEN".into()],
        },
        Write::SetStatus(ThreadStatus::Paused),
    ]);
    let given_values = with(vec![
        text(Role::User, "log in"),
        Write::RequestVariables {
            id: "r1".into(),
            names: vec!["TOKEN".into()],
        },
        Write::SetStatus(ThreadStatus::Paused),
        Write::AnswerVariables { id: "r1".into() },
    ]);
    let _done = with(vec![
        text(Role::User, "bye"),
        Write::SetStatus(ThreadStatus::Done),
    ]);
    let _failed = with(vec![
        text(Role::User, "bye"),
        Write::SetStatus(ThreadStatus::Failed),
    ]);
    // Work accepted on a finished thread just before a crash.
    let done_then_sent = with(vec![
        text(Role::User, "bye"),
        Write::SetStatus(ThreadStatus::Done),
        later(),
    ]);
    let failed_then_sent = with(vec![
        text(Role::User, "bye"),
        Write::SetStatus(ThreadStatus::Failed),
        later(),
    ]);
    assert_eq!(
        store.threads_with_work().unwrap(),
        [
            unanswered.clone(),
            running.clone(),
            queued.clone(),
            decided.clone(),
            given_values.clone(),
            done_then_sent.clone(),
            failed_then_sent.clone()
        ]
    );
    // Of those, the ones a live lease holds are not unowned; an expired lease holds nothing.
    let claim = |owner: &str, ttl_ms| LeaseClaim {
        owner: owner.into(),
        ttl_ms,
        replacing: None,
    };
    store.claim(&running, &claim("live", 60_000)).unwrap();
    store.claim(&queued, &claim("gone", 1)).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert_eq!(
        store.threads_with_unowned_work().unwrap(),
        [
            unanswered,
            queued,
            decided,
            given_values,
            done_then_sent,
            failed_then_sent
        ]
    );
}

/// A handoff changes the agent that runs a thread, in the batch that records it; the thread
/// keeps its id, history and parent, and other threads keep their agent.
pub fn a_handoff_changes_the_threads_agent_and_keeps_the_rest(store: &dyn Store) {
    let id = thread(store);
    let other = thread(store);
    store
        .apply(
            &id,
            vec![text(Role::User, "hello"), Write::SetAgent("billing".into())],
        )
        .unwrap();
    let t = store.thread(&id).unwrap();
    assert_eq!(t.agent, "billing");
    assert_eq!(store.messages(&id).unwrap().len(), 1);
    assert_eq!(store.thread(&other).unwrap().agent, "agent");
}

/// A thread with work: a person's message nothing answered yet.
fn waiting_thread(store: &dyn Store) -> String {
    let t = thread(store);
    store.apply(&t, vec![text(Role::User, "hello?")]).unwrap();
    t
}

/// Offers are taken oldest first, each once; offering a thread on offer changes nothing; a
/// thread that does not exist cannot be offered; a deleted thread's offer goes with it; an
/// offer whose work is gone (answered) or held by a live run is stale: taken away, not given.
pub fn offered_work_is_taken_once_oldest_first(store: &dyn Store) {
    let (first, second, third) = (
        waiting_thread(store),
        waiting_thread(store),
        waiting_thread(store),
    );
    assert_eq!(store.take_offered_work(10).unwrap(), Vec::<String>::new());
    store.offer_work(&first).unwrap();
    store.offer_work(&second).unwrap();
    store.offer_work(&first).unwrap();
    assert_eq!(store.take_offered_work(1).unwrap(), vec![first.clone()]);
    assert_eq!(store.take_offered_work(10).unwrap(), vec![second.clone()]);
    assert_eq!(store.take_offered_work(10).unwrap(), Vec::<String>::new());
    // Taken, it can be offered again.
    store.offer_work(&first).unwrap();
    assert_eq!(store.take_offered_work(10).unwrap(), vec![first.clone()]);
    assert!(matches!(
        store.offer_work("no-such-thread"),
        Err(StoreError::ThreadNotFound(_))
    ));
    store.offer_work(&third).unwrap();
    store.delete_thread(&third).unwrap();
    assert_eq!(store.take_offered_work(10).unwrap(), Vec::<String>::new());
    // Stale offers: one answered since, one a live run holds.
    store.offer_work(&first).unwrap();
    store.offer_work(&second).unwrap();
    store
        .apply(&first, vec![text(Role::Assistant, "hi")])
        .unwrap();
    let live = LeaseClaim {
        owner: "run".into(),
        ttl_ms: 60_000,
        replacing: None,
    };
    store.claim(&second, &live).unwrap();
    assert_eq!(store.take_offered_work(10).unwrap(), Vec::<String>::new());
    store.release(&second, "run").unwrap();
    assert_eq!(
        store.take_offered_work(10).unwrap(),
        Vec::<String>::new(),
        "a stale offer is taken away"
    );
}

/// Takers at once take every offer between them, and none twice.
pub fn takers_at_once_never_take_one_offer_twice(store: &dyn Store) {
    let offered: Vec<String> = (0..40).map(|_| waiting_thread(store)).collect();
    for t in &offered {
        store.offer_work(t).unwrap();
    }
    let taken = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..4 {
            let taken = &taken;
            scope.spawn(move || loop {
                let some = store.take_offered_work(3).unwrap();
                if some.is_empty() {
                    break;
                }
                taken.lock().unwrap().extend(some);
            });
        }
    });
    let mut taken = taken.into_inner().unwrap();
    taken.sort();
    let mut expected = offered;
    expected.sort();
    assert_eq!(taken, expected);
}
