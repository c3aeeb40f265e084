//! The tokens of one MCP server while toolhost talks to it: the bearer each request carries,
//! renewed before it expires and when the server refuses it.

use super::discovery::{chosen_scope, covers, discover, parse_challenge, Challenge, Discovered};
use super::token::{self, Asked};
use super::vault::{Kept, Vault};
use super::{now_ms, Client, Grant, GrantType, OAuthDef};
use crate::server_def::fill;
use std::sync::Arc;
use toolhost_providers::fetch::Fetcher;

/// How long before its expiry a token is renewed.
const RENEW_BEFORE_MS: i64 = 60_000;

/// One server's authorization, shared by its connections.
pub(crate) struct Authorizer {
    server: String,
    url: String,
    def: OAuthDef,
    http: Arc<dyn Fetcher>,
    vault: Option<Arc<Vault>>,
    held: tokio::sync::Mutex<Held>,
    /// Why the last refusal could not be recovered from, until a request is let through: what
    /// a failed handshake or call says instead of the transport's words.
    refused: std::sync::Mutex<Option<String>>,
}

#[derive(Default)]
struct Held {
    /// Whether the vault was read yet.
    loaded: bool,
    grant: Option<Grant>,
    /// The vault's version of `grant` (`None`: not kept there).
    version: Option<i64>,
}

impl Held {
    fn token(&self) -> Option<&str> {
        self.grant.as_ref().map(|g| g.access_token.as_str())
    }

    fn take(&mut self, kept: Kept) {
        self.grant = Some(kept.grant);
        self.version = Some(kept.version);
    }
}

/// The client the server's file names: its own `clientId` (with the secret from toolhost's
/// environment), else its client ID metadata document where the server takes them.
pub(crate) fn configured_client(
    def: &OAuthDef,
    found: &Discovered,
) -> Result<Option<Client>, String> {
    let from_env = |field: &str, written: &Option<String>| -> Result<Option<String>, String> {
        written
            .as_deref()
            .map(|w| {
                fill(w, &|name| std::env::var(name).ok()).map_err(|missing| {
                    format!(
                        "`oauth.{field}` needs the variable {}, which is not in toolhost's environment",
                        missing.name
                    )
                })
            })
            .transpose()
    };
    if let Some(id) = &def.client_id {
        let secret = from_env("clientSecret", &def.client_secret)?;
        let private_key = from_env("privateKey", &def.private_key)?;
        let auth_method = match private_key {
            Some(_) => "private_key_jwt".to_owned(),
            None => token::auth_method(&found.auth_methods, secret.is_some()),
        };
        return Ok(Some(Client {
            id: id.clone(),
            secret,
            auth_method,
            private_key,
        }));
    }
    match &def.client_metadata_url {
        Some(url) if found.client_id_documents => Ok(Some(Client {
            id: url.clone(),
            secret: None,
            auth_method: "none".to_owned(),
            private_key: None,
        })),
        _ => Ok(None),
    }
}

impl Authorizer {
    pub(crate) fn new(
        server: &str,
        url: &str,
        def: OAuthDef,
        http: Arc<dyn Fetcher>,
        vault: Option<Arc<Vault>>,
    ) -> Self {
        Authorizer {
            server: server.to_owned(),
            url: url.to_owned(),
            def,
            http,
            vault,
            held: tokio::sync::Mutex::new(Held::default()),
            refused: std::sync::Mutex::new(None),
        }
    }

    /// Where this server's grants are kept, if anywhere.
    pub(crate) fn vault(&self) -> Option<&Arc<Vault>> {
        self.vault.as_ref()
    }

