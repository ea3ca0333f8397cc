//! Archive support on [`Git`]: the working-tree delta against a base as a
//! binary patch written to a file (through a scratch index, so the
//! repository's own index is never touched), and the repository's identity
//! (remote, branch, HEAD).

use super::{EMPTY_TREE, Git, GitError, git_limits, shell_join};
use crate::exec::{OutputStream, RunEnd, run_streaming};
use openhands_protocol::py_repr::py_repr;
use std::path::Path;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How long staging or diffing a large work tree may take.
const DELTA_STEP_TIMEOUT: Duration = Duration::from_secs(300);

/// A repository's identity, as far as it can be read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepositoryMetadata {
    /// `origin`'s URL with credentials and query parameters redacted.
    pub repo_remote: Option<String>,
    /// The current branch, or `DETACHED`.
    pub branch: Option<String>,
    /// The commit HEAD points to.
    pub head_commit: Option<String>,
}

/// `https://user:token@host/p?x=y` → `https://****@host/p`: what may appear
/// in a response header.
fn redact_remote(url: &str) -> String {
    let without_query = url.split(['?', '#']).next().unwrap_or(url);
    match without_query.split_once("://") {
        Some((scheme, rest)) => match rest.split_once('@') {
            Some((creds, host)) if !creds.contains('/') => format!("{scheme}://****@{host}"),
            _ => without_query.to_string(),
        },
        None => without_query.to_string(),
    }
}

impl Git {
    /// Whether HEAD is detached (no current branch).
    pub async fn head_is_detached(&self, repo: &Path) -> bool {
        self.run(
            &["--no-pager", "rev-parse", "--abbrev-ref", "HEAD"],
            repo,
            false,
        )
        .await
        .is_ok_and(|b| b == "HEAD")
    }

    /// Remote, branch and HEAD of the repository at `repo` (best effort).
    pub async fn repository_metadata(&self, repo: &Path) -> RepositoryMetadata {
        let mut meta = RepositoryMetadata::default();
        if let Ok(remote) = self
            .run(&["remote", "get-url", "origin"], repo, false)
            .await
            && !remote.is_empty()
        {
            meta.repo_remote = Some(redact_remote(&remote));
        }
        if let Ok(out) = self
            .run(&["rev-parse", "HEAD", "--abbrev-ref", "HEAD"], repo, false)
            .await
        {
            let lines: Vec<&str> = out.lines().collect();
            if let [head, branch] = lines.as_slice() {
                meta.head_commit = Some(head.to_string());
                meta.branch = Some(if *branch == "HEAD" {
                    "DETACHED".to_string()
                } else {
                    branch.to_string()
                });
            }
        }
        meta
    }

    /// The base a patch meant to be replayed elsewhere is made against
    /// (the reference's `export` purpose): the first of `origin/<branch>`,
    /// `origin/<default branch>` and their merge base that resolves, else
    /// the empty tree — never a local-only commit a fresh clone lacks.
    pub async fn export_base(&self, repo: &Path) -> String {
        if !self.has_commits(repo).await {
            return EMPTY_TREE.to_string();
        }
        let mut candidates = Vec::new();
        if let Some(branch) = self.current_branch(repo).await {
            candidates.push(format!("origin/{branch}"));
        }
        if let Some(default) = self.remote_show_head_branch(repo).await {
            let remote = format!("origin/{default}");
            candidates.push(remote.clone());
            if let Some(base) = self.merge_base(repo, "HEAD", &remote).await {
                candidates.push(base);
            }
        }
        for candidate in candidates {
            if let Some(sha) = self.rev_parse(repo, &candidate).await {
                return sha;
            }
        }
        EMPTY_TREE.to_string()
    }

    /// Writes the delta of the work tree at `root` (scoped to `root` when it
    /// is a sub-directory of a larger repository) against `base` — or, when
    /// `None`, [`Git::export_base`] (HEAD when HEAD is detached) — to
    /// `output` as a binary patch; `pathspecs` exclude paths.
    /// Answers the full base commit, or "" for the empty tree. A `base`
    /// that does not resolve is a [`GitError::Path`].
    pub async fn write_delta(
        &self,
        root: &Path,
        base: Option<&str>,
        output: &Path,
        pathspecs: &[String],
    ) -> Result<String, GitError> {
        self.validate_repository(root).await?;
        let effective = match base {
            Some(b) => Some(b.to_string()),
            None if self.head_is_detached(root).await => Some("HEAD".to_string()),
            None => None,
        };
        let reference = match effective.as_deref() {
            Some(explicit) => self.base_ref(root, Some(explicit)).await.map_err(|_| {
                GitError::Path(format!(
                    "base_ref {} could not be resolved",
                    py_repr(base.unwrap_or("HEAD"))
                ))
            })?,
            None => self.export_base(root).await,
        };
        let index = output.with_file_name(format!(
            "{}.index",
            output
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default()
        ));
        let result = self
            .stage_and_diff(root, &reference, &index, output, pathspecs)
            .await;
        let _ = tokio::fs::remove_file(&index).await;
        if let Err(e) = result {
            let _ = tokio::fs::remove_file(output).await;
            return Err(e);
        }
        if reference == EMPTY_TREE {
            return Ok(String::new());
        }
        let spec = format!("{reference}^{{commit}}");
        Ok(self
            .run(&["--no-pager", "rev-parse", "--verify", &spec], root, false)
            .await
            .unwrap_or_default())
    }

