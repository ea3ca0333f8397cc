//! Where a plugin comes from (`PluginSource`: a local path, `github:owner/repo`
//! or any git URL, with an optional ref and sub-directory) and fetching it:
//! local paths are used where they are; git sources are cloned into a cache
//! directory (`<name>-<sha256 prefix>`) through the execution layer, then
//! checked out at the ref. The resolved commit is returned so a resumed
//! conversation can pin the same version.

use super::types::{PluginError, RepoPathError};
use openhands_workspace::exec::EnvPolicy;
use openhands_workspace::git::remote::{FetchError, RemoteFetch, redact_url};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// Longest one git command of a fetch may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(120);

/// A plugin to load (the reference's `PluginSource`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PluginSource {
    /// `github:owner/repo`, a git URL, or a local path.
    pub source: String,
    /// Branch, tag or commit (git sources).
    #[serde(default, rename = "ref")]
    pub git_ref: Option<String>,
    /// Sub-directory inside the repository.
    #[serde(default)]
    pub repo_path: Option<String>,
}

/// A fetched source pinned to the commit it resolved to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolvedPluginSource {
    /// The source (inline URL credentials masked).
    pub source: String,
    /// The commit (git sources).
    pub resolved_ref: Option<String>,
    /// Sub-directory inside the repository.
    pub repo_path: Option<String>,
    /// The ref that was asked for.
    pub original_ref: Option<String>,
}

impl PluginSource {
    /// A source without ref or sub-directory.
    pub fn new(source: impl Into<String>) -> Self {
        Self {
            source: source.into(),
            git_ref: None,
            repo_path: None,
        }
    }

    /// Checks `repo_path` as the reference does (relative, no `..`); the
    /// message is the reference's.
    pub fn validate(&self) -> Result<(), RepoPathError> {
        if let Some(p) = &self.repo_path {
            if p.starts_with('/') {
                return Err(RepoPathError::Absolute);
            }
            if Path::new(p)
                .components()
                .any(|c| matches!(c, Component::ParentDir))
            {
                return Err(RepoPathError::ParentDir);
            }
        }
        Ok(())
    }
}

/// How a source is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceKind {
    /// A directory on this machine.
    Local(PathBuf),
    /// A repository to clone (`url`), with the sub-directory a `github:`
    /// shorthand names.
    Git {
        /// Clone URL.
        url: String,
        /// Sub-directory named by the shorthand.
        subpath: Option<String>,
    },
}

fn is_git_url(s: &str) -> bool {
    if ["https://", "http://", "git://", "file://"]
        .iter()
        .any(|p| s.starts_with(p))
    {
        return true;
    }
    // user@host:path
    let Some((user_host, _)) = s.split_once(':') else {
        return false;
    };
    let ok = |part: &str| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-'))
    };
    user_host
        .split_once('@')
        .is_some_and(|(u, h)| ok(u) && ok(h))
}

/// Classifies `source` as the reference does (`github:` shorthand, git
/// URLs — `file://` included —, then local paths).
pub fn parse_source(source: &str) -> Result<SourceKind, PluginError> {
    let s = source.trim();
    if let Some(rest) = s.strip_prefix("github:") {
        let (owner, rest) = rest.split_once('/').unwrap_or((rest, ""));
        let (repo, sub) = rest.split_once('/').unwrap_or((rest, ""));
        if owner.is_empty() || repo.is_empty() {
            return Err(PluginError::Fetch(format!(
                "Invalid GitHub shorthand format: {s}. Expected format: github:owner/repo[/path]"
            )));
        }
        let sub = sub.trim_matches('/');
        return Ok(SourceKind::Git {
            url: format!("https://github.com/{owner}/{repo}.git"),
            subpath: (!sub.is_empty()).then(|| sub.to_string()),
        });
    }
    if is_git_url(s) {
        let url = if s.starts_with("https://") && !s.ends_with(".git") && !s.contains("/_git/") {
            format!("{}.git", s.trim_end_matches('/'))
        } else {
            s.to_string()
        };
        return Ok(SourceKind::Git { url, subpath: None });
    }
    let local = s.starts_with('~') || s.starts_with('.') || s.starts_with('/');
    if local || (s.contains('/') && !s.contains("://")) {
        let path = match s.strip_prefix('~') {
            Some(rest) => crate::paths::user_home()
                .map(|h| h.join(rest.trim_start_matches('/')))
                .unwrap_or_else(|| PathBuf::from(s)),
            None => PathBuf::from(s),
        };
        return Ok(SourceKind::Local(path));
    }
    Err(PluginError::Fetch(format!(
        "Unable to parse extension source: {s}. Expected formats: 'github:owner/repo', git URL, or local path"
    )))
}

