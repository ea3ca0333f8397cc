//! A workspace on this machine.

use crate::exec::{EnvPolicy, ProcessSpec, RunEnd, RunLimits, run_to_completion};
use crate::types::{
    CommandResult, FileOperationResult, GitChange, GitChangeStatus, GitDiff, WorkspaceError,
};
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

    /// Changes of the repository containing `path`.
    pub async fn git_changes(&self, path: &str) -> Result<Vec<GitChange>, WorkspaceError> {
        let dir = self.resolve(path);
        let out = git(
            &self.env_policy,
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
        let original = git(&self.env_policy, &dir, &["show", &format!("HEAD:./{name}")])
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

async fn git(policy: &EnvPolicy, dir: &Path, args: &[&str]) -> Result<String, WorkspaceError> {
    let spec = ProcessSpec::new("git", policy.child_env())
        .args(args)
        .cwd(dir);
    let limits = RunLimits {
        timeout: GIT_TIMEOUT,
        linger_after_exit: Some(DRAIN_TIMEOUT),
        ..RunLimits::default()
    };
    let out = run_to_completion(&spec, &limits, &CancellationToken::new(), MAX_OUTPUT).await?;
    match out.end {
        RunEnd::Exited(0) => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        RunEnd::Exited(_) => Err(WorkspaceError::Git(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        )),
        RunEnd::TimedOut | RunEnd::Cancelled(_) => Err(WorkspaceError::Git(format!(
            "git {} timed out",
            args.join(" ")
        ))),
    }
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