    async fn stage_and_diff(
        &self,
        root: &Path,
        reference: &str,
        index: &Path,
        output: &Path,
        pathspecs: &[String],
    ) -> Result<(), GitError> {
        let scoped = |head: &[&str]| -> Vec<String> {
            head.iter()
                .map(|s| s.to_string())
                .chain(std::iter::once(".".to_string()))
                .chain(pathspecs.iter().cloned())
                .collect()
        };
        self.run_to_file(root, index, &["read-tree", reference], None)
            .await?;
        self.run_to_file(root, index, &to_refs(&scoped(&["add", "-A", "--"])), None)
            .await?;
        let diff = scoped(&["diff", "--binary", "--cached", reference, "--"]);
        self.run_to_file(root, index, &to_refs(&diff), Some(output))
            .await
    }

    /// Runs `git args` with `GIT_INDEX_FILE=index`; its stdout goes to
    /// `stdout_file` when given (streamed, never held in memory).
    async fn run_to_file(
        &self,
        root: &Path,
        index: &Path,
        args: &[&str],
        stdout_file: Option<&Path>,
    ) -> Result<(), GitError> {
        let shown = shell_join(args);
        let failed = |detail: String| {
            GitError::Command(format!("Failed to generate git delta: {shown}: {detail}"))
        };
        let index = index.to_string_lossy();
        let spec = self
            .command(args, root, &[("GIT_INDEX_FILE", &index)])
            .map_err(|e| failed(e.to_string()))?;
        let limits = git_limits(DELTA_STEP_TIMEOUT);
        let mut file = match stdout_file {
            Some(p) => Some(
                tokio::fs::File::create(p)
                    .await
                    .map_err(|e| failed(e.to_string()))?,
            ),
            None => None,
        };
        let (tx, mut rx) = mpsc::channel::<(OutputStream, Vec<u8>)>(16);
        let cancel = CancellationToken::new();
        let run = run_streaming(&spec, &limits, &cancel, tx);
        let collect = async {
            let mut stderr = Vec::new();
            let mut write_error = None;
            while let Some((stream, bytes)) = rx.recv().await {
                match (stream, file.as_mut()) {
                    (OutputStream::Stdout, Some(f)) if write_error.is_none() => {
                        if let Err(e) = f.write_all(&bytes).await {
                            write_error = Some(e.to_string());
                        }
                    }
                    (OutputStream::Stderr, _) if stderr.len() < 64 * 1024 => {
                        stderr.extend_from_slice(&bytes)
                    }
                    _ => {}
                }
            }
            (stderr, write_error)
        };
        let (end, (stderr, write_error)) = tokio::join!(run, collect);
        if let Some(f) = file.as_mut() {
            f.flush().await.map_err(|e| failed(e.to_string()))?;
        }
        if let Some(e) = write_error {
            return Err(failed(e));
        }
        match end.map_err(|e| failed(e.to_string()))? {
            RunEnd::Exited(0) => Ok(()),
            RunEnd::Exited(_) => Err(failed(String::from_utf8_lossy(&stderr).trim().to_string())),
            RunEnd::TimedOut | RunEnd::Cancelled(_) => Err(failed(format!(
                "timed out after {}s",
                DELTA_STEP_TIMEOUT.as_secs()
            ))),
        }
    }
}

fn to_refs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[cfg(test)]
mod tests {
    use super::redact_remote;

    #[test]
    fn remotes_lose_credentials_and_parameters() {
        assert_eq!(
            redact_remote("https://x-access-token:abc@github.com/o/r.git?x=1"),
            "https://****@github.com/o/r.git"
        );
        assert_eq!(
            redact_remote("https://github.com/o/r.git"),
            "https://github.com/o/r.git"
        );
        assert_eq!(
            redact_remote("git@github.com:o/r.git"),
            "git@github.com:o/r.git"
        );
    }
}
