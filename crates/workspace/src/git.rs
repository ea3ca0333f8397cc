//! Git change lists and per-file diffs through the `git` CLI.
//!
//! Follows the reference's choices: the base to compare with is picked for
//! *display* (upstream of the branch unless it equals a clean HEAD, then the
//! fork point with origin's default branch, a local `main`/`master` the
//! branch forked from, `HEAD`, or the empty tree for a repository without
//! commits); untracked files count as added; directories holding repositories
//! one level down contribute those repositories' changes. Every `git` call has
//! a timeout and its process is killed when it expires.

use crate::exec::{EnvPolicy, ProcessSpec, RunEnd, RunLimits, run_to_completion};

#[path = "git_delta.rs"]
mod delta;
pub use delta::RepositoryMetadata;
#[path = "git_remote.rs"]
pub mod remote;
pub use openhands_protocol::git::{GitChange, GitChangeStatus, GitCommit, GitCommitsPage, GitDiff};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The hash of git's empty tree.
pub const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
/// Files larger than this are not diffed.
pub const MAX_DIFF_FILE_BYTES: u64 = 1024 * 1024;

/// Why a git query failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GitError {
    /// The path is not (in) a git repository: answered with an empty result.
    #[error("{0}")]
    Repository(String),
    /// A git command failed or timed out.
    #[error("{0}")]
    Command(String),
    /// The file cannot be diffed (missing, too large, outside the repository).
    #[error("{0}")]
    Path(String),
}

/// Most output kept from one `git` command (bytes).
const MAX_GIT_OUTPUT: usize = 64 * 1024 * 1024;

/// Runs `git` commands through the execution layer, each with a timeout.
#[derive(Debug, Clone)]
pub struct Git {
    timeout: Duration,
    env: EnvPolicy,
}

/// What a finished `git` command produced.
struct GitOutput {
    success: bool,
    stdout: Vec<u8>,
}

impl Git {
    /// A runner whose commands may take `timeout` each, in the default
    /// environment policy (a repository's hooks or `core.fsmonitor` never
    /// see the server's credentials).
    pub fn new(timeout: Duration) -> Self {
        Self {
            timeout,
            env: EnvPolicy::default(),
        }
    }

    /// The same runner with the environment of `policy`.
    pub fn with_env(mut self, policy: EnvPolicy) -> Self {
        self.env = policy;
        self
    }

    /// `git args` in `cwd` under the runner's environment policy, never
    /// prompting or taking optional locks; `extra` adds variables.
    fn command(
        &self,
        args: &[&str],
        cwd: &Path,
        extra: &[(&str, &str)],
    ) -> Result<ProcessSpec, crate::exec::EnvError> {
        let mut env = self.env.child_env();
        for (name, value) in [("GIT_TERMINAL_PROMPT", "0"), ("GIT_OPTIONAL_LOCKS", "0")]
            .iter()
            .chain(extra)
        {
            env.set(name, *value)?;
        }
        Ok(ProcessSpec::new("git", env)
            .args(["-c", "core.quotePath=false"])
            .args(args)
            .cwd(cwd))
    }

