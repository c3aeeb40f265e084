//! The command line's one async runtime: synchronous command code hands its async work to it.

use super::output::{self, INVALID};

/// The command line's one async runtime, made on first use: every part of a command runs its
/// async work there, so what one part starts (a project's MCP connections, the keeper of its
/// leases) lives on for the next, whatever command runs.
pub(super) fn async_runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        match tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            // Without an I/O driver the runtime cannot start at all: nothing can run.
            Err(e) => {
                output::error("the async runtime could not start.", Some(&e));
                std::process::exit(i32::from(INVALID))
            }
        }
    })
}

/// Runs a future to its end on the command line's runtime, from synchronous code.
pub(super) fn block_on<F: std::future::Future>(future: F) -> F::Output {
    async_runtime().block_on(future)
}
