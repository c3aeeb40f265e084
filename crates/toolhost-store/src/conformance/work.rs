//! Conformance case for the threads a starting server takes up.

use super::{text, thread};
use crate::*;

/// Running threads, and idle ones with queued work or an unanswered message from a person, are
/// found, oldest first; threads that are answered, paused, done or failed are not.
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
    let _paused = with(vec![
        text(Role::User, "pay"),
        Write::SetStatus(ThreadStatus::Paused),
    ]);
    let _done = with(vec![
        text(Role::User, "bye"),
        Write::SetStatus(ThreadStatus::Done),
    ]);
    let _failed = with(vec![
        text(Role::User, "bye"),
        Write::SetStatus(ThreadStatus::Failed),
    ]);
    assert_eq!(
        store.threads_with_work().unwrap(),
        [unanswered, running, queued]
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