    async fn output(
        &self,
        args: &[&str],
        cwd: &Path,
        timeout: Duration,
    ) -> Result<GitOutput, GitError> {
        let shown = shell_join(args);
        let spec = self
            .command(args, cwd, &[])
            .map_err(|e| GitError::Command(format!("Git command failed: {shown}: {e}")))?;
        let out = run_to_completion(
            &spec,
            &git_limits(timeout),
            &CancellationToken::new(),
            MAX_GIT_OUTPUT,
        )
        .await
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                GitError::Command("Git command not found. Is git installed?".into())
            } else {
                GitError::Command(format!("Git command failed: {shown}"))
            }
        })?;
        match out.end {
            RunEnd::Exited(code) => Ok(GitOutput {
                success: code == 0,
                stdout: out.stdout,
            }),
            RunEnd::TimedOut | RunEnd::Cancelled(_) => {
                Err(GitError::Command(format!("Git command timed out: {shown}")))
            }
        }
    }

    /// stdout of a successful `git args` in `cwd` (trimmed unless `raw`);
    /// a failure, a missing `git` or the runner's timeout is an error.
    pub async fn run(&self, args: &[&str], cwd: &Path, raw: bool) -> Result<String, GitError> {
        self.run_with_timeout(args, cwd, raw, self.timeout).await
    }

    pub(crate) async fn run_with_timeout(
        &self,
        args: &[&str],
        cwd: &Path,
        raw: bool,
        timeout: Duration,
    ) -> Result<String, GitError> {
        let out = self.output(args, cwd, timeout).await?;
        if !out.success {
            return Err(GitError::Command(format!(
                "Git command failed: {}",
                shell_join(args)
            )));
        }
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        Ok(if raw { text } else { text.trim().to_string() })
    }

    async fn rev_parse(&self, repo: &Path, rev: &str) -> Option<String> {
        self.run(&["--no-pager", "rev-parse", "--verify", rev], repo, false)
            .await
            .ok()
            .filter(|s| !s.is_empty())
    }

    async fn merge_base(&self, repo: &Path, a: &str, b: &str) -> Option<String> {
        self.run(&["--no-pager", "merge-base", a, b], repo, false)
            .await
            .ok()
            .filter(|s| !s.is_empty())
    }

    async fn current_branch(&self, repo: &Path) -> Option<String> {
        self.run(
            &["--no-pager", "rev-parse", "--abbrev-ref", "HEAD"],
            repo,
            false,
        )
        .await
        .ok()
        .filter(|b| !b.is_empty() && b != "HEAD")
    }

    async fn remote_default_branch(&self, repo: &Path) -> Option<String> {
        if let Ok(symref) = self
            .run(
                &["--no-pager", "rev-parse", "--abbrev-ref", "origin/HEAD"],
                repo,
                false,
            )
            .await
            && let Some(branch) = symref.strip_prefix("origin/")
            && !branch.is_empty()
        {
            return Some(branch.to_string());
        }
        self.remote_show_head_branch(repo).await
    }

    /// origin's default branch as `git remote show origin` reports it (it
    /// asks the remote: only tried when one is configured, and not for
    /// longer than a few seconds).
    async fn remote_show_head_branch(&self, repo: &Path) -> Option<String> {
        self.run(&["config", "--get", "remote.origin.url"], repo, false)
            .await
            .ok()?;
        let info = self
            .run_with_timeout(
                &["--no-pager", "remote", "show", "origin"],
                repo,
                false,
                self.timeout.min(Duration::from_secs(10)),
            )
            .await
            .ok()?;
        info.lines()
            .find(|l| l.contains("HEAD branch:"))
            .and_then(|l| l.rsplit(':').next())
            .map(|b| b.trim().to_string())
            .filter(|b| !b.is_empty() && b != "(unknown)")
    }

    async fn has_tracked_changes(&self, repo: &Path) -> bool {
        match self
            .run(
                &[
                    "--no-pager",
                    "status",
                    "--porcelain",
                    "--untracked-files=no",
                ],
                repo,
                false,
            )
            .await
        {
            Ok(s) => !s.trim().is_empty(),
            Err(_) => true,
        }
    }

    async fn has_commits(&self, repo: &Path) -> bool {
        self.run(&["--no-pager", "rev-list", "--count", "--all"], repo, false)
            .await
            .is_ok_and(|c| c.trim() != "0")
    }

    async fn display_base(&self, repo: &Path) -> String {
        let head = self.rev_parse(repo, "HEAD").await;
        let branch = self.current_branch(repo).await;
        if let Some(branch) = &branch
            && let Some(upstream) = self.rev_parse(repo, &format!("origin/{branch}")).await
            && (Some(&upstream) != head.as_ref() || self.has_tracked_changes(repo).await)
        {
            return upstream;
        }
        match self.remote_default_branch(repo).await {
            Some(default) => {
                let remote = format!("origin/{default}");
                if let Some(base) = self.merge_base(repo, "HEAD", &remote).await {
                    return base;
                }
                if let Some(tip) = self.rev_parse(repo, &remote).await {
                    return tip;
                }
            }
            None => {
                for local in ["main", "master"] {
                    if let Some(local_sha) = self.rev_parse(repo, local).await {
                        if branch.as_deref() != Some(local)
                            && let Some(base) = self.merge_base(repo, "HEAD", local).await
                            && base == local_sha
                        {
                            return base;
                        }
                        break;
                    }
                }
            }
        }
        head.unwrap_or_else(|| EMPTY_TREE.to_string())
    }

    /// The commit to compare with: `explicit` when given (`HEAD` on an unborn
    /// branch means the empty tree), else the display base.
    pub async fn base_ref(&self, repo: &Path, explicit: Option<&str>) -> Result<String, GitError> {
        if let Some(r) = explicit {
            let spec = format!("{r}^{{commit}}");
            return match self
                .run(
                    &[
                        "--no-pager",
                        "rev-parse",
                        "--verify",
                        "--end-of-options",
                        &spec,
                    ],
                    repo,
                    false,
                )
                .await
            {
                Ok(sha) => Ok(sha),
                Err(_) if r == "HEAD" => Ok(EMPTY_TREE.to_string()),
                Err(_) => Err(GitError::Command(format!(
                    "Git command failed: {}",
                    shell_join(&["--no-pager", "rev-parse", "--verify", &spec])
                ))),
            };
        }
        if !self.has_commits(repo).await {
            return Ok(EMPTY_TREE.to_string());
        }
        Ok(self.display_base(repo).await)
    }

    /// Resolves `dir` and checks it is inside a work tree.
    pub async fn validate_repository(&self, dir: &Path) -> Result<PathBuf, GitError> {
        let resolved = resolve(dir).await;
        match tokio::fs::metadata(&resolved).await {
            Err(_) => {
                return Err(GitError::Repository(format!(
                    "Directory does not exist: {}",
                    resolved.display()
                )));
            }
            Ok(m) if !m.is_dir() => {
                return Err(GitError::Repository(format!(
                    "Path is not a directory: {}",
                    resolved.display()
                )));
            }
            Ok(_) => {}
        }
        self.run(&["rev-parse", "--git-dir"], &resolved, false)
            .await
            .map_err(|_| {
                GitError::Repository(format!("Not a git repository: {}", resolved.display()))
            })?;
        Ok(resolved)
    }

    /// [`Git::changes`] as `GET /api/git/changes` answers: a path that is
    /// not in a repository gives an empty list.
    pub async fn changes_or_empty(
        &self,
        dir: &Path,
        explicit: Option<&str>,
    ) -> Result<Vec<GitChange>, GitError> {
        match self.changes(dir, explicit).await {
            Err(GitError::Repository(_)) => Ok(Vec::new()),
            other => other,
        }
    }

    /// [`Git::diff`] as `GET /api/git/diff` answers: a file outside any
    /// repository has neither side.
    pub async fn diff_or_empty(
        &self,
        file: &Path,
        explicit: Option<&str>,
    ) -> Result<GitDiff, GitError> {
        match self.diff(file, explicit).await {
            Err(GitError::Repository(_)) => Ok(GitDiff {
                modified: None,
                original: None,
            }),
            other => other,
        }
    }

    /// Changes of the repository at (or containing) `dir`, relative to `dir`.
    pub async fn changes_in_repo(
        &self,
        dir: &Path,
        explicit: Option<&str>,
    ) -> Result<Vec<GitChange>, GitError> {
        let repo = self.validate_repository(dir).await?;
        let base = self.base_ref(&repo, explicit).await?;
        let diff = self
            .run(
                &[
                    "--no-pager",
                    "diff",
                    "--name-status",
                    "--relative",
                    &base,
                    "--",
                ],
                &repo,
                false,
            )
            .await?;
        let mut changes = parse_name_status(&diff)?;
        if let Ok(untracked) = self
            .run(
                &["--no-pager", "ls-files", "--others", "--exclude-standard"],
                &repo,
                false,
            )
            .await
        {
            for line in untracked.lines().map(str::trim).filter(|l| !l.is_empty()) {
                changes.push(GitChange {
                    status: GitChangeStatus::Added,
                    path: line.to_string(),
                });
            }
        }
        Ok(changes)
    }

    /// Changes under `dir`, including repositories one level below it.
    pub async fn changes(
        &self,
        dir: &Path,
        explicit: Option<&str>,
    ) -> Result<Vec<GitChange>, GitError> {
        let nested = nested_repositories(dir).await;
        let (mut changes, base_error) = match self.changes_in_repo(dir, explicit).await {
            Ok(c) => (c, None),
            Err(e @ GitError::Repository(_)) if !nested.is_empty() => (Vec::new(), Some(e)),
            Err(e) => return Err(e),
        };
        changes.retain(|c| {
            !nested
                .iter()
                .any(|n| Path::new(&c.path).starts_with(Path::new(n)))
        });
        let mut found_nested = false;
        for name in &nested {
            match self.changes_in_repo(&dir.join(name), explicit).await {
                Ok(inner) => {
                    found_nested = true;
                    changes.extend(inner.into_iter().map(|c| GitChange {
                        status: c.status,
                        path: format!("{name}/{}", c.path),
                    }));
                }
                Err(e) => tracing::warn!(repo = %name, error = %e, "skipping nested git directory"),
            }
        }
        if let Some(e) = base_error
            && !found_nested
        {
            return Err(e);
        }
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(changes)
    }

    /// Both sides of one file's diff against the base (or `explicit`).
    pub async fn diff(&self, file: &Path, explicit: Option<&str>) -> Result<GitDiff, GitError> {
        let path = resolve(file).await;
        let missing = || GitError::Path(format!("File does not exist: {}", path.display()));
        let deleted = tokio::fs::symlink_metadata(&path).await.is_err();
        if !deleted {
            let size = tokio::fs::metadata(&path)
                .await
                .map_err(|_| GitError::Path(format!("Cannot access file: {}", path.display())))?
                .len();
            if size > MAX_DIFF_FILE_BYTES {
                return Err(too_large(size));
            }
        }
        let Some(repo) = closest_repository(&path).await else {
            return Err(if deleted {
                missing()
            } else {
                GitError::Repository(format!(
                    "File is not in a git repository: {}",
                    path.display()
                ))
            });
        };
        let repo = self.validate_repository(&repo).await?;
        let base = self.base_ref(&repo, explicit).await?;
        let relative = path
            .strip_prefix(&repo)
            .map_err(|_| {
                GitError::Path(format!(
                    "File is not within git repository: {}",
                    path.display()
                ))
            })?
            .to_string_lossy()
            .into_owned();
        let spec = format!("{base}:{relative}");
        if deleted {
            let kind = self.run(&["cat-file", "-t", &spec], &repo, false).await;
            if kind.as_deref() != Ok("blob") {
                return Err(missing());
            }
            let size: u64 = self
                .run(&["cat-file", "-s", &spec], &repo, false)
                .await
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(missing)?;
            if size > MAX_DIFF_FILE_BYTES {
                return Err(too_large(size));
            }
        }
        let original = match self.run(&["show", &spec], &repo, true).await {
            Ok(text) => py_splitlines(&text).join("\n"),
            Err(_) => String::new(),
        };
        if deleted {
            return Ok(GitDiff {
                modified: Some(String::new()),
                original: Some(original),
            });
        }
        let modified = match tokio::fs::read(&path).await {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => py_splitlines(&text).join("\n"),
                Err(_) => String::new(),
            },
            Err(_) => String::new(),
        };
        Ok(GitDiff {
            modified: Some(modified),
            original: Some(original),
        })
    }

    /// One file as changed by `commit` (both sides read from git objects).
    pub async fn commit_file_diff(&self, file: &Path, commit: &str) -> Result<GitDiff, GitError> {
        let path = resolve(file).await;
        let Some(repo) = closest_repository(&path).await else {
            return Err(GitError::Repository(format!(
                "File is not in a git repository: {}",
                path.display()
            )));
        };
        let repo = self.validate_repository(&repo).await?;
        let spec = format!("{commit}^{{commit}}");
        let sha = self
            .run(
                &[
                    "--no-pager",
                    "rev-parse",
                    "--verify",
                    "--end-of-options",
                    &spec,
                ],
                &repo,
                false,
            )
            .await
            .map_err(|_| {
                GitError::Command(format!(
                    "Git command failed: {}",
                    shell_join(&["--no-pager", "rev-parse", "--verify", &spec])
                ))
            })?;
        let parent = self
            .rev_parse(&repo, &format!("{sha}^"))
            .await
            .unwrap_or_else(|| EMPTY_TREE.to_string());
        let relative = path
            .strip_prefix(&repo)
            .map_err(|_| {
                GitError::Path(format!(
                    "File is not within git repository: {}",
                    path.display()
                ))
            })?
            .to_string_lossy()
            .into_owned();
        let original = self.show_at(&repo, &parent, &relative).await?;
        let modified = self.show_at(&repo, &sha, &relative).await?;
        Ok(GitDiff {
            modified: Some(modified),
            original: Some(original),
        })
    }

    /// The `limit` most recent commits reachable from HEAD.
    pub async fn commits(&self, dir: &Path, limit: usize) -> Result<GitCommitsPage, GitError> {
        let repo = self.validate_repository(dir).await?;
        let Some(head) = self.rev_parse(&repo, "HEAD").await else {
            return Ok(GitCommitsPage {
                commits: Vec::new(),
                has_more: false,
            });
        };
        let count = (limit + 1).to_string();
        let output = self
            .run(
                &[
                    "--no-pager",
                    "log",
                    "--no-show-signature",
                    "--format=%H%x1f%h%x1f%an%x1f%aI%x1f%s",
                    "-n",
                    &count,
                    &head,
                ],
                &repo,
                false,
            )
            .await?;
        let mut commits: Vec<GitCommit> = output
            .lines()
            .filter_map(|line| {
                let fields: Vec<&str> = line.split('\x1f').collect();
                let [sha, short_sha, author, timestamp, subject] = fields.as_slice() else {
                    tracing::warn!(line, "skipping malformed git log line");
                    return None;
                };
                Some(GitCommit {
                    sha: (*sha).into(),
                    short_sha: (*short_sha).into(),
                    subject: (*subject).into(),
                    author: (*author).into(),
                    timestamp: (*timestamp).into(),
                })
            })
            .collect();
        let has_more = commits.len() > limit;
        commits.truncate(limit);
        Ok(GitCommitsPage { commits, has_more })
    }

    /// Files changed by one commit, compared with its first parent.
    pub async fn commit_changes(
        &self,
        dir: &Path,
        commit: &str,
    ) -> Result<Vec<GitChange>, GitError> {
        let repo = self.validate_repository(dir).await?;
        let spec = format!("{commit}^{{commit}}");
        let sha = self
            .run(
                &[
                    "--no-pager",
                    "rev-parse",
                    "--verify",
                    "--end-of-options",
                    &spec,
                ],
                &repo,
                false,
            )
            .await
            .map_err(|_| {
                GitError::Command(format!(
                    "Git command failed: {}",
                    shell_join(&["--no-pager", "rev-parse", "--verify", &spec])
                ))
            })?;
        let parent = self
            .rev_parse(&repo, &format!("{sha}^"))
            .await
            .unwrap_or_else(|| EMPTY_TREE.to_string());
        let output = self
            .run(
                &["--no-pager", "diff", "--name-status", &parent, &sha],
                &repo,
                false,
            )
            .await?;
        parse_name_status(&output)
    }

    async fn show_at(&self, repo: &Path, rev: &str, relative: &str) -> Result<String, GitError> {
        let spec = format!("{rev}:{relative}");
        let Ok(size) = self
            .run(&["--no-pager", "cat-file", "-s", &spec], repo, false)
            .await
        else {
            return Ok(String::new());
        };
        let size: u64 = size.parse().unwrap_or(0);
        if size > MAX_DIFF_FILE_BYTES {
            return Err(too_large(size));
        }
        Ok(self
            .run(&["--no-pager", "show", &spec], repo, false)
            .await
            .unwrap_or_default())
    }
}

