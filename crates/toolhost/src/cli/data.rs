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
    #[arg(long, visible_alias = "store", default_value = default_data())]
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

/// `data` as it may be shown (in output, errors and hints): a database's address without its
/// password.
pub fn shown(data: &Path) -> String {
    let text = data.display().to_string();
    if !is_postgres(data) {
        return text;
    }
    let Some((scheme, rest)) = text.split_once("://") else {
        return text;
    };
    // The user information ends at the last `@` before the host.
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => {
            let userinfo = &rest[..at];
            let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
            let hidden = if userinfo.contains(':') { ":***" } else { "" };
            format!("{scheme}://{user}{hidden}{}", &rest[at..])
        }
        None => text,
    }
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
        assert_eq!(
            show("postgres://bob:s3cr@t@db.example:5432/toolhost?sslmode=disable"),
            "postgres://bob:***@db.example:5432/toolhost?sslmode=disable"
        );
        assert_eq!(show("postgresql://bob@db/x"), "postgresql://bob@db/x");
        assert_eq!(
            show("postgresql:///x?host=/run/pg"),
            "postgresql:///x?host=/run/pg"
        );
        assert_eq!(show(".toolhost"), ".toolhost");
    }
}
