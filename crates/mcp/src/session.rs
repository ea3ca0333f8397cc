//! [`McpSession`]: the servers of one configuration, started in parallel,
//! their tools under the reference's names, calls routed to their server,
//! a stopped server reported and restarted, everything closed together.

use crate::book::ToolBook;
use crate::client::{CallResult, McpClient, McpError, McpTool};
use crate::config::{McpConfig, ServerConfig, Transport};
use crate::options::StartOptions;
use crate::runtime;
use crate::server::{self, CallFailure, Live};
use async_trait::async_trait;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// One server of a session.
#[derive(Debug)]
struct Server {
    cfg: ServerConfig,
    /// `None` before the first start and after it stopped.
    live: tokio::sync::Mutex<Option<Live>>,
}

/// A server that could not be started.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerFailure {
    /// The server's name.
    pub server: String,
    /// Why.
    pub error: McpError,
}

/// The servers of one MCP configuration.
#[derive(Debug)]
pub struct McpSession {
    opts: StartOptions,
    servers: Vec<Arc<Server>>,
    /// The servers' current tools.
    book: Arc<ToolBook>,
    closed: AtomicBool,
}

/// The result of [`McpSession::start`]: the session (with the tools of
/// every server that started) and the servers that did not.
#[derive(Debug)]
pub struct Started {
    /// The session.
    pub session: Arc<McpSession>,
    /// Servers that could not be started (their tools are missing).
    pub failures: Vec<ServerFailure>,
}

impl McpSession {
    /// Starts every enabled server of `config` in parallel (each within
    /// `opts.startup_timeout`) and lists their tools. Never fails as a
    /// whole: servers that did not start are in [`Started::failures`].
    pub async fn start(config: &McpConfig, opts: StartOptions) -> Started {
        let config = config.clone();
        match runtime::run(async move { Ok(start_all(config, opts).await) }).await {
            Ok(s) => s,
            Err(e) => failed_start(e),
        }
    }

    /// [`McpSession::start`] for synchronous callers: blocks the calling
    /// thread (not for async worker threads).
    pub fn start_blocking(config: &McpConfig, opts: StartOptions) -> Started {
        let config = config.clone();
        match runtime::block_on(async move { Ok(start_all(config, opts).await) }) {
            Ok(s) => s,
            Err(e) => failed_start(e),
        }
    }

    /// Process ids of the running stdio servers, by server name.
    pub async fn pids(&self) -> Vec<(String, u32)> {
        let mut out = Vec::new();
        for s in &self.servers {
            if let Some(pid) = s.live.lock().await.as_ref().and_then(Live::pid) {
                out.push((s.cfg.name.clone(), pid));
            }
        }
        out
    }

    fn route(&self, name: &str) -> Option<(Arc<Server>, String)> {
        let tool = self.book.find(name)?;
        let server = self.servers.iter().find(|s| s.cfg.name == tool.server)?;
        Some((server.clone(), tool.remote_name))
    }
}

fn failed_start(e: McpError) -> Started {
    Started {
        session: Arc::new(McpSession {
            opts: StartOptions::new("."),
            servers: Vec::new(),
            book: Arc::new(ToolBook::new(false)),
            closed: AtomicBool::new(false),
        }),
        failures: vec![ServerFailure {
            server: String::new(),
            error: e,
        }],
    }
}

/// Authorizes, one after the other, the OAuth servers of `servers` that
/// have no tokens; returns the ones that could not be authorized, with why.
async fn authorize_missing(
    servers: &[ServerConfig],
    store: &Arc<dyn crate::oauth::OAuthStateStore>,
    consent: &crate::oauth::Consent,
) -> Vec<(String, String)> {
    let mut failed = Vec::new();
    for cfg in servers {
        let (Some(oauth), Transport::Http { url, .. } | Transport::Sse { url, .. }) =
            (&cfg.oauth, &cfg.transport)
        else {
            continue;
        };
        if !crate::oauth::needs_authorization(url, oauth, store.as_ref()).await {
            continue;
        }
        if let Err(e) = consent
            .authorize(&cfg.name, url, oauth, store.clone())
            .await
        {
            failed.push((cfg.name.clone(), e.to_string()));
        }
    }
    failed
}

