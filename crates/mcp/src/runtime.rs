//! The MCP runtime: one small side runtime
//! ([`openhands_workspace::side_runtime`]) that owns every MCP connection
//! (their reader tasks, child processes and timers), so a connection
//! outlives the runtime of whoever started it (a blocking caller, a test's
//! runtime) and callers on any runtime can await its work.

use crate::client::McpError;
use openhands_workspace::side_runtime::{SideRuntime, SideRuntimeError};
use std::future::Future;

static MCP: SideRuntime = SideRuntime::new("mcp");

fn mcp_error(e: SideRuntimeError) -> McpError {
    match e {
        SideRuntimeError::Start { detail, .. } => McpError::Start {
            server: String::new(),
            detail: format!("cannot start the MCP runtime: {detail}"),
        },
        SideRuntimeError::Task { detail, .. } => McpError::Call {
            server: String::new(),
            detail: format!("MCP task failed: {detail}"),
        },
    }
}

/// Runs `f` on the MCP runtime and awaits its result from any runtime.
pub(crate) async fn run<F, T>(f: F) -> Result<T, McpError>
where
    F: Future<Output = Result<T, McpError>> + Send + 'static,
    T: Send + 'static,
{
    MCP.run(f).await.map_err(mcp_error)?
}

/// Runs `f` on the MCP runtime and blocks the calling thread until it
/// ends. For synchronous callers (never call it on an async worker).
pub(crate) fn block_on<F, T>(f: F) -> Result<T, McpError>
where
    F: Future<Output = Result<T, McpError>> + Send + 'static,
    T: Send + 'static,
{
    MCP.block_on(f).map_err(mcp_error)?
}
