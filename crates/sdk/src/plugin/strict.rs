//! Strict plugin fetching (the reference's `fetch_plugin_strict`): a source
//! is fetched at one commit into an immutable cache
//! (`<cache>/<repo>-<hash>/resolved-refs/<sha>`), checked to hold a plugin
//! with a `plugin.json`, and described — without installing or enabling
//! it. Every failure has a stable `code` (and the HTTP status the
//! reference answers with). `${VAR}` placeholders in the source and ref
//! are filled from the caller's secrets, which never appear in messages.

use super::load::{MANIFEST_DIRS, load};
use super::source::{SourceKind, cache_path, parse_source};
use openhands_workspace::exec::EnvPolicy;
use openhands_workspace::git::remote::{FetchError, FetchStep, RemoteFetch, is_commit_id, mask};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Directory under a source's cache directory holding pinned checkouts.
pub const PINNED_REFS_DIR: &str = "resolved-refs";

/// Why a strict fetch failed: a stable code and a message without secrets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct StrictFetchError {
    /// `missing_secret`, `invalid_source`, `source_not_allowed`,
    /// `auth_failed`, `source_unavailable`, `ref_not_found`,
    /// `repo_path_not_found`, `invalid_plugin` or `timeout`.
    pub code: &'static str,
    /// What happened.
    pub message: String,
}

impl StrictFetchError {
    fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The HTTP status the reference answers this error with.
    pub fn status(&self) -> u16 {
        match self.code {
            "source_unavailable" => 502,
            "timeout" => 504,
            _ => 422,
        }
    }
}

/// What to fetch and how.
#[derive(Debug, Clone)]
pub struct StrictFetch {
    /// The source as given (placeholders kept).
    pub source: String,
    /// Branch, tag or commit.
    pub git_ref: Option<String>,
    /// Sub-directory of the repository holding the plugin.
    pub repo_path: Option<String>,
    /// Values of the `${VAR}` placeholders.
    pub secrets: BTreeMap<String, String>,
    /// Longest one git command may take.
    pub timeout: Duration,
    /// Whether local paths and `file://` repositories are accepted.
    pub allow_local: bool,
    /// The plugin cache (`None`: fetched into a temporary directory that
    /// is gone when the answer is built — only the description remains).
    pub cache_dir: Option<PathBuf>,
    /// Environment policy of the git processes.
    pub env: EnvPolicy,
}

/// A strictly resolved plugin and its public description.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedPlugin {
    /// The plugin directory.
    pub path: PathBuf,
    /// The commit (git sources).
    pub resolved_ref: Option<String>,
    /// The source as given.
    pub source: String,
    /// Sub-directory of the repository.
    pub repo_path: Option<String>,
    /// The raw `plugin.json`.
    pub manifest: Map<String, Value>,
    /// Names of its skills.
    pub skills: Vec<String>,
    /// Names of its commands.
    pub commands: Vec<String>,
}

/// `${NAME}` / `${NAME:-default}` occurrences: (start, end, name).
fn placeholders(text: &str) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(off) = text[i..].find("${") {
        let start = i + off;
        let name_start = start + 2;
        let mut j = name_start;
        while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
            j += 1;
        }
        let name = &text[name_start..j];
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        let end = if valid && text[j..].starts_with('}') {
            Some(j + 1)
        } else if valid && text[j..].starts_with(":-") {
            text[j..].find('}').map(|k| j + k + 1)
        } else {
            None
        };
        match end {
            Some(end) => {
                out.push((start, end, name.to_string()));
                i = end;
            }
            None => i = start + 2,
        }
    }
    out
}

fn expand(text: &str, values: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut last = 0;
    for (start, end, name) in placeholders(text) {
        out.push_str(&text[last..start]);
        match values.get(&name) {
            Some(v) => out.push_str(v),
            None => out.push_str(&text[start..end]),
        }
        last = end;
    }
    out.push_str(&text[last..]);
    out
}

