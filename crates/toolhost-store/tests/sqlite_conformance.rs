//! The SQLite backend passes the store conformance suite, on a real database file.

mod common;

toolhost_store::store_conformance_tests!(common::TempStore::new());
