//! Why a docker workspace could not be started or used.

use std::time::Duration;

/// An error of a [`super::DockerWorkspace`].
#[derive(Debug, thiserror::Error)]
pub enum DockerError {
    /// The options are unusable (a missing mount directory, a bad name).
    #[error("invalid docker workspace options: {0}")]
    Invalid(String),
    /// No docker daemon answers at the configured address.
    #[error("the docker daemon at {host} does not answer: {detail}")]
    Unreachable {
        /// The daemon address.
        host: String,
        /// Why.
        detail: String,
    },
    /// The image is not on the daemon and could not be pulled.
    #[error(
        "the image {image} is not on the docker daemon and could not be pulled ({detail}); build it with `openhands control image build --tag {image}`"
    )]
    ImageMissing {
        /// The image.
        image: String,
        /// Why the pull failed.
        detail: String,
    },
    /// The daemon refused or failed an operation.
    #[error("docker {op} failed: {detail}")]
    Daemon {
        /// The operation (`create`, `start`, ...).
        op: &'static str,
        /// The daemon's answer.
        detail: String,
    },
    /// The daemon did not answer an operation in time.
    #[error("docker {op} did not answer within {after:?}")]
    Timeout {
        /// The operation.
        op: &'static str,
        /// The timeout.
        after: Duration,
    },
    /// The container ended before its agent server was ready.
    #[error("the container exited before its agent server was ready; its output:\n{logs}")]
    Exited {
        /// The last output of the container.
        logs: String,
    },
    /// The agent server did not become ready in time.
    #[error(
        "the agent server in the container was not ready within {after:?}; its output:\n{logs}"
    )]
    NotReady {
        /// The timeout.
        after: Duration,
        /// The last output of the container.
        logs: String,
    },
    /// The remote workspace could not be set up.
    #[error(transparent)]
    Workspace(#[from] crate::WorkspaceError),
}
