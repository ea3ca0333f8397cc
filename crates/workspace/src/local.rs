//! A workspace on this machine.

use crate::types::{
    CommandResult, FileOperationResult, GitChange, GitChangeStatus, GitDiff, WorkspaceError,
};
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

    /// Changes of the repository containing `path`.
    pub async fn git_changes(&self, path: &str) -> Result<Vec<GitChange>, WorkspaceError> {
        let dir = self.resolve(path);
        let out = git(
            &dir,
            &["status", "--porcelain=v1", "-z", "--untracked-files=all"],
        )
        .await?;
        Ok(parse_porcelain(&out))
    }

    /// Committed and current content of the file at `path`.
    pub async fn git_diff(&self, path: &str) -> Result<GitDiff, WorkspaceError> {
        let file = self.resolve(path);
        let dir = file
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from(&self.working_dir));
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| WorkspaceError::Invalid(format!("{path} is not a file path")))?;
        // Like the reference: both sides normalised to lines joined by `\n`
        // (no trailing newline); a side that does not exist is empty.
        let normalise = |t: &str| t.lines().collect::<Vec<_>>().join("\n");
        let original = git(&dir, &["show", &format!("HEAD:./{name}")])
            .await
            .map(|t| normalise(&t))
            .unwrap_or_default();
        let modified = tokio::fs::read_to_string(&file)
            .await
            .map(|t| normalise(&t))
            .unwrap_or_default();
        Ok(GitDiff {
            modified: Some(modified),
            original: Some(original),
        })
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

async fn git(dir: &Path, args: &[&str]) -> Result<String, WorkspaceError> {
    let run = Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(GIT_TIMEOUT, run)
        .await
        .map_err(|_| WorkspaceError::Git(format!("git {} timed out", args.join(" "))))??;
    if !out.status.success() {
        return Err(WorkspaceError::Git(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Parses `git status --porcelain=v1 -z`.
fn parse_porcelain(out: &str) -> Vec<GitChange> {
    let mut changes = Vec::new();
    let mut entries = out.split('\0').filter(|e| !e.is_empty());
    while let Some(entry) = entries.next() {
        if entry.len() < 4 {
            continue;
        }
        let (xy, path) = entry.split_at(3);
        let xy = xy.trim_end();
        let status = if xy.contains('R') {
            // the original path follows as its own entry
            let _ = entries.next();
            GitChangeStatus::Moved
        } else if xy.contains('D') {
            GitChangeStatus::Deleted
        } else if xy.contains('A') || xy.contains('?') {
            GitChangeStatus::Added
        } else {
            GitChangeStatus::Updated
        };
        changes.push(GitChange {
            status,
            path: path.to_string(),
        });
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn porcelain_parsing() {
        let out = " M a.txt\0?? new.txt\0D  gone.txt\0R  to.txt\0from.txt\0A  added.rs\0";
        let c = parse_porcelain(out);
        assert_eq!(
            c.iter()
                .map(|x| (x.status, x.path.as_str()))
                .collect::<Vec<_>>(),
            vec![
                (GitChangeStatus::Updated, "a.txt"),
                (GitChangeStatus::Added, "new.txt"),
                (GitChangeStatus::Deleted, "gone.txt"),
                (GitChangeStatus::Moved, "to.txt"),
                (GitChangeStatus::Added, "added.rs"),
            ]
        );
    }
}
