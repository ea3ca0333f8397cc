//! The MCP runtime: one small tokio runtime that owns every MCP connection
//! (their reader tasks, child processes and timers), so a connection
//! outlives the runtime of whoever started it (a blocking caller, a test's
//! runtime) and callers on any runtime can await its work.

use crate::client::McpError;
use std::future::Future;
use std::sync::OnceLock;
use tokio::runtime::{Handle, Runtime};

fn runtime() -> Result<&'static Runtime, McpError> {
    static RT: OnceLock<Result<Runtime, String>> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("mcp")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| McpError::Start {
        server: String::new(),
        detail: format!("cannot start the MCP runtime: {e}"),
    })
}

/// The MCP runtime's handle.
pub(crate) fn handle() -> Result<Handle, McpError> {
    runtime().map(|r| r.handle().clone())
}

/// Runs `f` on the MCP runtime and awaits its result from any runtime.
pub(crate) async fn run<F, T>(f: F) -> Result<T, McpError>
where
    F: Future<Output = Result<T, McpError>> + Send + 'static,
    T: Send + 'static,
{
    let h = handle()?.spawn(f);
    match h.await {
        Ok(r) => r,
        Err(e) => Err(McpError::Call {
            server: String::new(),
            detail: format!("MCP task failed: {e}"),
        }),
    }
}

/// Runs `f` on the MCP runtime and blocks the calling thread until it
/// ends. For synchronous callers (never call it on an async worker).
pub(crate) fn block_on<F, T>(f: F) -> Result<T, McpError>
where
    F: Future<Output = Result<T, McpError>> + Send + 'static,
    T: Send + 'static,
{
    let h = handle()?.spawn(f);
    match futures::executor::block_on(h) {
        Ok(r) => r,
        Err(e) => Err(McpError::Call {
            server: String::new(),
            detail: format!("MCP task failed: {e}"),
        }),
    }
}
