//! The MCP client of toolhost: the connections to a project's MCP servers and their OAuth.
//!
//! ## Contract
//! - A server is a program run as a child process over standard input and output, or a URL
//!   reached over MCP's streamable HTTP through the HTTP client the embedding program gives
//!   ([`http`]); each is defined by one file ([`server_def`]). This crate links no HTTP client
//!   or TLS stack of its own.
//! - The [`McpHub`] keeps every server's connections. A server is reached when the hub lists
//!   its tools (all pages, up to [`hub::MAX_LIST_PAGES`]) and, if a program exits or a
//!   connection closes, again by the next call. A call that was under way then has an unknown
//!   outcome and says so ([`link::CallError::Lost`]); it is never sent twice.
//! - Every message a server sends is read in bounded memory ([`http::MAX_MESSAGE_BYTES`]): an
//!   answer that cannot be taken (too large, too deep, not a message) becomes an error answer to
//!   the request that waits for it, at once, naming the limit.
//! - What servers write to standard error is kept apart from toolhost's own output (the last
//!   [`hub::STDERR_LINES_KEPT`] lines per server). Only `PATH` and the variables a file names
//!   reach a server's environment; a program runs in a process group of its own, ended with it.
//! - A server at a URL gets the headers its file gives, each `${NAME}` filled from the calling
//!   thread's variables: one connection per set of values, at most [`hub::MAX_CONNECTIONS`], so
//!   no thread's calls carry another's credentials.
//! - A server at a URL whose file has `oauth` gets OAuth tokens ([`oauth`]): discovered from
//!   its 401, kept sealed in the store ([`Vault`]), renewed before they expire and when refused.
//! - What a server asks within a call (a form, a completion, the caller's roots: [`ask`]) goes
//!   to the call's [`link::AskFn`]; the server is told beforehand what can be answered.
//! - Each tool's definition is known by the hashes of its parts ([`definition`]), so that a
//!   change a server makes can be named and refused until a person accepts it.

pub mod ask;
pub mod definition;
mod envelope;
pub mod http;
mod http_events;
pub mod hub;
pub mod link;
pub mod oauth;
pub mod server_def;
mod stdio;

pub use hub::McpHub;
pub use link::ConnectError;
pub use oauth::Vault;
pub use server_def::McpServerDef;
