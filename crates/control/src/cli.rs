//! The command line shared by `openhands-control` and `openhands control`.
//!
//! Commands that create something print it alone on standard output (an
//! id, a token, a key), so scripts can capture it; everything else goes to
//! standard error. Every command takes the same `--data-dir` /
//! `--database-url` (or `OH_CONTROL_DATA_DIR` / `OH_CONTROL_DATABASE_URL`).

use crate::admin::{Admin, AdminError};
use crate::config::{ConfigError, ControlConfig, Overrides};
use crate::service::{ControlPlane, StartError};
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of the control plane's command line.
#[derive(Debug, clap::Args)]
pub struct ControlArgs {
    /// Data directory (default `./control`; `OH_CONTROL_DATA_DIR`).
    #[arg(long, global = true)]
    pub data_dir: Option<PathBuf>,
    /// Database URL (`sqlite://…` or `postgres://…`; default: SQLite in the
    /// data directory; `OH_CONTROL_DATABASE_URL`).
    #[arg(long, global = true)]
    pub database_url: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub command: ControlCommand,
}

/// The subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ControlCommand {
    /// Serve the task-control API.
    Serve {
        /// Address to bind.
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// Port to bind (0: any free port).
        #[arg(long, default_value_t = 8100)]
        port: u16,
    },
    /// Tenants.
    #[command(subcommand)]
    Tenant(TenantCommand),
    /// Users of a tenant.
    #[command(subcommand)]
    User(UserCommand),
    /// Customer access tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Workspace API keys.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Remote sandbox hosts (agent servers).
    #[command(subcommand)]
    Host(HostCommand),
    /// The docker sandbox image.
    #[command(subcommand)]
    Image(ImageCommand),
}

/// `tenant …`.
#[derive(Debug, clap::Subcommand)]
pub enum TenantCommand {
    /// Create a tenant; prints its id.
    Create {
        /// Unique name.
        name: String,
        /// Most tasks running at once (default `OH_CONTROL_MAX_RUNNING_TASKS` or 4).
        #[arg(long)]
        max_running_tasks: Option<i64>,
    },
    /// Change a tenant's running-task limit; prints its id.
    SetLimit {
        /// Tenant id or name.
        #[arg(long)]
        tenant: String,
        /// Most tasks running at once.
        max_running_tasks: i64,
    },
}

/// `user …`.
#[derive(Debug, clap::Subcommand)]
pub enum UserCommand {
    /// Create a user; prints its id.
    Create {
        /// Tenant id or name.
        #[arg(long)]
        tenant: String,
        /// Name, unique in the tenant.
        name: String,
        /// Comma-separated: sandboxes:read, sandboxes:write, ai_chat:use, all:all.
        #[arg(long, default_value = "")]
        permissions: String,
    },
    /// Replace a user's permissions (their keys narrow at once); prints its id.
    SetPermissions {
        /// Tenant id or name.
        #[arg(long)]
        tenant: String,
        /// User id or name.
        user: String,
        /// Comma-separated grants (empty: none).
        #[arg(long)]
        permissions: String,
    },
}

/// `token …`.
#[derive(Debug, clap::Subcommand)]
pub enum TokenCommand {
    /// Create a customer access token for a user; prints it.
    Create {
        /// Tenant id or name.
        #[arg(long)]
        tenant: String,
        /// User id or name.
        #[arg(long)]
        user: String,
        /// Lifetime in hours (default: until revoked).
        #[arg(long)]
        ttl_hours: Option<f64>,
    },
    /// Revoke a token.
    Revoke {
        /// The token.
        token: String,
    },
}

/// `key …`.
#[derive(Debug, clap::Subcommand)]
pub enum KeyCommand {
    /// Create a workspace API key for a user; prints it.
    Create {
        /// Tenant id or name.
        #[arg(long)]
        tenant: String,
        /// User id or name (the key acts within their current permissions).
        #[arg(long)]
        user: String,
        /// Comma-separated grants (`all:all` = whatever the user may do).
        #[arg(long)]
        grants: String,
    },
    /// Revoke a key.
    Revoke {
        /// The key.
        key: String,
    },
}

/// `host …`.
#[derive(Debug, clap::Subcommand)]
pub enum HostCommand {
    /// Register a remote agent server (checked first); prints its id.
    Add {
        /// Base URL, e.g. `http://10.0.0.5:8000`.
        url: String,
        /// Its session API key.
        #[arg(long)]
        key: String,
        /// Directory on the host under which sandboxes get their working
        /// directories (relative paths are relative to the server's).
        #[arg(long, default_value = "workspace/sandboxes")]
        workspace_root: String,
    },
    /// List hosts (one JSON object per line).
    List,
    /// Stop placing sandboxes on a host (its sandboxes keep working).
    Remove {
        /// Host id or URL.
        host: String,
    },
}