/// `base/sub`, which must stay inside `base` and exist.
fn apply_subpath(base: PathBuf, sub: Option<&str>, what: &str) -> Result<PathBuf, PluginError> {
    let Some(sub) = sub.map(|s| s.trim_matches('/')).filter(|s| !s.is_empty()) else {
        return Ok(base);
    };
    let candidate = base.join(sub);
    let real_base = std::fs::canonicalize(&base).unwrap_or(base);
    match std::fs::canonicalize(&candidate) {
        Ok(real) if real.starts_with(&real_base) => Ok(real),
        Ok(_) => Err(PluginError::Fetch(format!(
            "Subdirectory '{sub}' escapes {what}"
        ))),
        Err(_) => Err(PluginError::Fetch(format!(
            "Subdirectory '{sub}' not found in {what}"
        ))),
    }
}

/// The cache directory of `url` under `cache_dir` (readable repository
/// name plus a hash of the URL, as the reference names it).
pub fn cache_path(url: &str, cache_dir: &Path) -> PathBuf {
    let digest = Sha256::digest(url.as_bytes());
    let hash: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let mut name = url;
    for p in ["github:", "https://", "http://", "git://", "file://"] {
        if let Some(rest) = name.strip_prefix(p) {
            name = rest;
            break;
        }
    }
    if let Some((head, tail)) = name.split_once(':')
        && head.contains('@')
        && !head.contains('/')
    {
        name = tail;
    }
    let last = name
        .trim_end_matches('/')
        .trim_end_matches(".git")
        .rsplit('/')
        .next()
        .unwrap_or("");
    let mut clean = String::new();
    for c in last.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            c
        } else {
            '-'
        };
        if !(c == '-' && clean.ends_with('-')) {
            clean.push(c);
        }
    }
    let clean: String = clean.trim_matches('-').chars().take(32).collect();
    let clean = if clean.is_empty() {
        "repo".into()
    } else {
        clean
    };
    cache_dir.join(format!("{clean}-{hash}"))
}

/// Masks `user:password@` in a URL.
pub fn redact(source: &str) -> String {
    redact_url(source)
}

/// Where plugins are fetched to and under which environment git runs.
#[derive(Debug, Clone)]
pub struct FetchSettings {
    /// Cache of cloned repositories.
    pub cache_dir: PathBuf,
    /// Environment policy of the git processes.
    pub env: EnvPolicy,
}

impl FetchSettings {
    /// `<openhands dir>/cache/plugins` (the reference's location), or a
    /// directory under the system's temporary directory without one.
    pub fn for_dir(openhands_dir: Option<&Path>, env: EnvPolicy) -> Self {
        let cache_dir = match openhands_dir {
            Some(h) => h.join("cache").join("plugins"),
            None => std::env::temp_dir().join("openhands-plugin-cache"),
        };
        Self { cache_dir, env }
    }
}

