//! The SQLite schema, as an ordered list of migrations. Never edit a released migration: add one.

/// Migration `i` brings the database from version `i` to `i + 1`.
pub(super) const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE threads (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    parent TEXT REFERENCES threads(id),
    tags TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX threads_by_parent ON threads(parent);

CREATE TABLE messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    thread TEXT NOT NULL REFERENCES threads(id),
    role TEXT NOT NULL,
    content TEXT,
    name TEXT,
    tool_calls TEXT NOT NULL,
    tool_call_id TEXT,
    created_at INTEGER NOT NULL,
    parent_id TEXT,
    depth INTEGER NOT NULL,
    silent INTEGER NOT NULL,
    metadata TEXT NOT NULL,
    status TEXT
);
CREATE INDEX messages_by_thread ON messages(thread, seq);

CREATE TABLE calls (
    thread TEXT NOT NULL REFERENCES threads(id),
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    message_id TEXT,
    state TEXT NOT NULL,
    result_message_id TEXT,
    intent_at INTEGER NOT NULL,
    completed_at INTEGER,
    position INTEGER NOT NULL,
    PRIMARY KEY (thread, call_id)
);

CREATE TABLE kv (
    thread TEXT NOT NULL REFERENCES threads(id),
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (thread, key)
);

CREATE TABLE queue (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    thread TEXT NOT NULL REFERENCES threads(id),
    item TEXT NOT NULL
);
CREATE INDEX queue_by_thread ON queue(thread, seq);

CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    thread TEXT NOT NULL REFERENCES threads(id),
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    at INTEGER NOT NULL
);
CREATE INDEX events_by_thread ON events(thread, seq);

CREATE TABLE files (
    thread TEXT NOT NULL REFERENCES threads(id),
    path TEXT NOT NULL,
    parent TEXT NOT NULL,
    is_folder INTEGER NOT NULL,
    size INTEGER NOT NULL,
    mime_type TEXT,
    message_id TEXT,
    modified_at INTEGER NOT NULL,
    PRIMARY KEY (thread, path)
);
CREATE INDEX files_by_parent ON files(thread, parent);

CREATE TABLE file_chunks (
    thread TEXT NOT NULL,
    path TEXT NOT NULL,
    idx INTEGER NOT NULL,
    bytes BLOB NOT NULL,
    PRIMARY KEY (thread, path, idx)
);
"#,
    r#"
CREATE TABLE approvals (
    thread TEXT NOT NULL REFERENCES threads(id),
    call_id TEXT NOT NULL,
    request TEXT NOT NULL,
    decision TEXT,
    requested_at INTEGER NOT NULL,
    decided_at INTEGER,
    seq INTEGER NOT NULL,
    PRIMARY KEY (thread, call_id)
);

CREATE TABLE variables (
    thread TEXT NOT NULL REFERENCES threads(id),
    name TEXT NOT NULL,
    secret INTEGER NOT NULL,
    value TEXT NOT NULL,
    set_at INTEGER NOT NULL,
    PRIMARY KEY (thread, name)
);

CREATE TABLE variable_requests (
    thread TEXT NOT NULL REFERENCES threads(id),
    id TEXT NOT NULL,
    names TEXT NOT NULL,
    requested_at INTEGER NOT NULL,
    answered_at INTEGER,
    PRIMARY KEY (thread, id)
);
"#,
    r#"
-- The next call position is found from this index instead of a scan of the thread's calls.
CREATE INDEX calls_by_position ON calls(thread, position);
"#,
    r#"
-- At most one run owns a thread: the lease is claimed, renewed and released with
-- compare-and-set; an expired lease may be taken over.
CREATE TABLE leases (
    thread TEXT PRIMARY KEY REFERENCES threads(id),
    owner TEXT NOT NULL,
    since INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    stop_requested INTEGER NOT NULL
);
"#,
    r#"
-- API tokens of the HTTP server: the hash of each secret, never the secret.
CREATE TABLE tokens (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    secret_hash TEXT NOT NULL,
    scopes TEXT NOT NULL,
    agents TEXT,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);
"#,
    r#"
-- A token may expire; tokens stored before this migration never do.
ALTER TABLE tokens ADD COLUMN expires_at INTEGER;
"#,
    r#"