/// `image …`.
#[derive(Debug, clap::Subcommand)]
pub enum ImageCommand {
    /// Build the docker sandbox image from this machine's agent-server
    /// binary; prints the image id.
    Build {
        /// Image tag (default `OH_CONTROL_DOCKER_IMAGE` or the built-in one).
        #[arg(long)]
        tag: Option<String>,
    },
}

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A setting is invalid.
    #[error("configuration: {0}")]
    Config(#[from] ConfigError),
    /// The control plane could not start.
    #[error(transparent)]
    Start(#[from] StartError),
    /// An administrative action failed.
    #[error(transparent)]
    Admin(#[from] AdminError),
    /// Binding or serving failed.
    #[error("{0}")]
    Io(String),
    /// Building the image failed.
    #[error(transparent)]
    Provision(#[from] crate::hosts::ProvisionError),
}

async fn admin(config: &ControlConfig) -> Result<Admin, CliError> {
    let (_, sealer, store) = crate::service::open(config).await?;
    Ok(Admin::new(store, sealer))
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}

/// Runs a command.
pub async fn run(args: ControlArgs) -> Result<(), CliError> {
    let config = ControlConfig::from_env(&Overrides {
        data_dir: args.data_dir.clone(),
        database_url: args.database_url.clone(),
    })?;
    match args.command {
        ControlCommand::Serve { host, port } => {
            let addr = format!("{host}:{port}");
            let listener = tokio::net::TcpListener::bind(&addr)
                .await
                .map_err(|e| CliError::Io(format!("cannot listen on {addr}: {e}")))?;
            let local = listener
                .local_addr()
                .map_err(|e| CliError::Io(e.to_string()))?;
            // Unusable certificate files stop the start before anything runs.
            crate::http::tls_acceptor(&config).map_err(|e| CliError::Io(format!("TLS: {e}")))?;
            let scheme = if config.tls.is_some() {
                "https"
            } else {
                "http"
            };
            let cp = ControlPlane::start(config).await?;
            crate::ssh::relay::start(&cp)
                .await
                .map_err(|e| CliError::Io(format!("SSH relay: {e}")))?;
            println!("OPENHANDS_CONTROL_URL={scheme}://{local}");
            eprintln!(
                "task-control plane listening on {scheme}://{local} (instance {})",
                cp.instance()
            );
            crate::http::serve(cp, listener, shutdown_signal())
                .await
                .map_err(|e| CliError::Io(format!("serving: {e}")))?;
        }
        ControlCommand::Tenant(TenantCommand::Create {
            name,
            max_running_tasks,
        }) => {
            let limit = max_running_tasks.unwrap_or(config.default_max_running_tasks);
            let t = admin(&config).await?.create_tenant(&name, limit).await?;
            println!("{}", t.id);
        }
        ControlCommand::Tenant(TenantCommand::SetLimit {
            tenant,
            max_running_tasks,
        }) => {
            let t = admin(&config)
                .await?
                .set_tenant_limit(&tenant, max_running_tasks)
                .await?;
            println!("{}", t.id);
        }
        ControlCommand::User(UserCommand::Create {
            tenant,
            name,
            permissions,
        }) => {
            let u = admin(&config)
                .await?
                .create_user(&tenant, &name, &permissions)
                .await?;
            println!("{}", u.id);
        }
        ControlCommand::User(UserCommand::SetPermissions {
            tenant,
            user,
            permissions,
        }) => {
            let u = admin(&config)
                .await?
                .set_permissions(&tenant, &user, &permissions)
                .await?;
            println!("{}", u.id);
        }
        ControlCommand::Token(TokenCommand::Create {
            tenant,
            user,
            ttl_hours,
        }) => {
            let ttl = match ttl_hours {
                None => None,
                Some(h) if h.is_finite() && h > 0.0 => Some(Duration::from_secs_f64(h * 3600.0)),
                Some(_) => {
                    return Err(AdminError::Invalid("--ttl-hours must be positive".into()).into());
                }
            };
            let token = admin(&config)
                .await?
                .create_token(&tenant, &user, ttl)
                .await?;
            println!("{token}");
        }
        ControlCommand::Token(TokenCommand::Revoke { token }) => {
            admin(&config).await?.revoke(&token).await?;
            eprintln!("revoked");
        }
        ControlCommand::Key(KeyCommand::Create {
            tenant,
            user,
            grants,
        }) => {
            let key = admin(&config)
                .await?
                .create_key(&tenant, &user, &grants)
                .await?;
            println!("{key}");
        }
        ControlCommand::Key(KeyCommand::Revoke { key }) => {
            admin(&config).await?.revoke(&key).await?;
            eprintln!("revoked");
        }
        ControlCommand::Host(HostCommand::Add {
            url,
            key,
            workspace_root,
        }) => {
            let h = admin(&config)
                .await?
                .add_host(&url, &key, &workspace_root, config.host_timeout)
                .await?;
            println!("{}", h.id);
        }
        ControlCommand::Host(HostCommand::List) => {
            for h in admin(&config).await?.hosts().await? {
                println!(
                    "{}",
                    serde_json::json!({"id": h.id, "url": h.url, "enabled": h.enabled != 0, "healthy": h.healthy != 0, "health_error": h.health_error, "sandboxes": h.sandboxes})
                );
            }
        }
        ControlCommand::Host(HostCommand::Remove { host }) => {
            admin(&config).await?.remove_host(&host).await?;
            eprintln!("host disabled: no new sandboxes are placed on it");
        }
        ControlCommand::Image(ImageCommand::Build { tag }) => {
            let bin = crate::hosts::find_agent_server(config.agent_server_bin.as_deref())
                .ok_or(crate::hosts::ProvisionError::NoBinary)?;
            let tag = tag.unwrap_or_else(|| config.docker_image.clone());
            let id = crate::hosts::docker::build_image(&config.docker_bin, &bin, &tag).await?;
            println!("{id}");
        }
    }
    Ok(())
}
