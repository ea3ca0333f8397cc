//! Conversation worktrees (the reference's `worktree: true`): a git
//! worktree of the workspace's repository under
//! `<root>/<conversation id>/<repository name>`, on a new branch
//! `<prefix><conversation id>` started from the default branch (origin's,
//! fetched first, else a local `main`/`master`, else `HEAD`), `HEAD` or a
//! given ref. Removing a conversation's directory leaves its branch.

use crate::git::{Git, GitError};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Branch name prefix when none is given.
pub const DEFAULT_BRANCH_PREFIX: &str = "openhands/";

/// What the worktree's branch starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorktreeBase {
    /// origin's default branch (fetched), else local `main`/`master`, else `HEAD`.
    DefaultBranch,
    /// The workspace's current `HEAD`.
    Head,
    /// A branch, tag or commit (origin is fetched first when it exists).
    Ref(String),
}

/// A worktree to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreePlan {
    /// Top of the workspace's repository.
    pub repo_root: PathBuf,
    /// The workspace as given.
    pub source_workspace: PathBuf,
    /// Where the worktree goes.
    pub worktree_root: PathBuf,
    /// The workspace inside the worktree (same place relative to the top).
    pub workspace_dir: PathBuf,
    /// The new branch.
    pub branch: String,
    /// What it starts from.
    pub base: WorktreeBase,
}

impl WorktreePlan {
    /// The instructions the agent gets about its worktree.
    pub fn guidance(&self) -> String {
        let base = match &self.base {
            WorktreeBase::DefaultBranch => "the main/master branch".to_string(),
            WorktreeBase::Head => "the original workspace's current HEAD".to_string(),
            WorktreeBase::Ref(r) => format!("`{r}`"),
        };
        format!(
            "This conversation uses a dedicated git worktree.\n\
             - Original workspace: {}\n\
             - Worktree root: {}\n\
             - Active workspace: {}\n\
             - Branch: {}\n\
             Do all file and git work inside this worktree. Do your work on a new, \
             appropriately-named branch, based off {base}, and do not switch back to \
             the original workspace.",
            self.source_workspace.display(),
            self.worktree_root.display(),
            self.workspace_dir.display(),
            self.branch
        )
    }
}

/// Plans the worktree of conversation `id` for `workspace`; `None` when the
/// workspace is not in a git repository (the conversation then works in
/// the workspace itself, as in the reference).
pub async fn plan(
    git: &Git,
    workspace: &Path,
    id: &str,
    root: &Path,
    base: WorktreeBase,
    branch_prefix: &str,
) -> Option<WorktreePlan> {
    let source = git.validate_repository(workspace).await.ok()?;
    let top = git
        .run(
            &["--no-pager", "rev-parse", "--show-toplevel"],
            &source,
            false,
        )
        .await
        .ok()?;
    let repo_root = tokio::fs::canonicalize(&top).await.ok()?;
    let name = repo_root.file_name()?.to_os_string();
    let worktree_root = root.join(id).join(name);
    let relative = source.strip_prefix(&repo_root).ok()?.to_path_buf();
    let workspace_dir = if relative.as_os_str().is_empty() {
        worktree_root.clone()
    } else {
        worktree_root.join(relative)
    };
    Some(WorktreePlan {
        workspace_dir,
        worktree_root,
        source_workspace: source,
        repo_root,
        branch: format!("{branch_prefix}{id}"),
        base,
    })
}

async fn succeeds(git: &Git, args: &[&str], cwd: &Path) -> bool {
    git.run(args, cwd, false).await.is_ok()
}

async fn fetch_origin(git: &Git, repo: &Path) {
    if let Err(e) = git
        .run_with_timeout(&["fetch", "origin"], repo, false, Duration::from_secs(60))
        .await
    {
        tracing::warn!(repo = %repo.display(), error = %e, "git fetch origin failed; using cached refs");
    }
}