/// Fetches and checks the plugin `req` names.
pub async fn fetch_strict(req: &StrictFetch) -> Result<CheckedPlugin, StrictFetchError> {
    let mut referenced: Vec<String> = placeholders(&req.source)
        .into_iter()
        .chain(placeholders(req.git_ref.as_deref().unwrap_or("")))
        .map(|(_, _, n)| n)
        .collect();
    referenced.sort();
    referenced.dedup();
    let mut values = BTreeMap::new();
    for name in referenced {
        let Some(v) = req.secrets.get(&name) else {
            return Err(StrictFetchError::new(
                "missing_secret",
                format!("Missing secret: {name}"),
            ));
        };
        values.insert(name, v.clone());
    }
    let secret_values: Vec<String> = values.values().cloned().collect();
    let source = expand(&req.source, &values);
    let git_ref = req.git_ref.as_deref().map(|r| expand(r, &values));
    let kind = parse_source(&source)
        .map_err(|_| StrictFetchError::new("invalid_source", "Invalid plugin source."))?;
    let describe = |root: PathBuf, resolved: Option<String>| {
        checked(
            root,
            &req.source,
            req.repo_path.clone(),
            resolved,
            &secret_values,
        )
    };
    let url = match kind {
        SourceKind::Local(path) => {
            if !req.allow_local {
                return Err(StrictFetchError::new(
                    "source_not_allowed",
                    "Local plugin sources are not allowed for this operation.",
                ));
            }
            let path = std::path::absolute(&path).unwrap_or(path);
            let root = std::fs::canonicalize(&path).unwrap_or(path);
            return describe(apply_repo_path(&root, req.repo_path.as_deref())?, None);
        }
        SourceKind::Git { url, .. } => url,
    };
    if source.starts_with("file://") && !req.allow_local {
        return Err(StrictFetchError::new(
            "source_not_allowed",
            "file:// plugin sources are not allowed for this operation.",
        ));
    }
    if let (Some(cache), Some(r)) = (&req.cache_dir, git_ref.as_deref())
        && is_commit_id(r)
    {
        let pinned = pinned_path(&url, cache, &r.to_lowercase());
        if pinned.is_dir() {
            let root = apply_repo_path(&pinned, req.repo_path.as_deref())?;
            return describe(root, Some(r.to_lowercase()));
        }
    }
    let work = tempfile::Builder::new()
        .prefix("openhands-plugin-fetch-")
        .tempdir()
        .map_err(|e| StrictFetchError::new("source_unavailable", format!("Git failed: {e}")))?;
    let fetch = RemoteFetch::new(req.timeout, req.env.clone())
        .allow_file(req.allow_local)
        .hiding(secret_values.iter().cloned());
    let repo = work.path().join("repo");
    let resolved = fetch
        .checkout(&url, git_ref.as_deref(), &repo)
        .await
        .map_err(|e| fetch_failure(e, git_ref.is_some()))?
        .commit;
    match &req.cache_dir {
        Some(cache) => {
            let pinned = store_pinned(&url, cache, &resolved, &repo).await?;
            let root = apply_repo_path(&pinned, req.repo_path.as_deref())?;
            describe(root, Some(resolved))
        }
        None => {
            let root = apply_repo_path(&repo, req.repo_path.as_deref())?;
            describe(root, Some(resolved))
        }
    }
}

/// `<cache>/<repo>-<hash>/resolved-refs/<sha>`.
pub fn pinned_path(url: &str, cache_dir: &Path, sha: &str) -> PathBuf {
    cache_path(url, cache_dir).join(PINNED_REFS_DIR).join(sha)
}

/// The reference's code for a failed fetch: what git said, or the step.
fn fetch_failure(e: FetchError, named_ref: bool) -> StrictFetchError {
    match e {
        FetchError::Start(m) => {
            StrictFetchError::new("source_unavailable", format!("Git failed: {m}"))
        }
        FetchError::TimedOut => StrictFetchError::new("timeout", "Git operation timed out."),
        FetchError::Failed { step, stderr } => {
            let default_code = match step {
                FetchStep::Fetch if named_ref => "ref_not_found",
                FetchStep::Prepare | FetchStep::Fetch => "source_unavailable",
                FetchStep::Checkout => "ref_not_found",
            };
            StrictFetchError::new(classify(&stderr, default_code), stderr)
        }
    }
}

