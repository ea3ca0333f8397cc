//! The public extensions repository behind the marketplace catalogs and
//! `POST /api/skills/sync`: either the local copy `EXTENSIONS_PATH` names
//! (read in place; a sync fast-forwards it from its upstream when it is a
//! git checkout) or, without one, the reference's cached clone of
//! `https://github.com/OpenHands/extensions` at `$EXTENSIONS_REF` (default
//! `main`) under `<openhands dir>/cache/skills/public-skills`. Every git
//! command runs through the execution layer with a timeout; a catalog
//! refreshes the clone at most every five minutes and falls back to the
//! clone it has when the remote cannot be reached.

use super::context::SkillSources;
use openhands_workspace::exec::EnvPolicy;
use openhands_workspace::git::Git;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The public extensions repository (the reference's `PUBLIC_SKILLS_REPO`).
pub const PUBLIC_SKILLS_REPO: &str = "https://github.com/OpenHands/extensions";

/// Environment variable naming the ref of the public repository.
pub const PUBLIC_SKILLS_REF_ENV: &str = "EXTENSIONS_REF";

/// Longest one git command of an update may take.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a catalog reuses a refreshed clone.
const CATALOG_TTL: Duration = Duration::from_secs(300);

/// When each clone was last refreshed by a catalog.
static REFRESHED: Mutex<Option<HashMap<PathBuf, Instant>>> = Mutex::new(None);

/// Where the public repository is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublicRepo {
    /// The local copy `EXTENSIONS_PATH` names.
    Local(PathBuf),
    /// A clone of `url` at `git_ref` kept in `dir`.
    Cached {
        /// Remote.
        url: String,
        /// Branch, tag or commit.
        git_ref: String,
        /// The clone.
        dir: PathBuf,
    },
}

impl PublicRepo {
    /// The repository of `sources` (`None` without a local copy and
    /// without an OpenHands directory to keep a clone in).
    pub fn of(sources: &SkillSources) -> Option<Self> {
        if let Some(dir) = &sources.public_skills_dir {
            return Some(Self::Local(dir.clone()));
        }
        let git_ref = openhands_workspace::exec::env::host_var(PUBLIC_SKILLS_REF_ENV)
            .filter(|r| !r.trim().is_empty())
            .unwrap_or_else(|| "main".into());
        Some(Self::Cached {
            url: PUBLIC_SKILLS_REPO.into(),
            git_ref,
            dir: sources
                .openhands_dir()?
                .join("cache")
                .join("skills")
                .join("public-skills"),
        })
    }

    /// The directory to read a catalog from, refreshed when due; a failed
    /// refresh keeps the clone there is. `None`: nothing to read.
    pub async fn for_catalog(&self, env: &EnvPolicy) -> Option<PathBuf> {
        match self {
            Self::Local(dir) => Some(dir.clone()),
            Self::Cached { url, git_ref, dir } => {
                let fresh = refreshed_at(dir).is_some_and(|t| t.elapsed() < CATALOG_TTL);
                if !fresh {
                    match update_clone(url, git_ref, dir, env).await {
                        Ok(()) => mark_refreshed(dir, Some(Instant::now())),
                        Err(e) => {
                            tracing::warn!(error = %e, "Failed to access public extensions repository")
                        }
                    }
                }
                dir.join(".git").exists().then(|| dir.clone())
            }
        }
    }

    /// Forces a refresh (`POST /api/skills/sync`); an error says why it
    /// failed (the clone or copy there was stays).
    pub async fn sync(&self, env: &EnvPolicy) -> Result<(), String> {
        match self {
            Self::Local(dir) => pull_local(dir, env).await,
            Self::Cached { url, git_ref, dir } => {
                mark_refreshed(dir, None);
                update_clone(url, git_ref, dir, env).await?;
                mark_refreshed(dir, Some(Instant::now()));
                Ok(())
            }
        }
    }
}

fn refreshed_at(dir: &Path) -> Option<Instant> {
    let guard = REFRESHED.lock().unwrap_or_else(|p| p.into_inner());
    guard.as_ref().and_then(|m| m.get(dir).copied())
}

fn mark_refreshed(dir: &Path, at: Option<Instant>) {
    let mut guard = REFRESHED.lock().unwrap_or_else(|p| p.into_inner());
    let map = guard.get_or_insert_with(HashMap::new);
    match at {
        Some(t) => map.insert(dir.to_path_buf(), t),
        None => map.remove(dir),
    };
}

/// Clones `url` into `dir` or fetches it, then checks out `git_ref`.
async fn update_clone(url: &str, git_ref: &str, dir: &Path, env: &EnvPolicy) -> Result<(), String> {
    let git = Git::new(GIT_TIMEOUT).with_env(env.clone());
    tokio::fs::create_dir_all(dir)
        .await
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    if !dir.join(".git").exists() {
        git.run(&["init", "--quiet"], dir, false)
            .await
            .map_err(|e| e.to_string())?;
        git.run(&["remote", "add", "origin", url], dir, false)
            .await
            .map_err(|e| e.to_string())?;
    }
    git.run(
        &["fetch", "--quiet", "--depth", "1", "origin", git_ref],
        dir,
        false,
    )
    .await
    .map_err(|e| e.to_string())?;
    git.run(
        &["checkout", "--quiet", "--detach", "FETCH_HEAD"],
        dir,
        false,
    )
    .await
    .map_err(|e| e.to_string())?;
    Ok(())
}

/// Fast-forwards the local copy from its upstream branch.
async fn pull_local(dir: &Path, env: &EnvPolicy) -> Result<(), String> {
    let git = Git::new(GIT_TIMEOUT).with_env(env.clone());
    if git
        .run(
            &["rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}"],
            dir,
            false,
        )
        .await
        .is_err()
    {
        return Err(format!(
            "{} ({}) is not a git checkout with an upstream branch; there is nothing to sync from",
            super::context::PUBLIC_SKILLS_PATH_ENV,
            dir.display()
        ));
    }
    git.run(&["pull", "--quiet", "--ff-only"], dir, false)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}
