//! The PostgreSQL schema, as an ordered list of migrations (never edit a released one: add
//! one), and the migration of a database under a session advisory lock: of many nodes that start
//! together on a new database, one migrates and the others wait for it, then see it done.

use super::conn::{col, Conn};
use super::MIGRATION_LOCK;
use crate::error::{StoreError, StoreResult};

/// Migration `i` brings the database from version `i` to `i + 1`. The tables and columns are
/// SQLite's (`threads.ord` stands for SQLite's rowid: the order threads were created in).
pub(super) const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE threads (
    id TEXT PRIMARY KEY,
    ord BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    agent TEXT NOT NULL,
    parent TEXT REFERENCES threads(id),
    tags TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    message_count BIGINT NOT NULL DEFAULT 0,
    message_seq_sum BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX threads_by_parent ON threads(parent);
CREATE INDEX threads_by_age ON threads(created_at, ord);

CREATE TABLE messages (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    thread TEXT NOT NULL REFERENCES threads(id),
    role TEXT NOT NULL,
    content TEXT,
    name TEXT,
    tool_calls TEXT NOT NULL,
    tool_call_id TEXT,
    created_at BIGINT NOT NULL,
    parent_id TEXT,
    depth BIGINT NOT NULL,
    silent BOOLEAN NOT NULL,
    metadata TEXT NOT NULL,
    status TEXT
);
CREATE INDEX messages_by_thread ON messages(thread, seq);

-- Each thread's count of messages and sum of their positions (`Store::message_tally`).
CREATE FUNCTION toolhost_messages_tally() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE threads SET message_count = message_count + 1,
            message_seq_sum = message_seq_sum + NEW.seq WHERE id = NEW.thread;
    ELSE
        UPDATE threads SET message_count = message_count - 1,
            message_seq_sum = message_seq_sum - OLD.seq WHERE id = OLD.thread;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER messages_tally AFTER INSERT OR DELETE ON messages
    FOR EACH ROW EXECUTE FUNCTION toolhost_messages_tally();

CREATE TABLE calls (
    thread TEXT NOT NULL REFERENCES threads(id),
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    message_id TEXT,
    state TEXT NOT NULL,
    result_message_id TEXT,
    intent_at BIGINT NOT NULL,
    completed_at BIGINT,
    position BIGINT NOT NULL,
    PRIMARY KEY (thread, call_id)
);
CREATE INDEX calls_by_position ON calls(thread, position);

CREATE TABLE kv (
    thread TEXT NOT NULL REFERENCES threads(id),
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    bytes BIGINT NOT NULL,
    PRIMARY KEY (thread, key)
);

CREATE TABLE queue (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    thread TEXT NOT NULL REFERENCES threads(id),
    item TEXT NOT NULL
);
CREATE INDEX queue_by_thread ON queue(thread, seq);

CREATE TABLE queue_keys (
    thread TEXT NOT NULL REFERENCES threads(id),
    key TEXT NOT NULL,
    PRIMARY KEY (thread, key)
);

CREATE TABLE events (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    thread TEXT NOT NULL REFERENCES threads(id),
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    at BIGINT NOT NULL,
    bytes BIGINT NOT NULL
);
CREATE INDEX events_by_thread ON events(thread, seq);

CREATE TABLE files (
    thread TEXT NOT NULL REFERENCES threads(id),
    path TEXT NOT NULL,
    parent TEXT NOT NULL,
    is_folder BOOLEAN NOT NULL,
    size BIGINT NOT NULL,
    mime_type TEXT,
    message_id TEXT,
    modified_at BIGINT NOT NULL,
    PRIMARY KEY (thread, path)
);
CREATE INDEX files_by_parent ON files(thread, parent);

CREATE TABLE file_chunks (
    thread TEXT NOT NULL,
    path TEXT NOT NULL,
    idx BIGINT NOT NULL,
    bytes BYTEA NOT NULL,
    PRIMARY KEY (thread, path, idx)
);

CREATE TABLE approvals (
    thread TEXT NOT NULL REFERENCES threads(id),
    call_id TEXT NOT NULL,
    request TEXT NOT NULL,
    decision TEXT,
    requested_at BIGINT NOT NULL,
    decided_at BIGINT,
    seq BIGINT NOT NULL,
    PRIMARY KEY (thread, call_id)
);

CREATE TABLE variables (
    thread TEXT NOT NULL REFERENCES threads(id),
    name TEXT NOT NULL,
    secret BOOLEAN NOT NULL,
    value TEXT NOT NULL,
    set_at BIGINT NOT NULL,
    PRIMARY KEY (thread, name)
);

CREATE TABLE variable_requests (
    thread TEXT NOT NULL REFERENCES threads(id),
    id TEXT NOT NULL,
    ord BIGINT GENERATED ALWAYS AS IDENTITY,
    names TEXT NOT NULL,
    requested_at BIGINT NOT NULL,
    answered_at BIGINT,
    PRIMARY KEY (thread, id)
);

CREATE TABLE leases (
    thread TEXT PRIMARY KEY REFERENCES threads(id),
    owner TEXT NOT NULL,
    since BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    stop_requested BOOLEAN NOT NULL
);

CREATE TABLE tokens (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    secret_hash TEXT NOT NULL,
    scopes TEXT NOT NULL,
    agents TEXT,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT,
    expires_at BIGINT
);

CREATE TABLE credentials (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    version BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
"#,
    r#"
-- Work a node stored but had no room to run, offered to any node (`Store::offer_work`); taken
-- with FOR UPDATE SKIP LOCKED, so nodes taking at once neither collide nor wait.
-- Taken in the order offered (`ord`: offers are written under the cluster's write lock).
CREATE TABLE work_offers (
    thread TEXT PRIMARY KEY REFERENCES threads(id),
    ord BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    offered_at BIGINT NOT NULL
);
"#,
];

/// The schema version this build writes.
pub(super) const VERSION: i64 = MIGRATIONS.len() as i64;

/// Brings the database's schema up to date, under the migration lock; a database from a newer
/// toolhost is refused with [`StoreError::SchemaTooNew`] and left as it is.
pub(super) fn migrate(conn: &mut Conn) -> StoreResult<()> {
    conn.exec("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])?;
    let result = migrate_locked(conn);
    // Also after a failure: the session lock would otherwise be held until the connection ends.
    let unlocked = conn.exec("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK]);
    result?;
    unlocked.map(|_| ())
}

fn migrate_locked(conn: &mut Conn) -> StoreResult<()> {
    conn.batch(
        "CREATE TABLE IF NOT EXISTS toolhost_schema (version BIGINT NOT NULL);
         INSERT INTO toolhost_schema (version)
             SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM toolhost_schema);",
    )?;
    let row = conn.one("SELECT version FROM toolhost_schema", &[])?;
    let version: i64 = col(&row, 0)?;
    if version > VERSION {
        return Err(StoreError::SchemaTooNew {
            found: version,
            known: VERSION,
        });
    }
    for (done, migration) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        conn.batch("BEGIN")?;
        let step = conn.batch(migration).and_then(|()| {
            conn.exec(
                "UPDATE toolhost_schema SET version = $1",
                &[&(done as i64 + 1)],
            )
        });
        match step {
            Ok(_) => conn.batch("COMMIT")?,
            Err(e) => {
                let _ = conn.batch("ROLLBACK");
                return Err(e);
            }
        }
    }
    Ok(())
}
