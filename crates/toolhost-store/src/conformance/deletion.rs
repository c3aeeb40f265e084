//! Conformance case for deleting a thread: everything of it and of its subtree goes, nothing of
//! another thread does, and a subtree of which a live run owns a thread is left whole.

use super::{assistant_calling, intent, p, result, text};
use crate::*;
use serde_json::json;

/// A thread with something in every part of it: messages, a journaled call and its result,
/// a value, queued work, events, a small and a chunked file, an approval, variables and a
/// variable request.
fn filled_thread(store: &dyn Store, id: &str) -> String {
    let t = store
        .create_thread(NewThread {
            id: Some(id.into()),
            agent: "agent".into(),
            ..NewThread::default()
        })
        .expect("create thread")
        .id;
    store
        .apply(
            &t,
            vec![
                text(Role::User, "hello"),
                assistant_calling(&["c1"]),
                intent("c1"),
            ],
        )
        .unwrap();
    store.apply(&t, vec![result("c1", "done")]).unwrap();
    store
        .apply(
            &t,
            vec![
                Write::SetValue {
                    key: "k".into(),
                    value: Some(json!({"v": 1})),
                },
                Write::Enqueue(QueueItem::Message {
                    role: Role::User,
                    content: "later".into(),
                }),
                Write::Event {
                    kind: EventKind::Custom("noted".into()),
                    data: json!(1),
                },
                Write::WriteFile {
                    path: p("/notes/a.txt"),
                    bytes: b"note".to_vec(),
                    mime_type: Some("text/plain".into()),
                    message_id: None,
                },
                Write::WriteFile {
                    path: p("/attachments/big.bin"),
                    bytes: vec![9; CHUNK_SIZE * 2 + 3],
                    mime_type: None,
                    message_id: None,
                },
                Write::RequestApproval(ApprovalRequest {
                    call_id: "c2".into(),
                    tool: "pay".into(),
                    arguments: json!({}),
                    args_hash: "h".into(),
                    tool_fingerprint: "f".into(),
                    reason: None,
                    reject_message: None,
                }),
                Write::SetVariable(StoredVariable {
                    name: "region".into(),
                    secret: false,
                    value: "eu".into(),
                }),
                Write::RequestVariables {
                    id: "r1".into(),
                    names: vec!["key".into()],
                },
            ],
        )
        .unwrap();
    t
}

/// Everything a thread holds, as the store's reads return it.
#[derive(Debug, PartialEq)]
struct Contents {
    messages: Vec<Message>,
    calls: Vec<CallRecord>,
    values: Vec<(String, serde_json::Value)>,
    queued: Vec<Queued>,
    events: Vec<Event>,
    files: Vec<FileStat>,
    big: Option<Vec<u8>>,
    approvals: Vec<ApprovalRecord>,
    variables: Vec<StoredVariable>,
    requests: Vec<VariableRequest>,
    lease: Option<Lease>,
}

fn contents(store: &dyn Store, t: &str) -> Contents {
    let big = p("/attachments/big.bin");
    Contents {
        messages: store.messages(t).unwrap(),
        calls: store.calls(t).unwrap(),
        values: store.values(t).unwrap(),
        queued: store.queued(t).unwrap(),
        events: store.events(t, 0).unwrap(),
        files: store.find(t, &p("/"), "*").unwrap(),
        big: store
            .stat(t, &big)
            .unwrap()
            .map(|_| store.read_file(t, &big).unwrap()),
        approvals: store.approvals(t).unwrap(),
        variables: store.variables(t).unwrap(),
        requests: store.variable_requests(t).unwrap(),
        lease: store.lease(t).unwrap(),
    }
}

/// Deleting a thread removes every part of it and its subtree in one step (a thread made again
/// under the same id starts empty) and leaves other threads as they were; a live owner of any
/// thread of the subtree refuses the deletion and changes nothing; an expired lease does not.
pub fn deleting_a_thread_removes_all_of_it_and_nothing_else(store: &dyn Store) {
    let gone = filled_thread(store, "thread-to-delete");
    let kept = filled_thread(store, "thread-to-keep");
    let kept_before = contents(store, &kept);
    assert_eq!(kept_before.files.len(), 4, "{:?}", kept_before.files);

    // A live run owns it: refused, naming the owner.
    let live = LeaseClaim {
        owner: "run-live".into(),
        ttl_ms: 60_000,
        replacing: None,
    };
    store.claim(&gone, &live).unwrap();
    let before = contents(store, &gone);
    match store.delete_thread(&gone) {
        Err(StoreError::ThreadOwned { thread, lease }) => {
            assert_eq!(thread, gone);
            assert_eq!(lease.owner, "run-live");
        }
        other => panic!("a thread owned by a live run was deleted: {other:?}"),
    }
    assert_eq!(contents(store, &gone), before, "a refusal changed nothing");
    assert!(store.release(&gone, "run-live").unwrap());

    // A subtree: deleted with the thread, and refused whole while a run owns a thread of it.
    let child = store
        .create_thread(NewThread {
            agent: "agent".into(),
            parent: Some(gone.clone()),
            ..NewThread::default()
        })
        .unwrap()
        .id;
    let grandchild = store
        .create_thread(NewThread {
            agent: "agent".into(),
            parent: Some(child.clone()),
            writes: vec![text(Role::User, "deep")],
            ..NewThread::default()
        })
        .unwrap()
        .id;
    store.claim(&grandchild, &live).unwrap();
    let before = contents(store, &gone);
    match store.delete_thread(&gone) {
        Err(StoreError::ThreadOwned { thread, lease }) => {
            assert_eq!(thread, grandchild);
            assert_eq!(lease.owner, "run-live");
        }
        other => panic!("a subtree with a live run was deleted: {other:?}"),
    }
    assert_eq!(contents(store, &gone), before, "a refusal changed nothing");
    assert_eq!(store.messages(&grandchild).unwrap().len(), 1);
    assert!(store.release(&grandchild, "run-live").unwrap());

    // An expired lease (its run died) does not hold the thread.
    let dead = LeaseClaim {
        owner: "run-dead".into(),
        ttl_ms: 1,
        replacing: None,
    };
    store.claim(&gone, &dead).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    store.delete_thread(&gone).unwrap();

    assert!(matches!(
        store.thread(&gone),
        Err(StoreError::ThreadNotFound(id)) if id == gone
    ));
    assert!(matches!(
        store.messages(&gone),
        Err(StoreError::ThreadNotFound(_))
    ));
    // Its subtree went with it.
    for descendant in [&child, &grandchild] {
        assert!(matches!(
            store.messages(descendant),
            Err(StoreError::ThreadNotFound(_))
        ));
    }
    assert!(matches!(
        store.delete_thread(&gone),
        Err(StoreError::ThreadNotFound(_))
    ));
    let listed: Vec<String> = store
        .threads(None)
        .unwrap()
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(listed, vec![kept.clone()]);

    // Nothing of it was left behind: a thread made under the same id holds nothing.
    store
        .create_thread(NewThread {
            id: Some(gone.clone()),
            agent: "agent".into(),
            ..NewThread::default()
        })
        .unwrap();
    assert_eq!(
        contents(store, &gone),
        Contents {
            messages: vec![],
            calls: vec![],
            values: vec![],
            queued: vec![],
            events: vec![],
            files: vec![],
            big: None,
            approvals: vec![],
            variables: vec![],
            requests: vec![],
            lease: None,
        }
    );
    assert_eq!(
        contents(store, &kept),
        kept_before,
        "the other thread is untouched"
    );
}
