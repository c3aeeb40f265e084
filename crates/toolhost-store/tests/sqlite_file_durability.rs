//! The SQLite file: WAL with `synchronous=FULL`, data that survives reopening, and a database
//! from a newer toolhost refused without being touched.

mod common;

use common::temp_dir;
use toolhost_store::{
    NewMessage, NewThread, Role, SqliteStore, Store, StoreError, Write, SCHEMA_VERSION,
};

#[test]
fn the_database_runs_in_wal_mode_with_full_synchronisation() {
    let dir = temp_dir();
    let store = SqliteStore::open(&dir.join("t.db")).unwrap();
    assert_eq!(store.durability_settings().unwrap(), ("wal".to_owned(), 2));
    drop(store);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn committed_writes_are_there_after_reopening() {
    let dir = temp_dir();
    let path = dir.join("t.db");
    let id = {
        let store = SqliteStore::open(&path).unwrap();
        let t = store
            .create_thread(NewThread {
                agent: "a".into(),
                ..Default::default()
            })
            .unwrap();
        store
            .apply(
                &t.id,
                vec![Write::AppendMessage(NewMessage {
                    role: Some(Role::User),
                    content: Some("remember me".into()),
                    ..Default::default()
                })],
            )
            .unwrap();
        t.id
    };
    let store = SqliteStore::open(&path).unwrap();
    let messages = store.messages(&id).unwrap();
    assert_eq!(messages[0].content.as_deref(), Some("remember me"));
    drop(store);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_database_from_a_newer_toolhost_is_refused_and_left_alone() {
    let dir = temp_dir();
    let path = dir.join("t.db");
    drop(SqliteStore::open(&path).unwrap());
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 5)
            .unwrap();
    }
    let err = SqliteStore::open(&path).unwrap_err();
    assert!(
        matches!(err, StoreError::SchemaTooNew { found, known } if found == SCHEMA_VERSION + 5 && known == SCHEMA_VERSION)
    );
    assert!(
        err.to_string().contains("newer than this toolhost knows"),
        "{err}"
    );
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION + 5);
    drop(conn);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_store_can_be_shared_between_threads() {
    let dir = temp_dir();
    let store = std::sync::Arc::new(SqliteStore::open(&dir.join("t.db")).unwrap());
    let t = store
        .create_thread(NewThread {
            agent: "a".into(),
            ..Default::default()
        })
        .unwrap()
        .id;
    let handles: Vec<_> = (0..4)
        .map(|w| {
            let store = store.clone();
            let t = t.clone();
            std::thread::spawn(move || {
                for i in 0..25 {
                    store
                        .apply(
                            &t,
                            vec![Write::AppendMessage(NewMessage {
                                content: Some(format!("{w}-{i}")),
                                ..Default::default()
                            })],
                        )
                        .unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(store.messages(&t).unwrap().len(), 100);
    let _ = std::fs::remove_dir_all(dir);
}
