//! Git answers of `/api/git/*` (`GitChange`, `GitDiff`, commits), shared by
//! the server, the local workspace and the remote workspace client.

use serde::{Deserialize, Serialize};

/// Kind of change of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum GitChangeStatus {
    /// Moved (not produced: renames are reported as delete + add).
    #[serde(rename = "MOVED")]
    Moved,
    /// New file.
    #[serde(rename = "ADDED")]
    Added,
    /// Removed file.
    #[serde(rename = "DELETED")]
    Deleted,
    /// Modified file.
    #[serde(rename = "UPDATED")]
    Updated,
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GitChange {
    /// What happened to it.
    pub status: GitChangeStatus,
    /// Path relative to the requested directory (POSIX separators).
    pub path: String,
}

/// Both sides of one file's diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GitDiff {
    /// Current content.
    pub modified: Option<String>,
    /// Content at the base.
    pub original: Option<String>,
}

/// One commit of a repository's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GitCommit {
    /// Full SHA.
    pub sha: String,
    /// Abbreviated SHA.
    pub short_sha: String,
    /// First line of the message.
    pub subject: String,
    /// Author name.
    pub author: String,
    /// Author date, strict ISO 8601 with offset.
    pub timestamp: String,
}

/// Most recent commits, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GitCommitsPage {
    /// The commits.
    pub commits: Vec<GitCommit>,
    /// Whether the history holds more.
    pub has_more: bool,
}
