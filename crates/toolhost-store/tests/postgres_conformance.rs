//! The PostgreSQL backend passes the store conformance suite, each case on a database of its
//! own on a real server (`TOOLHOST_TEST_POSTGRES`).

toolhost_store::store_conformance_tests!(
    toolhost_store::conformance::fresh_database::FreshStore::new()
);