-- The keys of work queued once (`Write::EnqueueOnce`), kept after the work is taken.
CREATE TABLE queue_keys (
    thread TEXT NOT NULL REFERENCES threads(id),
    key TEXT NOT NULL,
    PRIMARY KEY (thread, key)
);
"#,
    r#"
-- Credentials of the project (an MCP server's OAuth grant), sealed by their writer; `version`
-- counts the writes, so that two processes renewing one grant cannot both win.
CREATE TABLE credentials (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    version INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
"#,
    r#"
-- What tools store, in bytes, for the limits of `Write::CheckUsage`: each value's key and JSON,
-- each event of a tool's own (toolhost's events count 0). Summed from covering indexes, so a
-- check never reads the values or the events themselves.
ALTER TABLE kv ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;
UPDATE kv SET bytes = length(CAST(key AS BLOB)) + length(CAST(value AS BLOB));
CREATE INDEX kv_bytes ON kv(thread, bytes);
ALTER TABLE events ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;
UPDATE events SET bytes = length(CAST(kind AS BLOB)) + length(CAST(data AS BLOB))
    WHERE kind NOT IN ('approval_requested', 'approval_decided', 'variables_requested',
                       'history_repaired', 'reply_discarded', 'run_ended');
CREATE INDEX events_bytes ON events(thread, bytes) WHERE bytes > 0;
"#,
    r#"
-- Each thread's count of messages and sum of their positions (`Store::message_tally`), kept by
-- triggers on every insert and delete, so that checking a thread's kept history reads one row
-- instead of every message of the thread.
ALTER TABLE threads ADD COLUMN message_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE threads ADD COLUMN message_seq_sum INTEGER NOT NULL DEFAULT 0;
UPDATE threads SET
    message_count = (SELECT COUNT(*) FROM messages WHERE messages.thread = threads.id),
    message_seq_sum = (SELECT COALESCE(SUM(seq), 0) FROM messages WHERE messages.thread = threads.id);
CREATE TRIGGER messages_tally_insert AFTER INSERT ON messages BEGIN
    UPDATE threads SET message_count = message_count + 1,
        message_seq_sum = message_seq_sum + NEW.seq
    WHERE id = NEW.thread;
END;
CREATE TRIGGER messages_tally_delete AFTER DELETE ON messages BEGIN
    UPDATE threads SET message_count = message_count - 1,
        message_seq_sum = message_seq_sum - OLD.seq
    WHERE id = OLD.thread;
END;
"#,
    r#"
-- Work a node stored but had no room to run, offered to any node (`Store::offer_work`).
-- Taken in the order offered (rowid).
CREATE TABLE work_offers (
    thread TEXT PRIMARY KEY,
    offered_at INTEGER NOT NULL
);
"#,
];

#[cfg(test)]
mod tests {
    use super::MIGRATIONS;
    use crate::{SqliteStore, Store};

    /// The version before tokens could expire: the last migration added `expires_at`.
    const BEFORE_EXPIRY: usize = 5;
    /// The version before values and events kept their sizes.
    const BEFORE_SIZES: usize = 8;
    /// The version before threads kept their message tally.
    const BEFORE_TALLY: usize = 9;