/// The reference's classification of git's complaints.
fn classify(stderr: &str, default_code: &'static str) -> &'static str {
    let lower = stderr.to_lowercase();
    let any = |needles: &[&str]| needles.iter().any(|n| lower.contains(n));
    if any(&["authentication failed", "authentication required"]) {
        "auth_failed"
    } else if any(&[
        "couldn't find remote ref",
        "could not find remote ref",
        "not our ref",
        "unadvertised object",
        "bad object",
        "needed a single revision",
    ]) {
        "ref_not_found"
    } else if any(&[
        "could not read username",
        "terminal prompts disabled",
        "repository not found",
        "could not resolve host",
        "failed to connect",
        "connection refused",
        "does not appear to be a git repository",
        "access rights",
    ]) {
        "source_unavailable"
    } else {
        default_code
    }
}

/// Copies the checkout (without `.git`) to its pinned place, once.
async fn store_pinned(
    url: &str,
    cache_dir: &Path,
    sha: &str,
    repo: &Path,
) -> Result<PathBuf, StrictFetchError> {
    let target = pinned_path(url, cache_dir, sha);
    let repo = repo.to_path_buf();
    let t = target.clone();
    tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        if t.is_dir() {
            return Ok(());
        }
        let parent = t.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent)?;
        let tmp = tempfile::Builder::new()
            .prefix(".pinning-")
            .tempdir_in(parent)?;
        copy_tree(&repo, tmp.path())?;
        let staged = tmp.keep();
        if crate::fsutil::rename_into_place(&staged, &t).is_err() {
            // Another fetch pinned the same commit first.
            let _ = std::fs::remove_dir_all(&staged);
        }
        Ok(())
    })
    .await
    .map_err(|e| StrictFetchError::new("source_unavailable", format!("Git failed: {e}")))?
    .map_err(|e| {
        StrictFetchError::new(
            "source_unavailable",
            format!("Could not store the plugin checkout: {e}"),
        )
    })?;
    Ok(target)
}

/// Copies `from` into `to` (existing), skipping `.git`, keeping symlinks.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        let src = entry.path();
        let dst = to.join(&name);
        let ty = entry.file_type()?;
        if ty.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else if ty.is_dir() {
            std::fs::create_dir(&dst)?;
            copy_tree(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

fn apply_repo_path(root: &Path, repo_path: Option<&str>) -> Result<PathBuf, StrictFetchError> {
    let Some(sub) = repo_path
        .map(|p| p.trim_matches('/'))
        .filter(|p| !p.is_empty())
    else {
        return Ok(root.to_path_buf());
    };
    let not_found = || {
        StrictFetchError::new(
            "repo_path_not_found",
            format!("repo_path not found: {}", repo_path.unwrap_or_default()),
        )
    };
    let real_root = std::fs::canonicalize(root).map_err(|_| not_found())?;
    let candidate = std::fs::canonicalize(root.join(sub)).map_err(|_| not_found())?;
    if !candidate.starts_with(&real_root) || !candidate.is_dir() {
        return Err(not_found());
    }
    Ok(root.join(sub))
}

fn checked(
    root: PathBuf,
    source: &str,
    repo_path: Option<String>,
    resolved_ref: Option<String>,
    secrets: &[String],
) -> Result<CheckedPlugin, StrictFetchError> {
    let manifest = raw_manifest(&root, secrets)?;
    let loaded = load(&root).map_err(|e| {
        StrictFetchError::new(
            "invalid_plugin",
            format!("Invalid plugin: {}", mask(&e.to_string(), secrets)),
        )
    })?;
    Ok(CheckedPlugin {
        path: root,
        resolved_ref,
        source: source.to_string(),
        repo_path,
        manifest,
        skills: loaded
            .plugin
            .skills
            .iter()
            .map(|s| s.name.clone())
            .collect(),
        commands: loaded
            .plugin
            .commands
            .iter()
            .map(|c| c.name.clone())
            .collect(),
    })
}

/// The first `plugin.json` of the plugin root, `.plugin/` or
/// `.claude-plugin/` that stays inside the root.
fn raw_manifest(root: &Path, secrets: &[String]) -> Result<Map<String, Value>, StrictFetchError> {
    let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let candidates = std::iter::once(root.join("plugin.json")).chain(
        MANIFEST_DIRS
            .iter()
            .map(|d| root.join(d).join("plugin.json")),
    );
    for candidate in candidates {
        let inside = std::fs::canonicalize(&candidate).is_ok_and(|p| p.starts_with(&real_root));
        if !candidate.is_file() || !inside {
            continue;
        }
        let invalid = |e: String| {
            StrictFetchError::new(
                "invalid_plugin",
                format!("Invalid plugin manifest: {}", mask(&e, secrets)),
            )
        };
        let text = std::fs::read_to_string(&candidate).map_err(|e| invalid(e.to_string()))?;
        let value: Value = serde_json::from_str(text.trim_start_matches('\u{feff}'))
            .map_err(|e| invalid(e.to_string()))?;
        return match value {
            Value::Object(m) => Ok(m),
            _ => Err(StrictFetchError::new(
                "invalid_plugin",
                "Invalid plugin manifest: plugin.json must be an object.",
            )),
        };
    }
    Err(StrictFetchError::new(
        "invalid_plugin",
        "Invalid plugin: plugin.json not found.",
    ))
}

#[cfg(test)]
#[path = "strict_tests.rs"]
mod tests;
