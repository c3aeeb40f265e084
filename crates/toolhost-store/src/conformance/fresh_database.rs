//! A fresh, empty PostgreSQL database for one test, on the server that
//! `TOOLHOST_TEST_POSTGRES` names (a `postgresql://` URL without a database, such as
//! `postgresql://postgres@%2Ftmp%2Fpg` for a server on a Unix socket in /tmp/pg; the README's
//! test command starts a throwaway cluster and sets it). Dropped with the value. A test that
//! needs one fails, never skips, when it is not set.

use crate::PostgresStore;
use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The variable that names the test server.
pub const SERVER_VARIABLE: &str = "TOOLHOST_TEST_POSTGRES";

/// A database made for one test, dropped (with everything in it) when this is dropped.
pub struct FreshDatabase {
    server: String,
    name: String,
}

impl FreshDatabase {
    /// Creates a database with a name no other test of any process uses.
    pub fn new() -> Self {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let server = std::env::var(SERVER_VARIABLE).unwrap_or_else(|_| {
            panic!(
                "{SERVER_VARIABLE} is not set: the PostgreSQL tests need a server; run them \
                 through the README's test command, which starts a throwaway one"
            )
        });
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let name = format!(
            "toolhost_test_{}_{}_{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        );
        let mut admin = admin(&server);
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|e| panic!("creating the test database {name}: {e}"));
        Self { server, name }
    }

    /// The name of this database.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The URL of this database.
    pub fn url(&self) -> String {
        format!("{}/{}", self.server.trim_end_matches('/'), self.name)
    }

    /// A client of this database, for a test that looks under the store.
    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url(), postgres::NoTls)
            .unwrap_or_else(|e| panic!("connecting to the test database {}: {e}", self.name))
    }

    /// A store on this database (each call connects anew, as another node would).
    pub fn store(&self) -> PostgresStore {
        PostgresStore::connect(&self.url()).expect("connect to the test database")
    }
}

impl Default for FreshDatabase {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for FreshDatabase {
    fn drop(&mut self) {
        let _ = admin(&self.server).batch_execute(&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        ));
    }
}

fn admin(server: &str) -> postgres::Client {
    postgres::Client::connect(
        &format!("{}/postgres", server.trim_end_matches('/')),
        postgres::NoTls,
    )
    .unwrap_or_else(|e| panic!("connecting to the test server ({SERVER_VARIABLE}): {e}"))
}

/// A store on a fresh database, for the conformance suite: the database goes with it.
pub struct FreshStore {
    store: Option<PostgresStore>,
    _database: FreshDatabase,
}

impl FreshStore {
    /// A store on a database of its own.
    pub fn new() -> Self {
        let database = FreshDatabase::new();
        Self {
            store: Some(database.store()),
            _database: database,
        }
    }
}

impl Default for FreshStore {
    fn default() -> Self {
        Self::new()
    }
}

impl Deref for FreshStore {
    type Target = PostgresStore;
    fn deref(&self) -> &PostgresStore {
        self.store.as_ref().expect("the store lives until dropped")
    }
}

impl Drop for FreshStore {
    fn drop(&mut self) {
        // The store's connections close before its database is dropped.
        drop(self.store.take());
    }
}