    /// A database file as an older toolhost left it: the migrations up to `version`, and its
    /// version, with `rows` (SQL) stored; the folder it is in, and its path.
    fn older_database(
        tag: &str,
        version: usize,
        rows: &str,
    ) -> (std::path::PathBuf, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!(
            "toolhost-store-{tag}-{}-{}",
            std::process::id(),
            crate::model::now_millis()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("toolhost.db");
        let conn = rusqlite::Connection::open(&path).unwrap();
        for migration in &MIGRATIONS[..version] {
            conn.execute_batch(migration).unwrap();
        }
        conn.pragma_update(None, "user_version", version as i64)
            .unwrap();
        conn.execute_batch(rows).unwrap();
        (dir, path)
    }

    #[test]
    fn the_tally_is_filled_in_for_messages_stored_before_it_was_kept() {
        assert!(MIGRATIONS[BEFORE_TALLY].contains("message_count"));
        let (dir, path) = older_database(
            "tally",
            BEFORE_TALLY,
            "INSERT INTO threads (id, agent, tags, status, created_at, updated_at)
                     VALUES ('t', 'a', '[]', 'idle', 1, 1), ('u', 'a', '[]', 'idle', 1, 1);
                 INSERT INTO messages (seq, id, thread, role, tool_calls, created_at, depth,
                         silent, metadata)
                     VALUES (3, 'm3', 't', 'user', '[]', 1, 0, 0, '{}'),
                            (5, 'm5', 't', 'user', '[]', 1, 0, 0, '{}'),
                            (7, 'm7', 'u', 'user', '[]', 1, 0, 0, '{}');",
        );
        let store = SqliteStore::open(&path).unwrap();
        let tally = |t: &str| store.message_tally(t).unwrap();
        assert_eq!((tally("t").count, tally("t").seq_sum), (2, 8));
        assert_eq!((tally("u").count, tally("u").seq_sum), (1, 7));
        // Kept from then on.
        let stored = store
            .apply(
                "t",
                vec![crate::Write::AppendMessage(crate::NewMessage {
                    role: Some(crate::Role::User),
                    content: Some("later".into()),
                    ..Default::default()
                })],
            )
            .unwrap();
        assert_eq!(tally("t").count, 3);
        assert_eq!(tally("t").seq_sum, 8 + stored.messages[0].seq);
        drop(store);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn sizes_are_filled_in_for_what_was_stored_before_they_were_kept() {
        let sizes = MIGRATIONS[BEFORE_SIZES];
        assert!(sizes.contains("ADD COLUMN bytes"));
        // Toolhost's own events are the reserved names, the ones that count nothing.
        for name in crate::EventKind::RESERVED {
            assert!(sizes.contains(&format!("'{name}'")), "{name}");
        }
        let (dir, path) = older_database(
            "sizes",
            BEFORE_SIZES,
            "INSERT INTO threads (id, agent, tags, status, created_at, updated_at)
                     VALUES ('t', 'a', '[]', 'idle', 1, 1);
                 INSERT INTO kv (thread, key, value) VALUES ('t', 'k', '\"abc\"');
                 INSERT INTO events (thread, kind, data, at) VALUES ('t', 'note', '[1]', 1);
                 INSERT INTO events (thread, kind, data, at) VALUES ('t', 'run_ended', '{}', 1);",
        );
        let store = SqliteStore::open(&path).unwrap();
        let check =
            |limits: crate::UsageLimits| store.apply("t", vec![crate::Write::CheckUsage(limits)]);
        // "k" + "\"abc\"" = 6 bytes of values; "note" + "[1]" = 7 bytes of events.
        let values = |limit| crate::UsageLimits {
            value_bytes: Some(limit),
            ..Default::default()
        };
        let events = |limit| crate::UsageLimits {
            event_bytes: Some(limit),
            ..Default::default()
        };
        check(values(6)).unwrap();
        assert!(check(values(5)).is_err());
        check(events(7)).unwrap();
        assert!(check(events(6)).is_err());
        drop(store);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_database_from_before_token_expiry_migrates_and_keeps_its_tokens() {
        assert!(MIGRATIONS[BEFORE_EXPIRY].contains("expires_at"));
        // A file as the older toolhost left it: its migrations, its version, one token.
        let secret_hash = "ab".repeat(32);
        let (dir, path) = older_database(
            "migration",
            BEFORE_EXPIRY,
            &format!(
                "INSERT INTO tokens (id, name, secret_hash, scopes, agents, created_at, revoked_at)
                 VALUES ('a1b2c3d4e5f6', 'ci', '{secret_hash}', '[\"read\"]', '[\"assistant\"]', 1000, NULL)"
            ),
        );
        let store = SqliteStore::open(&path).unwrap();
        let token = store.token("a1b2c3d4e5f6").unwrap().unwrap();
        assert_eq!(token.name, "ci");
        assert_eq!(token.secret_hash, "ab".repeat(32));
        assert_eq!(token.scopes, ["read"]);
        assert_eq!(token.agents, Some(vec!["assistant".to_owned()]));
        assert_eq!((token.created_at, token.revoked_at), (1000, None));
        assert_eq!(token.expires_at, None, "an older token never expires");
        assert!(!token.is_expired(i64::MAX));
        assert_eq!(store.tokens().unwrap(), vec![token]);
        drop(store);
        let conn = rusqlite::Connection::open(&path).unwrap();
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, MIGRATIONS.len() as i64);
        drop(conn);
        let _ = std::fs::remove_dir_all(dir);
    }
}
