//! The public extensions repository behind the marketplace catalogs and
//! `POST /api/skills/sync`: either the local copy `EXTENSIONS_PATH` names
//! (read in place; a sync fast-forwards it from its upstream when it is a
//! git checkout) or, without one, the reference's cached clone of
//! `https://github.com/OpenHands/extensions` at `$EXTENSIONS_REF` (default
//! `main`) under `<openhands dir>/cache/skills/public-skills`. Every git
//! command runs through the execution layer with a timeout; a catalog
//! refreshes the clone at most every five minutes and falls back to the
//! clone it has when the remote cannot be reached.
//!
//! `load_public_skills` reads the same clone ([`PublicRepo::for_skills`]):
//! a ref that is a tag or a full commit id is pinned (once cloned, never
//! fetched again), a branch is fetched again after five minutes; when the
//! remote cannot be reached the cached copy is used (and the failure
//! logged), and without one the error says what could not be fetched.

use super::context::SkillSources;
use openhands_workspace::exec::EnvPolicy;
use openhands_workspace::git::remote::{FetchError, RemoteFetch, is_commit_id};
use openhands_workspace::git::{Git, GitError};
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

/// One update of a clone at a time.
static UPDATING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// What the clone was last checked out at (`.git/openhands-public-ref.json`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CheckedOut {
    /// The remote.
    pub url: String,
    /// The ref asked for.
    pub git_ref: String,
    /// The commit checked out.
    pub commit: String,
    /// The ref is a tag or a commit id: never fetched again.
    pub pinned: bool,
}

const MARKER: &str = "openhands-public-ref.json";

fn read_marker(dir: &Path) -> Option<CheckedOut> {
    let text = std::fs::read_to_string(dir.join(".git").join(MARKER)).ok()?;
    serde_json::from_str(&text).ok()
}

/// The copy of the public repository skills are read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicCopy {
    /// The directory (the local copy or the clone).
    pub dir: PathBuf,
    /// What the clone is checked out at (`None` for a local copy).
    pub checked_out: Option<CheckedOut>,
    /// Why the clone could not be refreshed (the cached copy is used).
    pub stale: Option<String>,
}

/// Why the public skills repository could not be fetched or synced.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The clone could not be fetched or checked out.
    #[error("{0}")]
    Fetch(#[from] FetchError),
    /// The marker recording the checkout could not be encoded.
    #[error("{0}")]
    Encode(#[from] serde_json::Error),
    /// The marker recording the checkout could not be written.
    #[error("{}: {source}", .dir.display())]
    Marker {
        /// The clone.
        dir: PathBuf,
        /// What the disk said.
        #[source]
        source: std::io::Error,
    },
    /// The local copy has no upstream to pull from.
    #[error(
        "{} ({}) is not a git checkout with an upstream branch; there is nothing to sync from",
        super::context::PUBLIC_SKILLS_PATH_ENV,
        .0.display()
    )]
    NoUpstream(PathBuf),
    /// Pulling into the local copy failed.
    #[error("{0}")]
    Pull(#[from] GitError),
}

