//! The in-memory SQLite store (writes applied on the caller's thread, no writer thread) passes
//! the store conformance suite too.

toolhost_store::store_conformance_tests!(Box::new(
    toolhost_store::SqliteStore::in_memory().unwrap()
));
