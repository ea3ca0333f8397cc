//! Why the SSH relay could not start a program for a channel (the text is
//! sent to the client on the channel's standard error).

/// Why a program of an SSH channel did not start.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    /// The connection has not authenticated.
    #[error("not authenticated")]
    NotAuthenticated,
    /// A local sandbox of another control-plane instance.
    #[error("this sandbox runs on another control-plane instance; connect through its relay")]
    OtherInstance,
    /// An engine the relay does not reach into.
    #[error("SSH into {0} sandboxes is not available; only local, docker and swarm ones")]
    Unsupported(String),
    /// The engine's docker daemon is not usable.
    #[error("{0}")]
    Engine(#[from] crate::hosts::ProvisionError),
    /// The sandbox's container could not be inspected.
    #[error("the sandbox's container: {0}")]
    Inspect(#[source] openhands_workspace::docker::DockerError),
    /// The sandbox's container is stopped.
    #[error("the sandbox's container is not running")]
    NotRunning,
    /// The Swarm manager's answer failed.
    #[error("swarm: {0}")]
    Swarm(#[source] openhands_workspace::docker::DockerError),
    /// The sandbox's Swarm service runs no task.
    #[error("the sandbox's Swarm service has no running task")]
    NoTask,
    /// The sandbox's Swarm task has no container yet.
    #[error("the sandbox's Swarm task has no container yet")]
    NoContainer,
    /// The container runs on a node this manager's daemon cannot reach.
    #[error(
        "the sandbox's container runs on Swarm node {0}; the relay reaches containers only on the node of the manager it talks to"
    )]
    OtherNode(String),
    /// No random token for the exec's pid file.
    #[error("{0}")]
    Random(#[from] crate::secrets::SecretError),
    /// A docker call about the exec failed.
    #[error("{what} failed: {source}")]
    Docker {
        /// The step (`creating the exec`, ...).
        what: &'static str,
        /// The daemon's error.
        source: bollard::errors::Error,
    },
    /// A docker call about the exec got no answer in time.
    #[error("{0}: the docker daemon did not answer")]
    DockerSilent(&'static str),
    /// The exec did not attach its streams.
    #[error("the exec started detached")]
    Detached,
    /// A local sandbox that cannot be confined.
    #[error(
        "local sandboxes cannot be confined on this control plane, so SSH into them is refused"
    )]
    Unconfined,
    /// Confining the session failed.
    #[error("confining the session failed: {0}")]
    Confine(#[source] openhands_workspace::exec::SandboxError),
    /// SFTP asked for, no SFTP server installed.
    #[error("no SFTP server (openssh-sftp-server) is installed for the relay")]
    NoSftp,
    /// An empty command line.
    #[error("the program has no command line")]
    NoCommand,
    /// The blocking set-up task did not finish.
    #[error("{0}")]
    Worker(#[from] tokio::task::JoinError),
    /// Starting the local program or its terminal failed.
    #[error("{what} failed: {source}")]
    Local {
        /// The step (`starting it`, `opening a terminal`, ...).
        what: &'static str,
        /// What the system said.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl RelayError {
    /// A failed local step.
    pub(crate) fn local(
        what: &'static str,
    ) -> impl FnOnce(Box<dyn std::error::Error + Send + Sync>) -> Self {
        move |source| Self::Local { what, source }
    }
}

/// Why the SSH relay did not start.
#[derive(Debug, thiserror::Error)]
pub enum RelayStartError {
    /// The host key could not be loaded or made.
    #[error(transparent)]
    HostKey(#[from] super::hostkey::HostKeyError),
    /// The configured address cannot be bound.
    #[error("OH_CONTROL_SSH_ADDR {addr}: {source}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// What the system said.
        source: std::io::Error,
    },
    /// The bound address cannot be read back.
    #[error("{0}")]
    LocalAddr(#[source] std::io::Error),
}
