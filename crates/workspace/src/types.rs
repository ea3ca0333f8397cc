//! Results of workspace operations, with the reference's field names.

use serde::{Deserialize, Serialize};

/// Result of a command (`CommandResult`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandResult {
    /// The command.
    pub command: String,
    /// Exit code (-1 when killed or unknown).
    pub exit_code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// Whether the timeout stopped the command.
    pub timeout_occurred: bool,
}

/// Result of a file copy (`FileOperationResult`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileOperationResult {
    /// Whether it worked.
    pub success: bool,
    /// Source path.
    pub source_path: String,
    /// Destination path.
    pub destination_path: String,
    /// Bytes copied.
    pub file_size: Option<u64>,
    /// Why it failed.
    pub error: Option<String>,
}

impl FileOperationResult {
    pub(crate) fn ok(source: &str, dest: &str, size: u64) -> Self {
        Self {
            success: true,
            source_path: source.into(),
            destination_path: dest.into(),
            file_size: Some(size),
            error: None,
        }
    }

    pub(crate) fn failed(source: &str, dest: &str, error: impl Into<String>) -> Self {
        Self {
            success: false,
            source_path: source.into(),
            destination_path: dest.into(),
            file_size: None,
            error: Some(error.into()),
        }
    }
}

/// Errors of workspace operations.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// A local I/O operation failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The server answered with an error status.
    #[error("agent server answered {status}: {body}")]
    Http {
        /// Status code.
        status: u16,
        /// Body text.
        body: String,
    },
    /// The server could not be reached or timed out.
    #[error("cannot reach the agent server: {0}")]
    Transport(String),
    /// A git operation failed.
    #[error("git: {0}")]
    Git(String),
    /// Bad input (host URL, path).
    #[error("{0}")]
    Invalid(String),
    /// The Kubernetes API server refused or failed a request, or a
    /// sandbox resource did not become ready.
    #[error("{0}")]
    Kubernetes(#[from] crate::kubernetes::KubeError),
}
