//! One MCP server connection on `rmcp`: started (a stdio child through the
//! execution layer, or a streamable HTTP session), its tools listed, calls
//! made with a timeout, restarted after it stopped, and shut down. Runs on
//! the MCP runtime only (see [`crate::runtime`]).

use crate::book::ToolBook;
use crate::client::{CallResult, McpError};
use crate::config::{ServerConfig, Transport};
use crate::options::StartOptions;
use crate::stdio;
use openhands_workspace::exec::GroupChild;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// How long a stopping child gets between SIGTERM and SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Limit for re-listing tools after `notifications/tools/list_changed`.
const RELIST_TIMEOUT: Duration = Duration::from_secs(30);

/// The client side of one connection: re-lists the server's tools into the
/// session's book when it announces a change.
#[derive(Debug, Clone)]
struct Handler {
    server: String,
    book: Arc<ToolBook>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        tracing::info!(server = %self.server, "MCP server announced tools/list_changed");
        let (server, book, peer) = (self.server.clone(), self.book.clone(), context.peer);
        // Not awaited here: the connection's reader must stay free to
        // receive the answer.
        tokio::spawn(async move {
            match tokio::time::timeout(RELIST_TIMEOUT, peer.list_all_tools()).await {
                Ok(Ok(tools)) => book.replace(
                    &server,
                    tools
                        .iter()
                        .filter_map(|t| serde_json::to_value(t).ok())
                        .collect(),
                ),
                Ok(Err(e)) => tracing::warn!(%server, error = %e, "re-listing MCP tools failed"),
                Err(_) => tracing::warn!(%server, "re-listing MCP tools timed out"),
            }
        });
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("openhands", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// A started server.
pub(crate) struct Live {
    service: RunningService<RoleClient, Handler>,
    child: Option<GroupChild>,
    /// The pumps of an SSE connection (stopped when dropped).
    _sse: Option<crate::sse::SseTasks>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("pid", &self.child.as_ref().and_then(GroupChild::id))
            .finish_non_exhaustive()
    }
}

impl Live {
    /// Whether the connection has ended (the child exited, the session
    /// closed).
    pub(crate) fn stopped(&self) -> bool {
        self.service.is_closed() || self.service.is_transport_closed()
    }

    /// The child's process id, for stdio servers.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(GroupChild::id)
    }

    /// Closes the session and ends the child's process group.
    pub(crate) async fn shutdown(mut self) {
        let _ = self.service.close_with_timeout(STOP_GRACE).await;
        if let Some(mut child) = self.child.take() {
            child.terminate(STOP_GRACE).await;
        }
    }
}

fn start_error(cfg: &ServerConfig, detail: impl std::fmt::Display) -> McpError {
    McpError::Start {
        server: cfg.name.clone(),
        detail: detail.to_string(),
    }
}

/// Starts `cfg` and lists its tools (the MCP `Tool` JSON objects), within
/// the startup timeout.
pub(crate) async fn start(
    cfg: &ServerConfig,
    opts: &StartOptions,
    book: Arc<ToolBook>,
) -> Result<(Live, Vec<Value>), McpError> {
    let limit = opts.startup_timeout;
    match tokio::time::timeout(limit, start_inner(cfg, opts, book)).await {
        Ok(r) => r,
        Err(_) => Err(McpError::Timeout {
            server: cfg.name.clone(),
            what: "start and tools/list".into(),
            after: limit,
        }),
    }
}