/// Limits of one `git` command: `timeout`, then a short wait for output
/// from what it left running.
fn git_limits(timeout: Duration) -> RunLimits {
    RunLimits {
        timeout,
        linger_after_exit: Some(Duration::from_secs(2)),
        ..RunLimits::default()
    }
}

fn too_large(size: u64) -> GitError {
    GitError::Path(format!(
        "File too large for git diff: {size} bytes (max: {MAX_DIFF_FILE_BYTES} bytes)"
    ))
}

/// `path` made absolute (against the working directory) with symlinks resolved.
async fn resolve(path: &Path) -> PathBuf {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || crate::confine::resolve_lenient(&path))
        .await
        .unwrap_or_default()
}

/// The nearest directory at or above `path` holding `.git`.
async fn closest_repository(path: &Path) -> Option<PathBuf> {
    let mut current = Some(path.to_path_buf());
    while let Some(dir) = current {
        if tokio::fs::symlink_metadata(dir.join(".git")).await.is_ok() {
            return Some(dir);
        }
        current = dir.parent().map(Path::to_path_buf);
    }
    None
}

/// Names of non-hidden directories directly under `dir` that hold `.git`.
async fn nested_repositories(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(mut entries) = tokio::fs::read_dir(dir).await else {
        return out;
    };
    while let Ok(Some(entry)) = entries.next_entry().await {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        if tokio::fs::symlink_metadata(entry.path().join(".git"))
            .await
            .is_ok()
        {
            out.push(name);
        }
    }
    out.sort();
    out
}