/// Serializes fetches into the cache of this process.
static FETCH_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Fetches `spec` and returns the plugin directory and, for git sources,
/// the commit checked out. Git runs under `env`.
pub async fn fetch(
    spec: &PluginSource,
    cache_dir: &Path,
    env: &EnvPolicy,
) -> Result<(PathBuf, Option<String>), PluginError> {
    spec.validate()?;
    match parse_source(&spec.source)? {
        SourceKind::Local(path) => {
            let path = std::path::absolute(&path).unwrap_or(path);
            let real = std::fs::canonicalize(&path).map_err(|_| {
                PluginError::Fetch(format!(
                    "Local extension path does not exist: {}",
                    path.display()
                ))
            })?;
            let what = format!("local source '{}'", spec.source);
            Ok((apply_subpath(real, spec.repo_path.as_deref(), &what)?, None))
        }
        SourceKind::Git { url, subpath } => {
            if subpath.is_some() && spec.repo_path.is_some() {
                return Err(PluginError::Fetch(format!(
                    "GitHub shorthand {} already names a subdirectory; do not also pass repo_path",
                    spec.source
                )));
            }
            let sub = subpath.or_else(|| spec.repo_path.clone());
            let _guard = FETCH_LOCK.lock().await;
            let repo = cache_path(&url, cache_dir);
            // The user named this source, so a `file://` remote is theirs to use.
            let fetcher = RemoteFetch::new(GIT_TIMEOUT, env.clone()).allow_file(true);
            let shown = redact(&spec.source);
            let head = update_clone(&fetcher, &url, &repo, spec.git_ref.as_deref())
                .await
                .map_err(|e| {
                    PluginError::Fetch(format!("Failed to fetch plugin from {shown}: {e}"))
                })?;
            let what = format!("repository '{shown}'");
            Ok((apply_subpath(repo, sub.as_deref(), &what)?, Some(head)))
        }
    }
}

/// [`fetch`] from blocking code (on the hooks' runtime).
pub fn fetch_blocking(
    spec: &PluginSource,
    settings: &FetchSettings,
) -> Result<(PathBuf, Option<String>), PluginError> {
    let spec = spec.clone();
    let s = settings.clone();
    crate::hooks::block_on(async move { fetch(&spec, &s.cache_dir, &s.env).await })
        .ok_or_else(|| PluginError::Fetch("the plugin fetch runtime is not available".into()))?
}

/// Makes `repo` (a directory of the cache) a checkout of `url` at
/// `git_ref`; a leftover that is not a clone is replaced.
async fn update_clone(
    fetch: &RemoteFetch,
    url: &str,
    repo: &Path,
    git_ref: Option<&str>,
) -> Result<String, FetchError> {
    if repo.exists() && !repo.join(".git").exists() {
        tokio::fs::remove_dir_all(repo)
            .await
            .map_err(|e| FetchError::Start(format!("{}: {e}", repo.display())))?;
    }
    Ok(fetch.checkout(url, git_ref, repo).await?.commit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_classified_as_the_reference_does() {
        assert_eq!(
            parse_source("github:o/r/plugins/x").unwrap(),
            SourceKind::Git {
                url: "https://github.com/o/r.git".into(),
                subpath: Some("plugins/x".into())
            }
        );
        assert!(matches!(
            parse_source("file:///tmp/x").unwrap(),
            SourceKind::Git { .. }
        ));
        assert!(matches!(
            parse_source("git@host:o/r.git").unwrap(),
            SourceKind::Git { .. }
        ));
        assert_eq!(
            parse_source("/abs/p").unwrap(),
            SourceKind::Local("/abs/p".into())
        );
        assert!(matches!(parse_source("plain"), Err(PluginError::Fetch(_))));
        assert!(
            cache_path("https://github.com/o/My.Repo.git", Path::new("/c"))
                .to_string_lossy()
                .starts_with("/c/My-Repo-")
        );
        assert_eq!(
            redact("https://u:tok@host/r.git"),
            "https://****@host/r.git"
        );
        let mut s = PluginSource::new("/x");
        s.repo_path = Some("../up".into());
        assert!(s.validate().is_err());
    }
}