async fn start_inner(
    cfg: &ServerConfig,
    opts: &StartOptions,
    book: Arc<ToolBook>,
) -> Result<(Live, Vec<Value>), McpError> {
    let handler = Handler {
        server: cfg.name.clone(),
        book,
    };
    let live = match &cfg.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut child = stdio::spawn(&cfg.name, command, args, env, cwd.as_deref(), opts)
                .map_err(|e| start_error(cfg, e))?;
            let (Some(stdout), Some(stdin)) = (child.take_stdout(), child.take_stdin()) else {
                return Err(start_error(cfg, "the child has no stdin/stdout pipes"));
            };
            if let Some(stderr) = child.take_stderr() {
                stdio::log_stderr(cfg.name.clone(), stderr);
            }
            match handler.serve((stdout, stdin)).await {
                Ok(service) => Live {
                    service,
                    child: Some(child),
                    _sse: None,
                },
                Err(e) => {
                    let status = tokio::time::timeout(STOP_GRACE, child.wait()).await;
                    let exit = match status {
                        Ok(Ok(s)) => format!(" (the process exited: {s})"),
                        _ => {
                            child.terminate(STOP_GRACE).await;
                            String::new()
                        }
                    };
                    return Err(start_error(cfg, format!("{e}{exit}")));
                }
            }
        }
        Transport::Http { url, headers } => {
            let service = match &cfg.oauth {
                None => {
                    let transport =
                        crate::http::transport(url, headers).map_err(|e| start_error(cfg, e))?;
                    handler.serve(transport).await
                }
                Some(oauth) => {
                    let manager =
                        crate::oauth::connect::manager(url, oauth, opts.oauth_states.clone())
                            .await
                            .map_err(|e| start_error(cfg, e))?;
                    let transport = crate::http::oauth_transport(url, headers, manager)
                        .map_err(|e| start_error(cfg, e))?;
                    handler.serve(transport).await
                }
            }
            .map_err(|e| start_error(cfg, e))?;
            Live {
                service,
                child: None,
                _sse: None,
            }
        }
        Transport::Sse { url, headers } => {
            let token = match &cfg.oauth {
                None => None,
                Some(oauth) => Some(crate::oauth::connect::TokenSource::new(
                    crate::oauth::connect::manager(url, oauth, opts.oauth_states.clone())
                        .await
                        .map_err(|e| start_error(cfg, e))?,
                )),
            };
            let (pair, tasks) = crate::sse::connect(url, headers, token)
                .await
                .map_err(|e| start_error(cfg, e))?;
            let service = handler.serve(pair).await.map_err(|e| start_error(cfg, e))?;
            Live {
                service,
                child: None,
                _sse: Some(tasks),
            }
        }
    };
    match live.service.peer().list_all_tools().await {
        Ok(tools) => {
            let tools = tools
                .iter()
                .filter_map(|t| serde_json::to_value(t).ok())
                .collect();
            Ok((live, tools))
        }
        Err(e) => {
            let detail = format!("tools/list failed: {e}");
            live.shutdown().await;
            Err(start_error(cfg, detail))
        }
    }
}

/// Whether `e` means the connection is gone (rather than the call failing).
pub(crate) fn is_disconnect(e: &ServiceError) -> bool {
    matches!(
        e,
        ServiceError::TransportClosed
            | ServiceError::TransportSend(_)
            | ServiceError::Cancelled { .. }
    )
}

/// One `tools/call` on a live connection, within `limit`.
pub(crate) async fn call(
    live: &Live,
    server: &str,
    tool: &str,
    arguments: Map<String, Value>,
    limit: Duration,
) -> Result<CallResult, CallFailure> {
    let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
    let peer = live.service.peer().clone();
    match tokio::time::timeout(limit, peer.call_tool(params)).await {
        Err(_) => Err(CallFailure::Error(McpError::Timeout {
            server: server.to_string(),
            what: format!("tools/call '{tool}'"),
            after: limit,
        })),
        Ok(Err(e)) if is_disconnect(&e) => Err(CallFailure::Disconnected(e.to_string())),
        Ok(Err(e)) => Err(CallFailure::Error(McpError::Call {
            server: server.to_string(),
            detail: e.to_string(),
        })),
        Ok(Ok(result)) => match serde_json::to_value(&result) {
            Ok(v) => Ok(CallResult::from_wire(&v)),
            Err(e) => Err(CallFailure::Error(McpError::Call {
                server: server.to_string(),
                detail: format!("unreadable tool result: {e}"),
            })),
        },
    }
}

/// How a call failed.
pub(crate) enum CallFailure {
    /// The connection is gone.
    Disconnected(String),
    /// The call failed; the connection is fine.
    Error(McpError),
}