/// Why public skills cannot be read.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PublicSkillsError {
    /// Neither a local copy nor a directory to keep a clone in.
    #[error(
        "agent_context.load_public_skills: no local copy of the public skills repository \
         ({}) and no OpenHands directory to keep a clone in",
        super::context::PUBLIC_SKILLS_PATH_ENV
    )]
    NoPlace,
    /// The repository could not be fetched and nothing is cached.
    #[error(
        "agent_context.load_public_skills: cannot fetch the public skills repository {url} at \
         '{git_ref}' and no copy is cached: {reason}"
    )]
    Unreachable {
        /// The remote.
        url: String,
        /// The ref asked for.
        git_ref: String,
        /// What git said.
        reason: String,
    },
    /// The fetch could not be run at all.
    #[error("agent_context.load_public_skills: {0}")]
    Runtime(String),
}

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
        let git_ref = sources.public_skills_ref.clone().unwrap_or(git_ref);
        Some(Self::Cached {
            url: sources
                .public_skills_repo
                .clone()
                .unwrap_or_else(|| PUBLIC_SKILLS_REPO.into()),
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

    /// The copy `load_public_skills` reads: the local copy as it is, or
    /// the clone — used as it is when pinned (a tag or commit id checked
    /// out before) or refreshed less than five minutes ago, else fetched;
    /// a failed fetch falls back to the clone there is (`stale` says why).
    pub async fn for_skills(&self, env: &EnvPolicy) -> Result<PublicCopy, PublicSkillsError> {
        let (url, git_ref, dir) = match self {
            Self::Local(dir) => {
                return Ok(PublicCopy {
                    dir: dir.clone(),
                    checked_out: None,
                    stale: None,
                });
            }
            Self::Cached { url, git_ref, dir } => (url, git_ref, dir),
        };
        let _one = UPDATING.lock().await;
        let marker = read_marker(dir).filter(|m| m.url == *url && m.git_ref == *git_ref);
        let cloned = dir.join(".git").exists();
        if cloned
            && let Some(m) = marker.as_ref().filter(|m| {
                m.pinned || refreshed_at(dir).is_some_and(|t| t.elapsed() < CATALOG_TTL)
            })
        {
            return Ok(PublicCopy {
                dir: dir.clone(),
                checked_out: Some(m.clone()),
                stale: None,
            });
        }
        match checkout(url, git_ref, dir, env).await {
            Ok(m) => {
                mark_refreshed(dir, Some(Instant::now()));
                Ok(PublicCopy {
                    dir: dir.clone(),
                    checked_out: Some(m),
                    stale: None,
                })
            }
            Err(reason) if cloned => {
                tracing::warn!(%url, %git_ref, error = %reason,
                    "public skills repository not refreshed; using the cached copy");
                Ok(PublicCopy {
                    dir: dir.clone(),
                    checked_out: read_marker(dir),
                    stale: Some(reason.to_string()),
                })
            }
            Err(reason) => Err(PublicSkillsError::Unreachable {
                url: url.clone(),
                git_ref: git_ref.clone(),
                reason: reason.to_string(),
            }),
        }
    }

    /// [`PublicRepo::for_skills`] from blocking code.
    pub fn for_skills_blocking(&self, env: &EnvPolicy) -> Result<PublicCopy, PublicSkillsError> {
        let this = self.clone();
        let env = env.clone();
        crate::hooks::block_on(async move { this.for_skills(&env).await }).ok_or_else(|| {
            PublicSkillsError::Runtime("the fetch runtime is not available".into())
        })?
    }

    /// Forces a refresh (`POST /api/skills/sync`); an error says why it
    /// failed (the clone or copy there was stays).
    pub async fn sync(&self, env: &EnvPolicy) -> Result<(), SyncError> {
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
async fn update_clone(
    url: &str,
    git_ref: &str,
    dir: &Path,
    env: &EnvPolicy,
) -> Result<(), SyncError> {
    let _one = UPDATING.lock().await;
    checkout(url, git_ref, dir, env).await.map(|_| ())
}

/// Fetches `git_ref` of `url` into the clone in `dir` (made when missing)
/// and checks it out detached; records what was checked out.
async fn checkout(
    url: &str,
    git_ref: &str,
    dir: &Path,
    env: &EnvPolicy,
) -> Result<CheckedOut, SyncError> {
    // The repository is the user's setting, so a `file://` remote may be used.
    let fetched = RemoteFetch::new(GIT_TIMEOUT, env.clone())
        .allow_file(true)
        .checkout(url, Some(git_ref), dir)
        .await?;
    let marker = CheckedOut {
        url: url.to_string(),
        git_ref: git_ref.to_string(),
        commit: fetched.commit,
        pinned: fetched.tag || is_commit_id(git_ref),
    };
    let text = serde_json::to_vec_pretty(&marker)?;
    tokio::fs::write(dir.join(".git").join(MARKER), text)
        .await
        .map_err(|source| SyncError::Marker {
            dir: dir.to_path_buf(),
            source,
        })?;
    Ok(marker)
}

/// Fast-forwards the local copy from its upstream branch.
async fn pull_local(dir: &Path, env: &EnvPolicy) -> Result<(), SyncError> {
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
        return Err(SyncError::NoUpstream(dir.to_path_buf()));
    }
    git.run(&["pull", "--quiet", "--ff-only"], dir, false)
        .await?;
    Ok(())
}

#[cfg(test)]
#[path = "public_repo_tests.rs"]
mod tests;
