//! Where a project keeps its MCP servers' grants: the store's credentials, sealed with the
//! data folder's secrets key, so that nothing in the database reads as a token.

use super::Grant;
use std::sync::Arc;
use toolhost_store::secrets::SecretKey;
use toolhost_store::Store;

/// The sealed grants of one project's MCP servers.
pub struct Vault {
    opened: std::sync::OnceLock<(Arc<dyn Store>, SecretKey)>,
    open: Box<Opener>,
    exists: Box<dyn Fn() -> bool + Send + Sync>,
}

/// Opens the store and the key a deferred vault keeps grants in.
type Opener = dyn Fn() -> Result<(Arc<dyn Store>, SecretKey), String> + Send + Sync;

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
    /// Grants kept in `store`, sealed with `key`.
    pub fn new(store: Arc<dyn Store>, key: SecretKey) -> Self {
        let opened = std::sync::OnceLock::new();
        let _ = opened.set((store, key));
        Vault {
            opened,
            open: Box::new(|| Err("the vault is open".to_owned())),
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
            open: Box::new(open),
            exists: Box::new(exists),
        }
    }

    /// The store and key, opened (and created) now if need be.
    fn opened(&self) -> Result<&(Arc<dyn Store>, SecretKey), String> {
        if let Some(opened) = self.opened.get() {
            return Ok(opened);
        }
        let opened = (self.open)()?;
        Ok(self.opened.get_or_init(|| opened))
    }

    /// The grant of `server`, if one is kept; an unreadable one is an error that says so.
    pub fn load(&self, server: &str) -> Result<Option<Kept>, String> {
        if self.opened.get().is_none() && !(self.exists)() {
            return Ok(None);
        }
        let (store, key) = self.opened()?;
        let name = credential(server);
        let Some(stored) = store.credential(&name).map_err(|e| e.to_string())? else {
            return Ok(None);
        };
        let text = key
            .open(CONTEXT, &name, &stored.value)
            .map_err(|_| format!("the kept authorization of MCP server \"{server}\" cannot be opened with this data folder's key; log in again"))?;
        let grant: Grant = serde_json::from_str(&text).map_err(|e| {
            format!(
                "the kept authorization of MCP server \"{server}\" is damaged ({e}); log in again"
            )
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
    ) -> Result<Option<i64>, String> {
        let (store, key) = self.opened()?;
        let name = credential(server);
        let text = serde_json::to_string(grant).map_err(|e| e.to_string())?;
        let sealed = key.seal(CONTEXT, &name, &text).map_err(|e| e.to_string())?;
        store
            .put_credential(&name, &sealed, expected)
            .map_err(|e| e.to_string())
    }

    /// Keeps `grant` for `server` whatever was kept before (a person just logged in).
    pub fn replace(&self, server: &str, grant: &Grant) -> Result<(), String> {
        for _ in 0..8 {
            let expected = self
                .opened()?
                .0
                .credential(&credential(server))
                .map_err(|e| e.to_string())?
                .map(|stored| stored.version);
            if self.save(server, grant, expected)?.is_some() {
                return Ok(());
            }
        }
        Err(format!(
            "the authorization of MCP server \"{server}\" kept changing under the write"
        ))
    }

    /// Forgets the grant of `server`; `false` when there was none.
    pub fn forget(&self, server: &str) -> Result<bool, String> {
        self.opened()?
            .0
            .delete_credential(&credential(server))
            .map_err(|e| e.to_string())
    }
}
