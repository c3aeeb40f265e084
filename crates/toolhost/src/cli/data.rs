//! The data folder a command keeps its threads in (`--data`): its store, or an ephemeral one
//! for `:memory:`, and the vault of MCP servers' OAuth grants beside it.

use super::output::{self, BAD_INPUT, INVALID};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use toolhost_runtime::mcp::Vault;
use toolhost_runtime::variables::secrets::SecretKey;
use toolhost_store::{SqliteStore, Store};

/// Where threads are kept unless `--data` says otherwise.
pub const DEFAULT_DATA_DIR: &str = ".toolhost";

#[derive(Debug, Args)]
pub struct DataArg {
    /// The data folder (created if missing); its toolhost.db holds every thread. `:memory:`
    /// keeps everything in memory for this one command: the same semantics, nothing on disk.
    #[arg(long, default_value = DEFAULT_DATA_DIR)]
    pub(super) data: PathBuf,
}

/// `--data :memory:`: an ephemeral store that lives as long as the command.
pub const EPHEMERAL: &str = ":memory:";

pub(super) fn is_ephemeral(data: &Path) -> bool {
    data == Path::new(EPHEMERAL)
}

pub(super) fn open_store(data: &Path) -> Result<Arc<dyn Store>, ExitCode> {
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
