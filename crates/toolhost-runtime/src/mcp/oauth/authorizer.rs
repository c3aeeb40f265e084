//! The tokens of one MCP server while toolhost talks to it: the bearer each request carries,
//! renewed before it expires and when the server refuses it.

use super::discovery::{chosen_scope, covers, discover, parse_challenge, Challenge, Discovered};
use super::token::{self, Asked};
use super::vault::{Kept, Vault};
use super::{now_ms, Client, Grant, GrantType, OAuthDef};
use crate::mcp::server_def::fill;
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
                    format!("`oauth.{field}` needs the variable {missing}, which is not in toolhost's environment")
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
        }
    }

    fn needs_login(&self, why: &str) -> String {
        format!(
            "MCP server \"{}\" needs a person's authorization{why}: run `toolhost mcp login` with the project and \"{}\"",
            self.server, self.server
        )
    }

    /// The kept grant, read from the vault the first time (one for another URL is not this
    /// server's).
    fn load(&self, held: &mut Held) {
        if held.loaded {
            return;
        }
        held.loaded = true;
        if let Some(vault) = &self.vault {
            match vault.load(&self.server) {
                Ok(Some(kept)) if covers(&kept.grant.resource, &self.url) => held.take(kept),
                Ok(_) => {}
                Err(why) => {
                    tracing::warn!(server = %self.server, %why, "a kept MCP authorization cannot be read")
                }
            }
        }
    }

    /// The access token to send, renewed first when it is about to expire.
    pub(crate) async fn bearer(&self) -> Option<String> {
        let mut held = self.held.lock().await;
        self.load(&mut held);
        let expiring = held
            .grant
            .as_ref()
            .and_then(|g| g.expires_at)
            .is_some_and(|at| at - RENEW_BEFORE_MS <= now_ms());
        if expiring {
            if let Err(why) = self.renew(&mut held, &Challenge::default()).await {
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
        let challenge = challenge.map(parse_challenge).unwrap_or_default();
        let mut held = self.held.lock().await;
        self.load(&mut held);
        // Renewed meanwhile, here or by another process: try that one.
        if held.token().is_some() && held.token() != sent {
            return Ok(());
        }
        if let Some(vault) = &self.vault {
            if let Ok(Some(kept)) = vault.load(&self.server) {
                if Some(kept.grant.access_token.as_str()) != sent {
                    held.take(kept);
                    return Ok(());
                }
            }
        }
        let wants_scope = status == 403 || challenge.error.as_deref() == Some("insufficient_scope");
        if wants_scope && self.def.grant == GrantType::AuthorizationCode {
            let scope = challenge.scope.clone().unwrap_or_else(|| "more".to_owned());
            // The next login asks for it.
            if let Some(grant) = held.grant.as_mut() {
                grant.wanted_scope = super::union(grant.wanted_scope.as_deref(), Some(&scope));
                let grant = grant.clone();
                if let Err(why) = self.keep(&mut held, grant) {
                    tracing::warn!(server = %self.server, %why, "the scope an MCP server asked for could not be kept");
                }
            }
            return Err(self.needs_login(&format!(" with scope \"{scope}\"")));
        }
        self.renew(&mut held, &challenge).await
    }

    /// A new token: a refresh where there is a refresh token (and no more scope is asked),
    /// else new client credentials; the authorization code grant needs a person then.
    async fn renew(&self, held: &mut Held, challenge: &Challenge) -> Result<(), String> {
        let refreshable = held
            .grant
            .as_ref()
            .filter(|g| g.refresh_token.is_some() && challenge.scope.is_none());
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
                    Err(_) => self.client_credentials(challenge).await?,
                }
            }
            (None, GrantType::ClientCredentials) => self.client_credentials(challenge).await?,
            (None, GrantType::AuthorizationCode) => return Err(self.needs_login("")),
        };
        self.keep(held, renewed)
    }

    async fn client_credentials(&self, challenge: &Challenge) -> Result<Grant, String> {
        let found = discover(&*self.http, &self.url, challenge).await?;
        let client = configured_client(&self.def, &found)?
            .ok_or("the client credentials grant needs `oauth.clientId` (and `clientSecret` or `privateKey`)")?;
        // A server asking for more scope is given what it asks.
        let scope = match &challenge.scope {
            Some(asked) => Some(asked.clone()),
            None => chosen_scope(self.def.scope.as_deref(), challenge, &found),
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

    /// Holds `grant` and keeps it in the vault; if another process kept one first, that one is
    /// taken instead (both are fresh).
    fn keep(&self, held: &mut Held, grant: Grant) -> Result<(), String> {
        if let Some(vault) = &self.vault {
            if !vault.save(&self.server, &grant, held.version)? {
                if let Some(theirs) = vault.load(&self.server)? {
                    held.take(theirs);
                    return Ok(());
                }
            }
            held.version = vault.load(&self.server)?.map(|k| k.version);
        }
        held.grant = Some(grant);
        Ok(())
    }
}