    /// Why the server's last refusal could not be recovered from, if it could not (taken once).
    pub(crate) fn take_refusal(&self) -> Option<String> {
        self.refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    fn needs_login(&self, why: &str) -> String {
        format!(
            "MCP server \"{}\" needs a person's authorization{why}: run `toolhost mcp login` with the project and \"{}\"",
            self.server, self.server
        )
    }

    /// The grant the vault keeps for this server, if it is for this server's URL (a file whose
    /// URL changed, or another project on the same data folder, must not get it) and from the
    /// authorization server the file pins, if it pins one.
    /// The vault's store is read on the blocking pool: its reads may wait for a disk.
    async fn kept(&self) -> Option<Kept> {
        let vault = self.vault.clone()?;
        let server = self.server.clone();
        let loaded = vault.off_executor(move |v| v.load(&server)).await;
        match loaded {
            Ok(Some(kept)) if self.is_mine(&kept.grant) => Some(kept),
            Ok(_) => None,
            Err(why) => {
                tracing::warn!(server = %self.server, %why, "a kept MCP authorization cannot be read");
                None
            }
        }
    }

    fn is_mine(&self, grant: &Grant) -> bool {
        covers(&grant.resource, &self.url)
            && self
                .def
                .issuer
                .as_deref()
                .is_none_or(|pinned| same_issuer(pinned, &grant.issuer))
    }

    /// The kept grant, read from the vault the first time.
    async fn load(&self, held: &mut Held) {
        if !held.loaded {
            held.loaded = true;
            if let Some(kept) = self.kept().await {
                held.take(kept);
            }
        }
    }

    /// The access token to send, renewed first when it is about to expire (unless another
    /// process renewed it meanwhile).
    pub(crate) async fn bearer(&self) -> Option<String> {
        let mut held = self.held.lock().await;
        self.load(&mut held).await;
        let expiring = |held: &Held| {
            held.grant
                .as_ref()
                .and_then(|g| g.expires_at)
                .is_some_and(|at| at - RENEW_BEFORE_MS <= now_ms())
        };
        if expiring(&held) {
            let kept = self.kept().await;
            if let Some(kept) = kept.filter(|k| Some(k.version) != held.version) {
                held.take(kept);
            }
        }
        if expiring(&held) {
            if let Err(why) = self.renew(&mut held, &Challenge::default(), false).await {
                tracing::warn!(server = %self.server, %why, "an MCP server's token could not be renewed before it expired");
            }
        }
        held.token().map(str::to_owned)
    }

    /// After the server refused `sent` with `status` (401, or 403 asking for more scope) and
    /// its `WWW-Authenticate` challenge: gets a token worth another try, or says why there is
    /// none.
    pub(crate) async fn recover(
        &self,
        status: u16,
        challenge: Option<&str>,
        sent: Option<&str>,
    ) -> Result<(), String> {
        let outcome = self.try_recover(status, challenge, sent).await;
        *self.refused.lock().unwrap_or_else(|e| e.into_inner()) = outcome.clone().err();
        outcome
    }

    async fn try_recover(
        &self,
        status: u16,
        challenge: Option<&str>,
        sent: Option<&str>,
    ) -> Result<(), String> {
        let challenge = challenge.map(parse_challenge).unwrap_or_default();
        let mut held = self.held.lock().await;
        self.load(&mut held).await;
        // Renewed meanwhile, here or by another process: try that one.
        if held.token().is_some() && held.token() != sent {
            return Ok(());
        }
        if let Some(kept) = self.kept().await {
            if Some(kept.grant.access_token.as_str()) != sent {
                held.take(kept);
                return Ok(());
            }
        }
        let wants_scope = status == 403 || challenge.error.as_deref() == Some("insufficient_scope");
        if wants_scope && self.def.grant == GrantType::AuthorizationCode {
            let Some(scope) = challenge.scope.clone() else {
                return Err(self.needs_login(" with more scope (the server does not say which)"));
            };
            // The next login asks for it.
            if let Some(grant) = held.grant.as_mut() {
                grant.wanted_scope = super::union(grant.wanted_scope.as_deref(), Some(&scope));
                let grant = grant.clone();
                if let Err(why) = self.keep(&mut held, grant).await {
                    tracing::warn!(server = %self.server, %why, "the scope an MCP server asked for could not be kept");
                }
            }
            return Err(self.needs_login(&format!(" with scope \"{scope}\"")));
        }
        self.renew(&mut held, &challenge, wants_scope).await
    }

    /// A new token: a refresh where there is a refresh token (and no more scope is asked),
    /// else new client credentials; the authorization code grant needs a person then.
    async fn renew(
        &self,
        held: &mut Held,
        challenge: &Challenge,
        wants_scope: bool,
    ) -> Result<(), String> {
        let refreshable = held
            .grant
            .as_ref()
            .filter(|g| g.refresh_token.is_some() && !wants_scope);
        let renewed = match (refreshable, self.def.grant) {
            (Some(grant), _) => {
                let mut grant = grant.clone();
                let asked = Asked::Refresh {
                    refresh_token: grant.refresh_token.as_deref().unwrap_or_default(),
                };
                let tokens = token::request(
                    &*self.http,
                    (&grant.token_endpoint, &grant.issuer),
                    &grant.client,
                    &grant.resource,
                    asked,
                )
                .await;
                match tokens {
                    Ok(tokens) => {
                        grant.access_token = tokens.access_token;
                        grant.refresh_token = tokens.refresh_token;
                        grant.expires_at = tokens.expires_at;
                        grant.scope = tokens.scope.or(grant.scope);
                        grant
                    }
                    Err(why) if self.def.grant == GrantType::AuthorizationCode => {
                        return Err(self.needs_login(&format!(" again ({why})")))
                    }
                    Err(_) => self.client_credentials(challenge, wants_scope).await?,
                }
            }
            (None, GrantType::ClientCredentials) => {
                self.client_credentials(challenge, wants_scope).await?
            }
            (None, GrantType::AuthorizationCode) => return Err(self.needs_login("")),
        };
        self.keep(held, renewed).await
    }

    async fn client_credentials(
        &self,
        challenge: &Challenge,
        wants_scope: bool,
    ) -> Result<Grant, String> {
        let found = discover(&*self.http, &self.url, challenge)
            .await
            .map_err(|e| e.to_string())?;
        check_pinned(&self.def, &found)?;
        let client = configured_client(&self.def, &found)?.ok_or(
            "the client credentials grant needs `oauth.clientId` (and `clientSecret` or `privateKey`)",
        )?;
        let scope = if wants_scope {
            // More scope only within what the file or the resource names: a server must not
            // be able to have toolhost ask for a token good for other APIs.
            let asked = challenge.scope.as_deref().unwrap_or_default();
            let allowed: Vec<&str> = self
                .def
                .scope
                .iter()
                .flat_map(|s| s.split_whitespace())
                .chain(found.resource_scopes.iter().map(String::as_str))
                .collect();
            let beyond: Vec<&str> = asked
                .split_whitespace()
                .filter(|s| !allowed.contains(s))
                .collect();
            if !beyond.is_empty() {
                return Err(format!(
                    "MCP server \"{}\" asks for scope \"{}\", beyond the file's `oauth.scope` and the scopes the resource lists; add it to `oauth.scope` to allow it",
                    self.server,
                    beyond.join(" ")
                ));
            }
            super::union(self.def.scope.as_deref(), Some(asked))
        } else {
            chosen_scope(self.def.scope.as_deref(), challenge, &found)
        };
        let tokens = token::request(
            &*self.http,
            (&found.token_endpoint, &found.issuer),
            &client,
            &found.resource,
            Asked::ClientCredentials {
                scope: scope.as_deref(),
            },
        )
        .await?;
        Ok(token::grant_of(
            GrantType::ClientCredentials,
            &found,
            client,
            tokens,
            scope,
        ))
    }

    /// Holds `grant` and keeps it in the vault. If another process wrote first, its grant is
    /// taken instead (both are fresh); if the grant was removed meanwhile (a logout), none is
    /// held.
    async fn keep(&self, held: &mut Held, grant: Grant) -> Result<(), String> {
        let Some(vault) = self.vault.clone() else {
            held.grant = Some(grant);
            return Ok(());
        };
        let (server, kept, expected) = (self.server.clone(), grant.clone(), held.version);
        let saved = vault
            .off_executor(move |v| v.save(&server, &kept, expected))
            .await;
        if let Some(version) = saved.map_err(|e| e.to_string())? {
            held.grant = Some(grant);
            held.version = Some(version);
            return Ok(());
        }
        match self.kept().await {
            Some(theirs) => {
                held.take(theirs);
                Ok(())
            }
            None => {
                held.grant = None;
                held.version = None;
                Err(format!(
                    "the authorization of MCP server \"{}\" was removed meanwhile (toolhost mcp logout)",
                    self.server
                ))
            }
        }
    }
}

/// Whether two issuer identifiers are the same (RFC 8414 asks for identical strings; a
/// trailing `/` is forgiven, as servers differ on it).
pub(crate) fn same_issuer(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// Refuses an authorization server other than the one the file pins: a client's secret or key
/// goes only where it was registered.
pub(crate) fn check_pinned(def: &OAuthDef, found: &Discovered) -> Result<(), String> {
    match &def.issuer {
        Some(pinned) if !same_issuer(pinned, &found.issuer) => Err(format!(
            "the server names the authorization server {:?}, not {pinned:?} that its file pins (`oauth.issuer`); toolhost sends its credentials nowhere else",
            found.issuer
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_providers::fetch::{FetchError, FetchFuture, FetchRequest};
    use toolhost_store::secrets::SecretKey;

    struct NoNetwork;

    impl Fetcher for NoNetwork {
        fn fetch(&self, request: FetchRequest) -> FetchFuture<'_> {
            Box::pin(async move {
                Err(FetchError::Connection(format!(
                    "no network for {}",
                    request.url
                )))
            })
        }
    }

    fn grant(resource: &str, issuer: &str) -> Grant {
        Grant {
            grant: GrantType::AuthorizationCode,
            issuer: issuer.to_owned(),
            token_endpoint: format!("{issuer}/token"),
            resource: resource.to_owned(),
            client: Client {
                id: "c".to_owned(),
                secret: None,
                auth_method: "none".to_owned(),
                private_key: None,
            },
            access_token: "at".to_owned(),
            refresh_token: None,
            expires_at: None,
            scope: None,
            wanted_scope: None,
        }
    }

    fn authorizer(url: &str, issuer: Option<&str>, vault: &Arc<Vault>) -> Authorizer {
        let def = OAuthDef {
            grant: GrantType::AuthorizationCode,
            client_id: None,
            client_secret: None,
            private_key: None,
            client_metadata_url: None,
            scope: None,
            issuer: issuer.map(str::to_owned),
        };
        Authorizer::new("docs", url, def, Arc::new(NoNetwork), Some(vault.clone()))
    }

    #[tokio::test]
    async fn a_kept_grant_serves_only_the_url_and_issuer_it_was_made_for() {
        let store: Arc<dyn toolhost_store::Store> =
            Arc::new(toolhost_store::SqliteStore::in_memory().unwrap());
        let vault = Arc::new(Vault::new(store, SecretKey::generate().unwrap()));
        let kept = grant("https://docs.corp/mcp", "https://as.corp");
        vault.replace("docs", &kept).unwrap();
        assert!(authorizer("https://docs.corp/mcp", None, &vault)
            .kept()
            .await
            .is_some());
        // The file's URL changed (or another project shares the data folder): not this one's.
        assert!(authorizer("https://evil.example/mcp", None, &vault)
            .kept()
            .await
            .is_none());
        assert!(authorizer("https://docs.corp/other", None, &vault)
            .kept()
            .await
            .is_none());
        // A pinned issuer must be the grant's.
        assert!(
            authorizer("https://docs.corp/mcp", Some("https://as.corp/"), &vault)
                .kept()
                .await
                .is_some()
        );
        assert!(
            authorizer("https://docs.corp/mcp", Some("https://as.evil"), &vault)
                .kept()
                .await
                .is_none()
        );
    }

    #[tokio::test]
    async fn a_logout_is_not_undone_by_a_process_that_held_the_grant() {
        let store: Arc<dyn toolhost_store::Store> =
            Arc::new(toolhost_store::SqliteStore::in_memory().unwrap());
        let vault = Arc::new(Vault::new(store, SecretKey::generate().unwrap()));
        vault
            .replace("docs", &grant("https://docs.corp/mcp", "https://as.corp"))
            .unwrap();
        let running = authorizer("https://docs.corp/mcp", None, &vault);
        assert_eq!(running.bearer().await.as_deref(), Some("at"));
        assert!(vault.forget("docs").unwrap());
        // The running process renews and tries to keep its grant: it is told, and holds none.
        let mut held = running.held.lock().await;
        let renewed = grant("https://docs.corp/mcp", "https://as.corp");
        let why = running.keep(&mut held, renewed).await.unwrap_err();
        assert!(why.contains("removed meanwhile"), "{why}");
        assert!(held.grant.is_none());
        drop(held);
        assert!(vault.load("docs").unwrap().is_none());
    }
}
