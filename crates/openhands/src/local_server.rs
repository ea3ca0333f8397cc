//! An agent server in this process (feature `server`): the library behind
//! the `openhands-agent-server` binary, started on a free local port —
//! what the reference's remote examples start as a subprocess.

use openhands_agent_server::{AppState, Config, ServerHandle};
use openhands_sdk::tool::ToolRegistry;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum LocalServerError {
    /// The conversation service could not be set up (directories, stored
    /// conversations).
    #[error("cannot set up the agent server: {0}")]
    Setup(String),
    /// The port could not be bound.
    #[error("cannot listen: {0}")]
    Listen(#[from] std::io::Error),
}

/// A server configuration keeping everything under `root`: conversations,
/// bash events, stored settings and secrets (`root/persistence`) and the
/// agents' default workspace (`root/workspace`).
/// Every other setting is the server's default (no session keys).
///
/// ```
/// let config = openhands::local_server::config_in(std::path::Path::new("/tmp/oh"));
/// assert_eq!(config.workspace_path, std::path::Path::new("/tmp/oh/workspace"));
/// ```
pub fn config_in(root: &Path) -> Config {
    Config {
        conversations_path: root.join("conversations"),
        workspace_path: root.join("workspace"),
        bash_events_dir: root.join("bash_events"),
        persistence_dir: root.join("persistence"),
        ..Config::default()
    }
}

/// Starts the agent server on `127.0.0.1` and a free port; a configuration
/// with `deferred_init` starts dormant (only `/api/init` and the open routes
/// answer until `POST /api/init`). Stop it with [`ServerHandle::shutdown`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let root = tempfile::tempdir().unwrap();
/// let server = openhands::local_server::start(openhands::local_server::config_in(root.path()))
///     .await
///     .unwrap();
/// assert!(server.url().starts_with("http://127.0.0.1:"));
/// server.shutdown().await.unwrap();
/// # }
/// ```
pub async fn start(config: Config) -> Result<ServerHandle, LocalServerError> {
    openhands_agent_server::install_tls_provider();
    if config.deferred_init {
        let state = openhands_agent_server::http::setup::dormant(config);
        return spawn(state).await;
    }
    start_with_tools(config, openhands_tools::presets::default_registry()).await
}

/// Starts the agent server with your tool registry: tools of your own
/// (registered next to the built-ins of
/// [`presets::default_registry`](openhands_tools::presets::default_registry))
/// become available to every conversation a client creates on it — the
/// counterpart of the reference's custom tools baked into a server image.
/// A dormant server (`deferred_init`) is refused: it gets the default tool
/// set when `POST /api/init` brings it to life.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let root = tempfile::tempdir().unwrap();
/// let tools = openhands::tools::presets::default_registry();
/// let server = openhands::local_server::start_with_tools(
///     openhands::local_server::config_in(root.path()),
///     tools,
/// )
/// .await
/// .unwrap();
/// server.shutdown().await.unwrap();
/// # }
/// ```
pub async fn start_with_tools(
    config: Config,
    tools: ToolRegistry,
) -> Result<ServerHandle, LocalServerError> {
    openhands_agent_server::install_tls_provider();
    if config.deferred_init {
        return Err(LocalServerError::Setup(
            "deferred_init: a dormant server gets the default tool set at /api/init; use start"
                .into(),
        ));
    }
    let state = openhands_agent_server::http::setup::attach(AppState::new(config), tools)
        .await
        .map_err(|e| LocalServerError::Setup(e.to_string()))?;
    spawn(state).await
}

async fn spawn(state: AppState) -> Result<ServerHandle, LocalServerError> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    Ok(openhands_agent_server::spawn(state.shared(), addr).await?)
}
