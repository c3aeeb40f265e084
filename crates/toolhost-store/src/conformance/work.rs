//! Conformance case for the threads a starting server takes up.

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
            unanswered,
            running,
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