async fn start_all(config: McpConfig, opts: StartOptions) -> Started {
    let mut enabled: Vec<ServerConfig> = config.enabled().cloned().collect();
    let mut failures = Vec::new();
    if let Some(consent) = &opts.oauth_consent {
        // Authorized one at a time, before any connection is timed.
        for (name, error) in authorize_missing(&enabled, &opts.oauth_states, consent).await {
            tracing::warn!(server = %name, %error, "MCP server not authorized");
            enabled.retain(|c| c.name != name);
            failures.push(ServerFailure {
                server: name.clone(),
                error: McpError::Start {
                    server: name,
                    detail: error,
                },
            });
        }
    }
    let book = Arc::new(ToolBook::new(enabled.len() > 1));
    let starts = enabled
        .iter()
        .map(|cfg| server::start(cfg, &opts, book.clone()));
    let results = futures::future::join_all(starts).await;
    let mut servers = Vec::new();
    for (cfg, result) in enabled.into_iter().zip(results) {
        match result {
            Ok((live, listed)) => {
                book.replace(&cfg.name, listed);
                servers.push(Arc::new(Server {
                    cfg,
                    live: tokio::sync::Mutex::new(Some(live)),
                }));
            }
            Err(error) => {
                tracing::warn!(server = %cfg.name, %error, "MCP server not started");
                failures.push(ServerFailure {
                    server: cfg.name.clone(),
                    error,
                });
            }
        }
    }
    tracing::info!(tools = book.all().len(), "MCP tools listed");
    Started {
        session: Arc::new(McpSession {
            opts,
            servers,
            book,
            closed: AtomicBool::new(false),
        }),
        failures,
    }
}

async fn call_on(
    server: Arc<Server>,
    opts: StartOptions,
    book: Arc<ToolBook>,
    tool: String,
    arguments: Map<String, Value>,
) -> Result<CallResult, McpError> {
    let name = server.cfg.name.clone();
    let mut guard = server.live.lock().await;
    if guard.as_ref().is_some_and(Live::stopped) {
        if let Some(live) = guard.take() {
            live.shutdown().await;
        }
        return Err(McpError::Stopped {
            server: name,
            detail: "its connection closed".into(),
        });
    }
    if guard.is_none() {
        tracing::info!(server = %name, "restarting MCP server");
        let (live, listed) = server::start(&server.cfg, &opts, book.clone()).await?;
        book.replace(&server.cfg.name, listed);
        *guard = Some(live);
    }
    let Some(live) = guard.as_ref() else {
        return Err(McpError::Closed);
    };
    let limit = server.cfg.timeout.unwrap_or(opts.call_timeout);
    match server::call(live, &name, &tool, arguments, limit).await {
        Ok(r) => Ok(r),
        Err(CallFailure::Error(e)) => Err(e),
        Err(CallFailure::Disconnected(detail)) => {
            if let Some(live) = guard.take() {
                live.shutdown().await;
            }
            Err(McpError::Stopped {
                server: name,
                detail,
            })
        }
    }
}

#[async_trait]
impl McpClient for McpSession {
    fn tools(&self) -> Vec<McpTool> {
        self.book.all()
    }

    fn generation(&self) -> u64 {
        self.book.generation()
    }

    async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallResult, McpError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(McpError::Closed);
        }
        let Some((server, remote)) = self.route(name) else {
            return Err(McpError::UnknownTool(name.to_string()));
        };
        let opts = self.opts.clone();
        runtime::run(call_on(server, opts, self.book.clone(), remote, arguments)).await
    }

    async fn close(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        let servers = self.servers.clone();
        let _ = runtime::run(async move {
            let stops = servers.iter().map(|s| async move {
                if let Some(live) = s.live.lock().await.take() {
                    live.shutdown().await;
                }
            });
            futures::future::join_all(stops).await;
            Ok(())
        })
        .await;
    }
}

impl Drop for McpSession {
    fn drop(&mut self) {
        // Children die with their `GroupChild` (group SIGKILL on drop); the
        // connections end with their transports.
        if !self.closed.load(Ordering::SeqCst) && !self.servers.is_empty() {
            tracing::debug!("MCP session dropped without close");
        }
    }
}
