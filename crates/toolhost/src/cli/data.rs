//! Where a command keeps its threads (`--data`, also spelled `--store`): a data folder and its
//! SQLite store, an ephemeral store for `:memory:`, or a PostgreSQL database for a
//! `postgres://` URL (shared by many nodes); and the vault of MCP servers' OAuth grants beside
//! it. `TOOLHOST_STORE` is the default when the flag is not given.

use super::output::{self, BAD_INPUT, INVALID};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use toolhost_runtime::mcp::Vault;
use toolhost_runtime::variables::secrets::SecretKey;
use toolhost_store::secrets::SECRET_KEY_ENV;
use toolhost_store::{PostgresStore, SqliteStore, Store};

/// Where threads are kept unless `--data` or `TOOLHOST_STORE` says otherwise.
pub const DEFAULT_DATA_DIR: &str = ".toolhost";

/// The variable that names the store when `--data` is not given.
pub const STORE_ENV: &str = "TOOLHOST_STORE";

#[derive(Debug, Args)]
pub struct DataArg {
    /// The data folder (created if missing); its toolhost.db holds every thread. `:memory:`
    /// keeps everything in memory for this one command: the same semantics, nothing on disk. A
    /// `postgres://` URL keeps them in that PostgreSQL database, which many nodes can share.
    /// Default: TOOLHOST_STORE, else `.toolhost`.
    // The default is not shown in the help: TOOLHOST_STORE may hold a password.
    #[arg(long, visible_alias = "store", default_value = default_data(), hide_default_value = true)]
    pub(super) data: PathBuf,
}

/// `TOOLHOST_STORE` when set, else the default data folder.
pub fn default_data() -> &'static str {
    static DEFAULT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DEFAULT.get_or_init(|| {
        std::env::var(STORE_ENV)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_DATA_DIR.to_owned())
    })
}

/// Whether `data` names a PostgreSQL database rather than a folder.
pub fn is_postgres(data: &Path) -> bool {
    data.to_str()
        .is_some_and(|d| d.starts_with("postgres://") || d.starts_with("postgresql://"))
}

/// `data` as it may be shown (in output, errors and hints): a database as `postgres://` and
/// what toolhost reads of its address (user, hosts, ports, database), never its password,
/// wherever the address put it.
pub fn shown(data: &Path) -> String {
    if !is_postgres(data) {
        return data.display().to_string();
    }
    format!(
        "postgres://{}",
        PostgresStore::address_shown(data.to_str().unwrap_or_default())
    )
}

/// The secrets key of a store in PostgreSQL: every node that shares the database must seal and
/// open secrets with the same key, so it comes from `TOOLHOST_SECRET_KEY`, never from a file
/// one node made.
pub(super) fn shared_secret_key() -> Result<SecretKey, String> {
    if std::env::var_os(SECRET_KEY_ENV).is_none() {
        return Err(format!(
            "a PostgreSQL store needs {SECRET_KEY_ENV} (64 hex digits), the same on every node \
             that shares the database"
        ));
    }
    SecretKey::load_or_create(Path::new("")).map_err(|e| e.to_string())
}

/// `--data :memory:`: an ephemeral store that lives as long as the command.
pub const EPHEMERAL: &str = ":memory:";

pub(super) fn is_ephemeral(data: &Path) -> bool {
    data == Path::new(EPHEMERAL)
}

pub(super) fn open_store(data: &Path) -> Result<Arc<dyn Store>, ExitCode> {
    if is_postgres(data) {
        let url = data.to_str().unwrap_or_default();
        return PostgresStore::connect(url)
            .map(|s| Arc::new(s) as Arc<dyn Store>)
            .map_err(|e| {
                output::error(
                    &format!("the store at {} could not be opened.", shown(data)),
                    Some(&e),
                );
                output::exit(INVALID)
            });
    }
    if is_ephemeral(data) {
        return SqliteStore::in_memory()
            .map(|s| Arc::new(s) as Arc<dyn Store>)
            .map_err(|e| {
                output::error("the in-memory store could not be created.", Some(&e));
                output::exit(INVALID)
            });
    }
    std::fs::create_dir_all(data).map_err(|e| {
        output::error(
            &format!("the data folder {} could not be created.", data.display()),
            Some(&e),
        );
        output::exit(BAD_INPUT)
    })?;
    let store = SqliteStore::open(&data.join("toolhost.db")).map_err(|e| {
        output::error(
            &format!("the store in {} could not be opened.", data.display()),
            Some(&e),
        );
        output::exit(INVALID)
    })?;
    Ok(Arc::new(store))
}

/// Where MCP servers' OAuth grants are kept: the data folder's store, sealed with its secrets
/// key; nothing is opened or created until a grant is kept (a run refused before it starts
/// leaves no folder); none for an ephemeral store.
pub(super) fn mcp_vault(data: &Path) -> Option<Arc<Vault>> {
    if is_ephemeral(data) {
        return None;
    }
    if is_postgres(data) {
        let url = data.to_str().unwrap_or_default().to_owned();
        let open = move || {
            let store = PostgresStore::connect(&url).map_err(|e| e.to_string())?;
            let key = shared_secret_key()?;
            Ok((Arc::new(store) as Arc<dyn Store>, key))
        };
        return Some(Arc::new(Vault::deferred(open, || true)));
    }
    let (folder, db) = (data.to_owned(), data.join("toolhost.db"));
    let exists = db.clone();
    let open = move || {
        std::fs::create_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
        let store = SqliteStore::open(&db).map_err(|e| e.to_string())?;
        let key = SecretKey::load_or_create(&folder).map_err(|e| e.to_string())?;
        Ok((Arc::new(store) as Arc<dyn Store>, key))
    };
    Some(Arc::new(Vault::deferred(open, move || exists.is_file())))
}

#[cfg(test)]
mod tests {
    use super::shown;
    use std::path::Path;

    #[test]
    fn a_databases_address_is_shown_without_its_password() {
        let show = |data: &str| shown(Path::new(data));
        for (given, expected) in [
            (
                "postgres://bob:s3cr%40t@db.example:5432/toolhost?sslmode=disable",
                "postgres://bob@db.example:5432/toolhost",
            ),
            ("postgres://bob:pa/ss@db/x", "postgres://bob@db:5432/x"),
            (
                "postgresql://bob@db/x?password=hunter2",
                "postgres://bob@db:5432/x",
            ),
            ("postgresql:///x?host=/run/pg", "postgres:///run/pg/x"),
        ] {
            let text = show(given);
            assert_eq!(text, expected, "{given}");
            for secret in ["s3cr", "pa/ss", "hunter2"] {
                assert!(!text.contains(secret), "{text}");
            }
        }
        assert_eq!(show(".toolhost"), ".toolhost");
    }
}
