//! A store in a fresh database file under the system's temporary folder, removed when dropped.

#![allow(dead_code)]

use std::ops::Deref;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use toolhost_store::SqliteStore;

pub struct TempStore {
    pub dir: PathBuf,
    store: SqliteStore,
}

pub fn temp_dir() -> PathBuf {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!(
        "toolhost-store-{}-{}-{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

impl TempStore {
    pub fn new() -> Self {
        let dir = temp_dir();
        let store = SqliteStore::open(&dir.join("toolhost.db")).expect("open store");
        Self { dir, store }
    }
}

impl Deref for TempStore {
    type Target = SqliteStore;
    fn deref(&self) -> &SqliteStore {
        &self.store
    }
}

impl Drop for TempStore {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