/// The ref the worktree's branch starts from.
pub async fn start_point(git: &Git, plan: &WorktreePlan) -> String {
    let repo = &plan.repo_root;
    let has_origin = succeeds(git, &["remote", "get-url", "origin"], repo).await;
    match &plan.base {
        WorktreeBase::Head => "HEAD".into(),
        WorktreeBase::Ref(r) => {
            if has_origin {
                fetch_origin(git, repo).await;
            }
            r.clone()
        }
        WorktreeBase::DefaultBranch => {
            if has_origin {
                fetch_origin(git, repo).await;
                if let Ok(r) = git
                    .run(&["symbolic-ref", "refs/remotes/origin/HEAD"], repo, false)
                    .await
                    && let Some(branch) = r.strip_prefix("refs/remotes/origin/")
                {
                    return format!("origin/{branch}");
                }
            }
            for local in ["main", "master"] {
                let reference = format!("refs/heads/{local}");
                if succeeds(git, &["show-ref", "--verify", "--quiet", &reference], repo).await {
                    return local.into();
                }
            }
            "HEAD".into()
        }
    }
}

/// Creates the planned worktree (replacing a stale one and its branch) and
/// the workspace directory inside it.
pub async fn create(git: &Git, plan: &WorktreePlan) -> Result<PathBuf, GitError> {
    let repo = &plan.repo_root;
    let io = |what: &str, e: std::io::Error| GitError::Command(format!("{what}: {e}"));
    if let Some(parent) = plan.worktree_root.parent() {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|e| io("cannot create the worktree directory", e))?;
    }
    let target = plan.worktree_root.to_string_lossy().into_owned();
    if plan.worktree_root.exists()
        && git
            .run(&["worktree", "remove", "--force", &target], repo, false)
            .await
            .is_err()
    {
        tokio::fs::remove_dir_all(&plan.worktree_root)
            .await
            .map_err(|e| io("cannot remove the stale worktree", e))?;
    }
    git.run(&["worktree", "prune"], repo, false).await?;
    if !git
        .run(&["branch", "--list", &plan.branch], repo, false)
        .await?
        .is_empty()
    {
        git.run(&["branch", "-D", &plan.branch], repo, false)
            .await?;
    }
    let start = start_point(git, plan).await;
    git.run(
        &["worktree", "add", "-b", &plan.branch, &target, &start],
        repo,
        false,
    )
    .await?;
    tokio::fs::create_dir_all(&plan.workspace_dir)
        .await
        .map_err(|e| io("cannot create the workspace in the worktree", e))?;
    Ok(plan.workspace_dir.clone())
}

/// The directory under `root` holding the worktree `working_dir` is in
/// (`None` when it is not under `root`).
pub fn conversation_dir(root: &Path, working_dir: &Path) -> Option<PathBuf> {
    let rel = working_dir.strip_prefix(root).ok()?;
    let first = rel.components().next()?;
    Some(root.join(first.as_os_str()))
}

/// Removes the worktrees in a conversation's directory (their branches
/// stay) and lets their repositories forget them.
pub async fn remove(git: &Git, conversation_dir: &Path) {
    let Ok(meta) = tokio::fs::symlink_metadata(conversation_dir).await else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let mut repos = Vec::new();
    if let Ok(mut entries) = tokio::fs::read_dir(conversation_dir).await {
        while let Ok(Some(entry)) = entries.next_entry().await {
            let p = entry.path();
            if p.join(".git").is_file()
                && let Ok(common) = git
                    .run(
                        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
                        &p,
                        false,
                    )
                    .await
            {
                repos.push(PathBuf::from(common));
            }
        }
    }
    if let Err(e) = tokio::fs::remove_dir_all(conversation_dir).await {
        tracing::warn!(dir = %conversation_dir.display(), error = %e, "cannot remove conversation worktrees");
        return;
    }
    for repo in repos {
        let _ = git.run(&["worktree", "prune"], &repo, false).await;
    }
}
