//! Why a server's tools could not be listed when toolhost connected to it.

/// Why connecting to a server and listing its tools failed. Each variant carries the sentence
/// that says what happened (and what the server wrote, where it helps).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    /// A header of the server's file needs a variable toolhost's environment does not have.
    #[error("header {header} needs the variable {variable}, which is not in toolhost's environment, so the server's tools cannot be listed")]
    MissingVariable {
        /// The header.
        header: String,
        /// The variable it names.
        variable: String,
    },
    /// The server could not be started or reached, or its handshake failed or took too long.
    #[error("{0}")]
    Connect(String),
    /// The server refused toolhost's authorization; the text says what a person does about it.
    #[error("{0}")]
    Unauthorized(String),
    /// Listing its tools failed, took too long, or gave a list toolhost cannot take.
    #[error("{0}")]
    Listing(String),
    /// The task that connected ended without an answer.
    #[error("the connection task failed: {0}")]
    Task(String),
}
