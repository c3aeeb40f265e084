//! TLS to the database server, on the test server's loopback port (`TOOLHOST_TEST_POSTGRES_TCP`)
//! whose certificate a test authority signed (`TOOLHOST_TEST_POSTGRES_CA`): the README's test
//! command sets both up. A connection is encrypted unless the address says `sslmode=disable`,
//! and the server's certificate is verified whatever the mode: a server that an authority the
//! node does not trust vouches for is refused, with a sentence that says so.

use toolhost_store::conformance::fresh_database::FreshDatabase;
use toolhost_store::{NewThread, PostgresStore, Store};

/// The variable `name` names, which the README's test command sets.
fn needed(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run the tests through the README's test command, which sets it")
    })
}

/// The address of `database` over TCP, with `query`: the host is named `localhost` (what the
/// certificate names), reached at 127.0.0.1 (where the server listens, whatever `localhost`
/// resolves to first).
fn over_tcp(database: &FreshDatabase, query: &str) -> String {
    format!(
        "{}/{}?hostaddr=127.0.0.1&{query}",
        needed("TOOLHOST_TEST_POSTGRES_TCP"),
        database.name()
    )
}

/// Whether every connection to `database` but the one asking is encrypted (and there is one).
fn all_encrypted(database: &FreshDatabase) -> bool {
    let row = database
        .client()
        .query_one(
            "SELECT count(*), coalesce(bool_and(s.ssl), false)
             FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
             WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()",
            &[],
        )
        .unwrap();
    let (count, encrypted): (i64, bool) = (row.get(0), row.get(1));
    assert!(count > 0, "no connection of the store");
    encrypted
}

#[test]
fn a_server_whose_authority_is_named_is_reached_encrypted() {
    let ca = needed("TOOLHOST_TEST_POSTGRES_CA");
    for mode in ["require", "prefer", "verify-ca", "verify-full"] {
        let database = FreshDatabase::new();
        let store = PostgresStore::connect(&over_tcp(
            &database,
            &format!("sslmode={mode}&sslrootcert={ca}"),
        ))
        .unwrap_or_else(|e| panic!("sslmode={mode}: {e}"));
        let thread = store.create_thread(NewThread::default()).unwrap().id;
        assert_eq!(store.thread(&thread).unwrap().id, thread);
        assert!(all_encrypted(&database), "sslmode={mode}");
    }
}

#[test]
fn a_server_no_trusted_authority_vouches_for_is_refused_whatever_the_mode() {
    let other = needed("TOOLHOST_TEST_POSTGRES_OTHER_CA");
    let database = FreshDatabase::new();
    for query in [
        format!("sslmode=require&sslrootcert={other}"),
        // The default mode, and the Mozilla roots, which know nothing of the test authority.
        String::new(),
        "sslmode=require".to_owned(),
    ] {
        let e = PostgresStore::connect(&over_tcp(&database, &query))
            .err()
            .unwrap_or_else(|| panic!("{query:?} was taken"))
            .to_string();
        assert!(
            e.contains("could not connect to PostgreSQL at postgres@localhost:")
                && e.contains("invalid peer certificate")
                && e.contains("sslrootcert=FILE"),
            "{query:?}: {e}"
        );
    }
}

#[test]
fn sslmode_disable_connects_in_the_clear() {
    let database = FreshDatabase::new();
    let store = PostgresStore::connect(&over_tcp(&database, "sslmode=disable")).unwrap();
    store.create_thread(NewThread::default()).unwrap();
    assert!(!all_encrypted(&database));
}

#[test]
fn an_unreadable_authority_file_is_named() {
    let database = FreshDatabase::new();
    let e = PostgresStore::connect(&over_tcp(
        &database,
        "sslmode=require&sslrootcert=/no/such/ca.pem",
    ))
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains("sslrootcert /no/such/ca.pem cannot be read"),
        "{e}"
    );
}
