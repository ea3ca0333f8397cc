//! A workspace on this machine.

use crate::git::{Git, GitChange, GitDiff};
use crate::types::{CommandResult, FileOperationResult, WorkspaceError};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::process::Command;

/// Longest output kept per stream of a command (bytes).
const MAX_OUTPUT: usize = 16 * 1024 * 1024;
/// Time allowed to drain pipes after the process group was killed.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);
/// Time allowed for a git command.
const GIT_TIMEOUT: Duration = Duration::from_secs(30);

/// A directory on this machine.
#[derive(Debug, Clone)]
pub struct LocalWorkspace {
    working_dir: String,
}

impl LocalWorkspace {
    /// A workspace at `working_dir`.
    pub fn new(working_dir: impl Into<String>) -> Self {
        Self {
            working_dir: working_dir.into(),
        }
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

    /// Runs `command` with `bash -c` in its own process group; on timeout
    /// the whole group is killed and `timeout_occurred` is set.
    pub async fn execute_command(
        &self,
        command: &str,
        cwd: Option<&str>,
        timeout: Duration,
    ) -> Result<CommandResult, WorkspaceError> {
        let dir = self.resolve(cwd.unwrap_or(&self.working_dir));
        let mut child = Command::new("bash")
            .arg("-c")
            .arg(command)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()?;
        let pid = child.id();
        let mut out = child.stdout.take();
        let mut err = child.stderr.take();
        let read_out = async move {
            let mut buf = Vec::new();
            if let Some(o) = out.as_mut() {
                let _ = o.take(MAX_OUTPUT as u64).read_to_end(&mut buf).await;
            }
            buf
        };
        let read_err = async move {
            let mut buf = Vec::new();
            if let Some(e) = err.as_mut() {
                let _ = e.take(MAX_OUTPUT as u64).read_to_end(&mut buf).await;
            }
            buf
        };
        let readers = tokio::spawn(async move { tokio::join!(read_out, read_err) });
        let (exit_code, timed_out) = match tokio::time::timeout(timeout, child.wait()).await {
            Ok(status) => (status?.code().unwrap_or(-1), false),
            Err(_) => {
                kill_group(pid);
                let _ = child.wait().await;
                (-1, true)
            }
        };
        // Grandchildren may keep the pipes open: do not wait for them forever.
        let (stdout, stderr) = match tokio::time::timeout(DRAIN_TIMEOUT, readers).await {
            Ok(Ok((o, e))) => (o, e),
            _ => {
                kill_group(pid);
                (Vec::new(), Vec::new())
            }
        };
        Ok(CommandResult {
            command: command.to_string(),
            exit_code,
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
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
            .changes_or_empty(&self.resolve(path), None)
            .await
            .map_err(|e| WorkspaceError::Git(e.to_string()))
    }

    /// Both sides of the file at `path` against the auto-detected base — the
    /// answer of `GET /api/git/diff` (outside a repository: both `None`).
    pub async fn git_diff(&self, path: &str) -> Result<GitDiff, WorkspaceError> {
        Git::new(GIT_TIMEOUT)
            .diff_or_empty(&self.resolve(path), None)
            .await
            .map_err(|e| WorkspaceError::Git(e.to_string()))
    }

    /// No-op for local workspaces.
    pub fn pause(&self) {}

    /// No-op for local workspaces.
    pub fn resume(&self) {}
}

fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
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
