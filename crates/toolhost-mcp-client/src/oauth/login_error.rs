//! Why a login did not get a grant (see [`super::login`]).

use super::discovery::DiscoveryError;
use super::vault::VaultError;

/// Why a login did not get a grant. The variants say whose the fault is: the project's files,
/// the MCP server, its authorization server, the person, or this machine.
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    /// The server is a program toolhost starts, not a server at a URL.
    #[error("MCP server \"{server}\" is a program, not a server at a URL: it needs no login")]
    NotAtUrl {
        /// The server's name.
        server: String,
    },
    /// The server's file has no `oauth` part.
    #[error("the file of MCP server \"{server}\" has no `oauth`: add `\"oauth\": {{}}` to log in")]
    NoOAuth {
        /// The server's name.
        server: String,
    },
    /// The server let toolhost in without a token.
    #[error("MCP server \"{server}\" let toolhost in and list its tools without a token: it needs no login")]
    NeedsNoLogin {
        /// The server's name.
        server: String,
    },
    /// The MCP server could not be reached, or answered otherwise than by asking for
    /// authorization.
    #[error("{0}")]
    Server(String),
    /// Its authorization server could not be found or described.
    #[error(transparent)]
    Discovery(#[from] DiscoveryError),
    /// The authorization server, or what the server's file pins or gives, does not allow this
    /// login (another issuer than the pinned one, no PKCE, no client, a client setting whose
    /// variable is not set).
    #[error("{0}")]
    NotAllowed(String),
    /// Getting a client, the authorization's address or tokens from the authorization server
    /// failed (a private key of the file that cannot sign shows here too).
    #[error("{0}")]
    Token(String),
    /// The authorization's answer was refused: another issuer named, or the person declined.
    #[error("{0}")]
    Answer(String),
    /// No person authorized toolhost in time.
    #[error("nobody authorized toolhost within {seconds} s")]
    TimedOut {
        /// How long toolhost waited.
        seconds: u64,
    },
    /// This machine could not do its part: no random bytes for the authorization, or no
    /// loopback port to take its answer on.
    #[error("{0}")]
    Local(String),
    /// The grant could not be kept.
    #[error(transparent)]
    Vault(#[from] VaultError),
}
