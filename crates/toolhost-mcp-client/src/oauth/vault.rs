//! Where a project keeps its MCP servers' grants: the store's credentials, sealed with the
//! data folder's secrets key, so that nothing in the database reads as a token.

use super::Grant;
use std::sync::Arc;
use toolhost_store::secrets::SecretKey;
use toolhost_store::Store;

/// Why a grant could not be read or kept.
#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    /// The store or the key the grants are kept with could not be opened (or created).
    #[error("the vault of MCP authorizations cannot be opened: {0}")]
    Open(String),
    /// The store refused or failed.
    #[error(transparent)]
    Store(#[from] toolhost_store::StoreError),
    /// The kept grant is sealed with another key than the data folder's.
    #[error("the kept authorization of MCP server \"{server}\" cannot be opened with this data folder's key; log in again")]
    WrongKey {
        /// The server whose grant it is.
        server: String,
    },
    /// The kept grant does not read as a grant.
    #[error(
        "the kept authorization of MCP server \"{server}\" is damaged ({reason}); log in again"
    )]
    Damaged {
        /// The server whose grant it is.
        server: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The grant could not be sealed.
    #[error("the authorization could not be sealed: {0}")]
    Seal(String),
    /// The work on the vault stopped before its end (its task panicked or was cancelled).
    #[error("the work on the vault of MCP authorizations stopped: {0}")]
    Interrupted(String),
    /// Other processes kept writing the grant while this one tried to replace it.
    #[error("the authorization of MCP server \"{server}\" kept changing under the write")]
    Contended {
        /// The server whose grant it is.
        server: String,
    },
}

/// The sealed grants of one project's MCP servers.
pub struct Vault {
    opened: std::sync::OnceLock<(Arc<dyn Store>, SecretKey)>,
    open: Box<Opener>,
    exists: Box<dyn Fn() -> bool + Send + Sync>,
}

/// Opens the store and the key a deferred vault keeps grants in.
type Opener = dyn Fn() -> Result<(Arc<dyn Store>, SecretKey), VaultError> + Send + Sync;

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vault").finish_non_exhaustive()
    }
}

/// A grant as read, with the version a write must name.
#[derive(Debug, Clone)]
pub struct Kept {
    /// The grant.
    pub grant: Grant,
    /// The stored version it was read at.
    pub version: i64,
}

/// The sealing context of every grant (the secrets key seals per thread and name): no thread
/// id looks like it, so a grant can never be opened as a thread's secret or the other way.
const CONTEXT: &str = "toolhost:project-credentials";

fn credential(server: &str) -> String {
    format!("mcp-oauth/{server}")
}

impl Vault {
    /// Runs `call` on the vault on the blocking pool: the vault reads and writes the store,
    /// which may wait for a disk or a database server, and must not hold up the async executor
    /// meanwhile.
    pub(crate) async fn off_executor<T: Send + 'static>(
        self: &Arc<Self>,
        call: impl FnOnce(&Vault) -> Result<T, VaultError> + Send + 'static,
    ) -> Result<T, VaultError> {
        let vault = Arc::clone(self);
        tokio::task::spawn_blocking(move || call(&vault))
            .await
            .unwrap_or_else(|e| Err(VaultError::Interrupted(e.to_string())))
    }

    /// Grants kept in `store`, sealed with `key`.
    pub fn new(store: Arc<dyn Store>, key: SecretKey) -> Self {
        let opened = std::sync::OnceLock::new();
        let _ = opened.set((store, key));
        Vault {
            opened,
            open: Box::new(|| Err(VaultError::Open("it is open already".to_owned()))),
            exists: Box::new(|| true),
        }
    }

    /// Grants kept where `open` opens them (a data folder that may not exist yet): nothing is
    /// opened, or created, until a grant is kept; until `exists` says the place exists, no
    /// grant is read from it.
    pub fn deferred(
        open: impl Fn() -> Result<(Arc<dyn Store>, SecretKey), String> + Send + Sync + 'static,
        exists: impl Fn() -> bool + Send + Sync + 'static,
    ) -> Self {
        Vault {
            opened: std::sync::OnceLock::new(),
            open: Box::new(move || open().map_err(VaultError::Open)),
            exists: Box::new(exists),
        }
    }

    /// The store and key, opened (and created) now if need be.
    fn opened(&self) -> Result<&(Arc<dyn Store>, SecretKey), VaultError> {
        if let Some(opened) = self.opened.get() {
            return Ok(opened);
        }
        let opened = (self.open)()?;
        Ok(self.opened.get_or_init(|| opened))
    }

    /// The grant of `server`, if one is kept; an unreadable one is an error that says so.
    pub fn load(&self, server: &str) -> Result<Option<Kept>, VaultError> {
        if self.opened.get().is_none() && !(self.exists)() {
            return Ok(None);
        }
        let (store, key) = self.opened()?;
        let name = credential(server);
        let Some(stored) = store.credential(&name)? else {
            return Ok(None);
        };
        let text = key
            .open(CONTEXT, &name, &stored.value)
            .map_err(|_| VaultError::WrongKey {
                server: server.to_owned(),
            })?;
        let grant: Grant = serde_json::from_str(&text).map_err(|e| VaultError::Damaged {
            server: server.to_owned(),
            reason: e.to_string(),
        })?;
        Ok(Some(Kept {
            grant,
            version: stored.version,
        }))
    }

    /// Keeps `grant` for `server` if the kept one is still at `expected` (`None`: none was);
    /// the version it is kept at, or `None` when another process wrote (or removed) first.
    pub fn save(
        &self,
        server: &str,
        grant: &Grant,
        expected: Option<i64>,
    ) -> Result<Option<i64>, VaultError> {
        let (store, key) = self.opened()?;
        let name = credential(server);
        let text = serde_json::to_string(grant).map_err(|e| VaultError::Seal(e.to_string()))?;
        let sealed = key
            .seal(CONTEXT, &name, &text)
            .map_err(|e| VaultError::Seal(e.to_string()))?;
        Ok(store.put_credential(&name, &sealed, expected)?)
    }

    /// Keeps `grant` for `server` whatever was kept before (a person just logged in).
    pub fn replace(&self, server: &str, grant: &Grant) -> Result<(), VaultError> {
        for _ in 0..8 {
            let expected = self
                .opened()?
                .0
                .credential(&credential(server))?
                .map(|stored| stored.version);
            if self.save(server, grant, expected)?.is_some() {
                return Ok(());
            }
        }
        Err(VaultError::Contended {
            server: server.to_owned(),
        })
    }

    /// Forgets the grant of `server`; `false` when there was none.
    pub fn forget(&self, server: &str) -> Result<bool, VaultError> {
        Ok(self.opened()?.0.delete_credential(&credential(server))?)
    }
}
