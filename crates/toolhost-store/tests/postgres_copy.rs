//! A SQLite store copied into an empty PostgreSQL database keeps every record of every thread
//! (checked by digest inside the copy, and here by reading both), hands out positions after
//! the copied ones, and a second copy into the same database is refused.

use toolhost_store::conformance::fresh_database::FreshDatabase;
use toolhost_store::copy::copy_sqlite_to_postgres;
use toolhost_store::path::normalize;
use toolhost_store::*;

fn text(role: Role, content: &str) -> Write {
    Write::AppendMessage(NewMessage {
        role: Some(role),
        content: Some(content.into()),
        ..NewMessage::default()
    })
}

#[test]
fn a_folder_is_copied_whole_and_positions_go_on_after_it() {
    let dir = std::env::temp_dir().join(format!(
        "toolhost-copy-{}-{}",
        std::process::id(),
        now_millis()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("toolhost.db");
    let source = SqliteStore::open(&db).unwrap();
    let parent = source
        .create_thread(NewThread {
            agent: "planner".into(),
            tags: vec!["t".into()],
            ..NewThread::default()
        })
        .unwrap()
        .id;
    let child = source
        .create_thread(NewThread {
            agent: "worker".into(),
            parent: Some(parent.clone()),
            ..NewThread::default()
        })
        .unwrap()
        .id;
    let applied = source
        .apply(
            &parent,
            vec![
                text(Role::User, "hello"),
                Write::AppendMessage(NewMessage {
                    role: Some(Role::Assistant),
                    tool_calls: vec![ToolCallRecord {
                        id: "c1".into(),
                        name: "echo".into(),
                        arguments: "{}".into(),
                    }],
                    silent: true,
                    depth: 2,
                    ..NewMessage::default()
                }),
                Write::RecordIntent(CallIntent {
                    call_id: "c1".into(),
                    tool: "echo".into(),
                    arguments: "{}".into(),
                    message_id: None,
                }),
                Write::CompleteCall {
                    call_id: "c1".into(),
                    result: NewMessage {
                        content: Some("echoed".into()),
                        status: Some(ToolStatus::Success),
                        ..NewMessage::default()
                    },
                },
                Write::SetValue {
                    key: "k".into(),
                    value: Some(serde_json::json!({"a": [1, 2]})),
                },
                Write::Enqueue(QueueItem::Message {
                    role: Role::User,
                    content: "queued".into(),
                }),
                Write::Event {
                    kind: EventKind::Custom("note".into()),
                    data: serde_json::json!({"n": 1}),
                },
                Write::WriteFile {
                    path: normalize("/docs/big.bin").unwrap(),
                    bytes: (0..CHUNK_SIZE + 10).map(|i| (i % 251) as u8).collect(),
                    mime_type: Some("application/octet-stream".into()),
                    message_id: None,
                },
                Write::SetVariable(StoredVariable {
                    name: "CITY".into(),
                    secret: true,
                    value: "sealed".into(),
                }),
                Write::RequestVariables {
                    id: "r1".into(),
                    names: vec!["CITY".into()],
                },
                text(Role::User, "gone soon"),
            ],
        )
        .unwrap();
    // A removed message leaves a gap that the copy must not hand out again.
    let removed = applied.messages.last().unwrap().clone();
    source
        .apply(&parent, vec![Write::DeleteMessage(removed.id.clone())])
        .unwrap();
    source
        // PostgreSQL keeps U+FFFD for U+0000: the copy still reads back the same.
        .apply(&child, vec![text(Role::User, "child\0")])
        .unwrap();
    source
        .create_token(&ApiToken {
            id: "tok1".into(),
            name: "ci".into(),
            secret_hash: "ab".repeat(32),
            scopes: vec!["read".into()],
            agents: None,
            created_at: 1,
            revoked_at: None,
            expires_at: Some(99),
        })
        .unwrap();
    source
        .put_credential("mcp:x", "sealed-grant", None)
        .unwrap();
    drop(source);

    let database = FreshDatabase::new();
    let mut steps = 0;
    let report = copy_sqlite_to_postgres(&db, &database.url(), &mut |_| steps += 1).unwrap();
    assert_eq!(report.threads.len(), 2);
    assert!(steps > 2, "progress was reported");
    let copied = |table: &str| {
        report
            .tables
            .iter()
            .find(|(name, _)| name == table)
            .unwrap()
            .1
    };
    assert_eq!(copied("file_chunks"), 2);
    assert_eq!(copied("messages"), 4);

    let source = SqliteStore::open(&db).unwrap();
    let target = database.store();
    for thread in [&parent, &child] {
        assert_eq!(
            source.thread(thread).unwrap(),
            target.thread(thread).unwrap()
        );
        // U+0000 in text is U+FFFD on PostgreSQL.
        let held = |messages: Vec<toolhost_store::Message>| -> Vec<toolhost_store::Message> {
            messages
                .into_iter()
                .map(|mut m| {
                    m.content = m.content.map(|c| c.replace('\0', "\u{FFFD}"));
                    m
                })
                .collect()
        };
        assert_eq!(
            held(source.messages(thread).unwrap()),
            target.messages(thread).unwrap()
        );
        assert_eq!(source.calls(thread).unwrap(), target.calls(thread).unwrap());
        assert_eq!(
            source.message_tally(thread).unwrap(),
            target.message_tally(thread).unwrap()
        );
    }
    assert_eq!(target.threads(Some(&parent)).unwrap().len(), 1);
    assert_eq!(
        target.credential("mcp:x").unwrap(),
        source.credential("mcp:x").unwrap()
    );
    // New positions come after every position the folder handed out.
    let next = target
        .apply(&child, vec![text(Role::User, "after")])
        .unwrap()
        .messages[0]
        .seq;
    assert!(next > removed.seq, "{next} <= {}", removed.seq);

    // A second copy into a database that holds threads is refused, changing nothing.
    let again = copy_sqlite_to_postgres(&db, &database.url(), &mut |_| {}).unwrap_err();
    assert!(again.to_string().contains("already holds"), "{again}");
    assert_eq!(target.threads(None).unwrap().len(), 2);
    drop(source);
    let _ = std::fs::remove_dir_all(dir);
}
