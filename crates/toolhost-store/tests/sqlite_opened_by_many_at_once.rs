//! Many connections opening one new database at the same moment all succeed: the migrations run
//! once, under the database's own write lock, and every opener sees the finished schema.

mod common;

use std::sync::{Arc, Barrier};
use toolhost_store::{NewThread, SqliteStore, Store};

#[test]
fn ten_stores_opening_a_new_file_together_all_succeed() {
    for round in 0..5 {
        let dir = common::temp_dir();
        let path = dir.join("toolhost.db");
        let barrier = Arc::new(Barrier::new(10));
        let opened: Vec<Result<SqliteStore, String>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..10)
                .map(|_| {
                    let (barrier, path) = (barrier.clone(), path.clone());
                    scope.spawn(move || {
                        barrier.wait();
                        SqliteStore::open(&path).map_err(|e| e.to_string())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (i, store) in opened.iter().enumerate() {
            let store = store
                .as_ref()
                .unwrap_or_else(|e| panic!("round {round}: opener {i} failed: {e}"));
            let t = store
                .create_thread(NewThread {
                    agent: format!("agent-{i}"),
                    ..NewThread::default()
                })
                .expect("the schema is complete for every opener");
            assert_eq!(store.thread(&t.id).unwrap().agent, format!("agent-{i}"));
        }
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.threads(None).unwrap().len(), 10);
        assert_eq!(store.durability_settings().unwrap(), ("wal".to_owned(), 2));
        drop(opened);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
