//! OAuth for MCP servers at a URL: toolhost as an OAuth 2.1 client, as MCP's authorization
//! specification (2025-11-25) asks.
//!
//! ## Contract
//! - A server's file opts in with `oauth` (see [`OAuthDef`]): without it a server's 401 is an
//!   error like any other, and credentials go in `headers`.
//! - **Discovery** ([`discovery`]): from the server's `401` challenge (`resource_metadata`,
//!   `scope`), else the well-known places, the protected resource metadata (RFC 9728; its
//!   `resource` must be the server's URL or a parent of it, else toolhost refuses), then the
//!   authorization server's metadata (RFC 8414, OpenID discovery; its `issuer` must be the one
//!   named). A server with no resource metadata is taken as its own authorization server
//!   (the 2025-03-26 revision), with `/authorize`, `/token` and `/register` when it has no
//!   metadata either.
//! - **Grants**: `client_credentials` (a machine's own; toolhost gets and renews tokens
//!   without anyone) or `authorization_code` with PKCE (S256; refused when the server does not
//!   offer it), which needs a person once: `toolhost mcp login` ([`login`]) prints the
//!   authorization URL and takes the answer on a loopback redirect (RFC 8252). The client is the
//!   file's `clientId` (pre-registered), else a client ID metadata document's URL
//!   (`clientMetadataUrl`, when the server supports them), else one registered dynamically
//!   (RFC 7591). A client proves itself with its secret (HTTP Basic, or the form), with a
//!   signed JWT (`private_key_jwt`, the `assertion` module), or not at all (a public client with PKCE).
//!   Every token request names the resource (RFC 8707). The scope asked for is
//!   the file's, else the challenge's, else the resource's `scopes_supported`, else none.
//! - **Tokens** are kept in the store as the project's credential `mcp-oauth/NAME`, sealed with
//!   the data folder's secrets key, so every process of the project (and every node of a
//!   shared store) uses them, and written by compare-and-set with versions that never go back,
//!   so two processes renewing one token cannot lose a rotated refresh token and a logout
//!   cannot be undone by a process that held the grant. A token is renewed before it expires
//!   (unless another process did), and when
//!   the server refuses it (a refresh token, or a new client credentials grant); a server that
//!   asks for more scope (`403 insufficient_scope`) gets it for client credentials, and is
//!   otherwise an error that says to log in again. A request is retried once after a renewal:
//!   a server that refuses every token cannot make toolhost loop.
//! - **Where requests go**: every URL (the server's, discovery's, the endpoints) is https, or
//!   http to this machine; a registered client's secret or key goes only to the `issuer` its
//!   file pins; a kept grant serves only the URL (and pinned issuer) it was made for; more
//!   scope under client credentials only within the file's `scope` or the resource's list.
//! - Tokens and client secrets never reach a log, an error, a result or a model: errors quote
//!   the authorization server's `error` and `error_description` only.

mod assertion;
mod authorizer;
pub mod discovery;
pub mod login;
mod login_error;
mod token;
pub mod vault;

pub(crate) use authorizer::Authorizer;
pub use vault::Vault;

use serde::{Deserialize, Serialize};

/// How a server's tokens are had: `oauth` of `agents/mcp/NAME.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthDef {
    /// The grant toolhost uses.
    pub grant: GrantType,
    /// A client registered beforehand (its `clientSecret` may name variables as `${NAME}`,
    /// filled from toolhost's environment).
    pub client_id: Option<String>,
    /// The client secret as written (`${NAME}` stands for a variable of toolhost's environment).
    pub client_secret: Option<String>,
    /// A PKCS#8 PEM private key as written (`${NAME}`), for a client that proves itself with a
    /// signed JWT (`private_key_jwt`) instead of a secret.
    pub private_key: Option<String>,
    /// The URL of a client ID metadata document, used as the client id where the server takes
    /// them.
    pub client_metadata_url: Option<String>,
    /// The scope to ask for, instead of the one the server suggests.
    pub scope: Option<String>,
    /// The authorization server the client is registered with: tokens are had from it only
    /// (required with a secret or key, which go nowhere else).
    pub issuer: Option<String>,
}

/// Which OAuth grant gets a server's tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantType {
    /// A person authorizes toolhost once (`toolhost mcp login`).
    AuthorizationCode,
    /// toolhost's own credentials, with no person.
    ClientCredentials,
}

/// The client toolhost is to an authorization server.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Client {
    /// The client id.
    pub id: String,
    /// The client secret, for a confidential client.
    pub secret: Option<String>,
    /// How the client proves itself at the token endpoint: `client_secret_basic`,
    /// `client_secret_post`, `private_key_jwt` or `none`.
    pub auth_method: String,
    /// The private key of `private_key_jwt`, read from toolhost's environment when needed and
    /// never kept with a grant.
    #[serde(skip)]
    pub private_key: Option<String>,
}

/// What toolhost holds of a server's authorization: where to renew it and the tokens.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// The grant it came from.
    pub grant: GrantType,
    /// The authorization server.
    pub issuer: String,
    /// Where tokens are renewed.
    pub token_endpoint: String,
    /// The resource the tokens are for (the server's protected resource identifier).
    pub resource: String,
    /// The client that holds the grant.
    pub client: Client,
    /// The access token.
    pub access_token: String,
    /// The refresh token, when the server gave one.
    pub refresh_token: Option<String>,
    /// When the access token expires, in milliseconds since the epoch, when the server said.
    pub expires_at: Option<i64>,
    /// The scope granted (or asked for, when the server did not say).
    pub scope: Option<String>,
    /// The scope the server asked for since (`403 insufficient_scope`), which the next login
    /// asks for too.
    #[serde(default)]
    pub wanted_scope: Option<String>,
}

impl Grant {
    /// Whether this grant is for the server at `url` (its resource is the URL or a parent).
    pub fn is_for(&self, url: &str) -> bool {
        discovery::covers(&self.resource, url)
    }
}

impl std::fmt::Debug for Grant {
    /// Names where the grant is from, never its tokens or secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("grant", &self.grant)
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .field("client_id", &self.client.id)
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .field("wanted_scope", &self.wanted_scope)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("id", &self.id)
            .field("auth_method", &self.auth_method)
            .finish_non_exhaustive()
    }
}

/// Every scope of `a` and then those of `b` not in `a` (space-separated lists).
pub(crate) fn union(a: Option<&str>, b: Option<&str>) -> Option<String> {
    let mut scopes: Vec<&str> = Vec::new();
    for scope in a.into_iter().chain(b).flat_map(str::split_whitespace) {
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

/// Milliseconds since the epoch, now.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

#[cfg(test)]
mod tests;