/// `git <args>` quoted like Python's `shlex.join`.
pub fn shell_join(args: &[&str]) -> String {
    std::iter::once("git")
        .chain(args.iter().copied())
        .map(shell_quote)
        .collect::<Vec<_>>()
        .join(" ")
}

fn shell_quote(arg: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    if arg.is_empty() {
        "''".into()
    } else if arg.chars().all(safe) {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\"'\"'"))
    }
}

/// Parses `git diff --name-status` output: renames become delete + add,
/// copies an add.
pub fn parse_name_status(output: &str) -> Result<Vec<GitChange>, GitError> {
    let mut changes = Vec::new();
    for line in output.lines().filter(|l| !l.trim().is_empty()) {
        let parts: Vec<&str> = line.split('\t').collect();
        let bad = || GitError::Command(format!("Unexpected git diff output format: {line}"));
        let status = parts.first().map(|s| s.trim()).unwrap_or("");
        if status.starts_with('R') && parts.len() == 3 {
            changes.push(GitChange {
                status: GitChangeStatus::Deleted,
                path: parts[1].to_string(),
            });
            changes.push(GitChange {
                status: GitChangeStatus::Added,
                path: parts[2].to_string(),
            });
            continue;
        }
        if status.starts_with('C') && parts.len() == 3 {
            changes.push(GitChange {
                status: GitChangeStatus::Added,
                path: parts[2].to_string(),
            });
            continue;
        }
        if parts.len() != 2 {
            return Err(bad());
        }
        let status = match status {
            "M" | "U" | "*" | "T" => GitChangeStatus::Updated,
            "A" | "??" => GitChangeStatus::Added,
            "D" => GitChangeStatus::Deleted,
            other => {
                return Err(GitError::Command(format!("Unexpected git status: {other}")));
            }
        };
        changes.push(GitChange {
            status,
            path: parts[1].to_string(),
        });
    }
    Ok(changes)
}

