//! A workspace on this machine.

use crate::exec::{EnvPolicy, ProcessSpec, RunEnd, RunLimits, run_to_completion};
use crate::git::{Git, GitChange, GitDiff};
use crate::types::{CommandResult, FileOperationResult, WorkspaceError};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Longest output kept per stream of a command (bytes).
const MAX_OUTPUT: usize = 16 * 1024 * 1024;
/// After a command exited, how long output from what it left running is
/// still awaited (then its group is killed).
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);
/// Time allowed for a git command.
const GIT_TIMEOUT: Duration = Duration::from_secs(30);
/// Between SIGTERM and SIGKILL when a command is stopped.
const TERM_GRACE: Duration = Duration::from_secs(1);

/// A directory on this machine.
#[derive(Debug, Clone)]
pub struct LocalWorkspace {
    working_dir: String,
    env_policy: EnvPolicy,
}

impl LocalWorkspace {
    /// A workspace at `working_dir` (commands get the default environment
    /// policy).
    pub fn new(working_dir: impl Into<String>) -> Self {
        Self {
            working_dir: working_dir.into(),
            env_policy: EnvPolicy::default(),
        }
    }

    /// The same workspace with `policy` for the environment of commands.
    pub fn with_env_policy(mut self, policy: EnvPolicy) -> Self {
        self.env_policy = policy;
        self
    }

    /// The working directory.
    pub fn working_dir(&self) -> &str {
        &self.working_dir
    }

    fn resolve(&self, p: &str) -> PathBuf {
        let path = Path::new(p);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            Path::new(&self.working_dir).join(path)
        }
    }

    /// Runs `command` with `bash -c` in its own process group, with the
    /// environment policy's environment; on timeout the whole group is
    /// stopped and `timeout_occurred` is set.
    pub async fn execute_command(
        &self,
        command: &str,
        cwd: Option<&str>,
        timeout: Duration,
    ) -> Result<CommandResult, WorkspaceError> {
        let dir = self.resolve(cwd.unwrap_or(&self.working_dir));
        let spec = ProcessSpec::bash(command, self.env_policy.child_env()).cwd(dir);
        let limits = RunLimits {
            timeout,
            grace: TERM_GRACE,
            drain: DRAIN_TIMEOUT,
            linger_after_exit: Some(DRAIN_TIMEOUT),
        };
        let out = run_to_completion(&spec, &limits, &CancellationToken::new(), MAX_OUTPUT).await?;
        let (exit_code, timed_out) = match out.end {
            RunEnd::Exited(code) => (i32::try_from(code).unwrap_or(-1), false),
            RunEnd::TimedOut => (-1, true),
            RunEnd::Cancelled(_) => (-1, false),
        };
        Ok(CommandResult {
            command: command.to_string(),
            exit_code,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            timeout_occurred: timed_out,
        })
    }

    /// Copies `source` (local) to `destination` (relative to the workspace or absolute).
    pub async fn file_upload(&self, source: &Path, destination: &str) -> FileOperationResult {
        let dest = self.resolve(destination);
        copy(source, &dest, &source.to_string_lossy(), destination).await
    }

    /// Copies `source` (in the workspace) to `destination` (local).
    pub async fn file_download(&self, source: &str, destination: &Path) -> FileOperationResult {
        let src = self.resolve(source);
        copy(&src, destination, source, &destination.to_string_lossy()).await
    }

    /// Changes of the repository at (or containing) `path`, relative to
    /// `path`, against the auto-detected base — the answer of the agent
    /// server's `GET /api/git/changes` (renames are a deletion plus an
    /// addition, untracked files are added; no repository → empty).
    pub async fn git_changes(&self, path: &str) -> Result<Vec<GitChange>, WorkspaceError> {
        Git::new(GIT_TIMEOUT)
            .with_env(self.env_policy.clone())
            .changes_or_empty(&self.resolve(path), None)
            .await
            .map_err(|e| WorkspaceError::Git(e.to_string()))
    }

    /// Both sides of the file at `path` against the auto-detected base — the
    /// answer of `GET /api/git/diff` (outside a repository: both `None`).
    pub async fn git_diff(&self, path: &str) -> Result<GitDiff, WorkspaceError> {
        Git::new(GIT_TIMEOUT)
            .with_env(self.env_policy.clone())
            .diff_or_empty(&self.resolve(path), None)
            .await
            .map_err(|e| WorkspaceError::Git(e.to_string()))
    }

    /// No-op for local workspaces.
    pub fn pause(&self) {}

    /// No-op for local workspaces.
    pub fn resume(&self) {}
}

async fn copy(src: &Path, dest: &Path, src_label: &str, dest_label: &str) -> FileOperationResult {
    if let Some(parent) = dest.parent()
        && let Err(e) = tokio::fs::create_dir_all(parent).await
    {
        return FileOperationResult::failed(src_label, dest_label, e.to_string());
    }
    match tokio::fs::copy(src, dest).await {
        Ok(n) => FileOperationResult::ok(src_label, dest_label, n),
        Err(e) => FileOperationResult::failed(src_label, dest_label, e.to_string()),
    }
}