/// Python's `str.splitlines()`.
pub fn py_splitlines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let is_break = matches!(
            c,
            '\n' | '\r'
                | '\x0b'
                | '\x0c'
                | '\x1c'
                | '\x1d'
                | '\x1e'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if !is_break {
            continue;
        }
        lines.push(&text[start..i]);
        let mut end = i + c.len_utf8();
        if c == '\r'
            && let Some((j, '\n')) = chars.peek().copied()
        {
            chars.next();
            end = j + 1;
        }
        start = end;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_status_lines() {
        let out = "M\ta.txt\nA\tdir/b c.txt\nD\told\nR100\tx\ty\nC75\tp\tq\n";
        let changes = parse_name_status(out).unwrap();
        let got: Vec<(GitChangeStatus, &str)> = changes
            .iter()
            .map(|c| (c.status, c.path.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (GitChangeStatus::Updated, "a.txt"),
                (GitChangeStatus::Added, "dir/b c.txt"),
                (GitChangeStatus::Deleted, "old"),
                (GitChangeStatus::Deleted, "x"),
                (GitChangeStatus::Added, "y"),
                (GitChangeStatus::Added, "q"),
            ]
        );
        assert!(parse_name_status("X\tz").is_err());
        assert!(parse_name_status("garbage").is_err());
    }

    #[test]
    fn commands_are_quoted_like_shlex() {
        assert_eq!(
            shell_join(&["rev-parse", "--verify", "bogus^{commit}"]),
            "git rev-parse --verify 'bogus^{commit}'"
        );
        assert_eq!(
            shell_join(&["show", "a b", "it's", ""]),
            "git show 'a b' 'it'\"'\"'s' ''"
        );
    }

    #[test]
    fn splitlines_like_python() {
        assert_eq!(py_splitlines("a\nb\r\nc\rd\n"), vec!["a", "b", "c", "d"]);
        assert_eq!(py_splitlines(""), Vec::<&str>::new());
        assert_eq!(py_splitlines("\n\n"), vec!["", ""]);
        assert_eq!(py_splitlines("x\u{2028}y"), vec!["x", "y"]);
    }
}
