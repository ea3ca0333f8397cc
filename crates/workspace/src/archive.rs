//! Workspace archives (the reference's `GET /api/file/archive`): a
//! directory captured as a git patch of its working-tree changes
//! (`git-delta`) or as a gzip tarball of its files (`tar.gz`), built in a
//! temporary file beside the directory. Both apply the same excludes (the
//! default heavy/generated directories plus the caller's patterns, with
//! gitignore-like semantics), never follow symlinks and never include
//! credential-bearing git internals.

use crate::git::{Git, GitError, RepositoryMetadata};
use flate2::Compression;
use flate2::write::GzEncoder;
use globset::{Glob, GlobMatcher};
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Patterns excluded unless the caller turns the defaults off.
pub const DEFAULT_EXCLUDES: [&str; 13] = [
    ".git/",
    "node_modules/",
    ".venv/",
    "venv/",
    "__pycache__/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
    "dist/",
    "build/",
    ".next/",
    "target/",
    "*.pyc",
];

/// Name of the manifest member a tarball ends with.
pub const MANIFEST_NAME: &str = "archive_manifest.json";

/// Files inside any `.git` directory that hold credentials (plus every
/// reflog): never archived, whatever the excludes.
const SENSITIVE_GIT_FILES: [&str; 5] = [
    "config",
    "config.worktree",
    "credentials",
    ".git-credentials",
    "FETCH_HEAD",
];

/// Directories never searched for the repository to archive.
const DESCENT_SKIP: [&str; 4] = ["node_modules", "venv", "site-packages", "vendor"];

/// The two archive formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveFormat {
    /// A binary git patch of the work tree against a base.
    GitDelta,
    /// A gzip tarball of the files.
    TarGz,
}

impl ArchiveFormat {
    /// Parses the wire name (`git-delta`, `tar.gz`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "git-delta" => Some(Self::GitDelta),
            "tar.gz" => Some(Self::TarGz),
            _ => None,
        }
    }

    /// File name suffix.
    pub fn suffix(self) -> &'static str {
        match self {
            Self::GitDelta => ".patch",
            Self::TarGz => ".tar.gz",
        }
    }

    /// Media type of the download.
    pub fn media_type(self) -> &'static str {
        match self {
            Self::GitDelta => "text/x-patch; charset=utf-8",
            Self::TarGz => "application/gzip",
        }
    }
}

/// Why an archive could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// `git-delta` of a directory that is not a repository.
    #[error("Not a git repository: {0}")]
    NotARepository(String),
    /// A bad request (unresolvable base ref, bad pattern).
    #[error("{0}")]
    Invalid(String),
    /// Git failed.
    #[error("Failed to generate git delta: {0}")]
    Git(String),
    /// Reading the directory or writing the archive failed.
    #[error("Failed to archive directory: {0}")]
    Io(String),
}

/// A finished archive: a temporary file the caller streams and deletes.
#[derive(Debug)]
pub struct Archive {
    /// The archive (deleted when dropped).
    pub file: tempfile::TempPath,
    /// Download name (`<repo>.patch` / `<repo>.tar.gz`).
    pub filename: String,
    /// The directory archived (the repository found under the request path).
    pub root: PathBuf,
    /// Base commit of a `git-delta` ("" for the empty tree or a tarball).
    pub base_commit: String,
    /// Identity of the archived repository (when `root` is one).
    pub repository: Option<RepositoryMetadata>,
}

/// One compiled exclude pattern.
struct Exclude {
    segments: Vec<GlobMatcher>,
    dir_only: bool,
}

/// Compiled excludes with the reference's semantics: a trailing `/` only
/// matches directories; a pattern with `/` is anchored at the root and
/// matches the path or anything below it, segment by segment; a bare
/// pattern matches any single path component.
pub struct Excludes(Vec<Exclude>);

impl Excludes {
    /// Compiles `patterns`; a malformed glob is an [`ArchiveError::Invalid`].
    pub fn new(patterns: &[String]) -> Result<Self, ArchiveError> {
        let mut out = Vec::new();
        for raw in patterns {
            let dir_only = raw.ends_with('/');
            let pattern = raw.trim_end_matches('/');
            if pattern.is_empty() {
                continue;
            }
            let segments = pattern
                .split('/')
                .map(|s| {
                    Glob::new(s)
                        .map(|g| g.compile_matcher())
                        .map_err(|e| ArchiveError::Invalid(format!("invalid exclude {raw:?}: {e}")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            out.push(Exclude { segments, dir_only });
        }
        Ok(Self(out))
    }

    /// Whether `rel` (relative, `/`-separated components) is excluded.
    pub fn excludes(&self, rel: &[&str], is_dir: bool) -> bool {
        self.0.iter().any(|e| {
            if e.segments.len() > 1 {
                rel.len() >= e.segments.len()
                    && e.segments.iter().zip(rel).all(|(m, part)| m.is_match(part))
                    && !(e.dir_only && !is_dir && rel.len() == e.segments.len())
            } else {
                let candidates = if is_dir || !e.dir_only {
                    rel
                } else {
                    &rel[..rel.len().saturating_sub(1)]
                };
                candidates.iter().any(|part| e.segments[0].is_match(part))
            }
        })
    }
}

/// The excludes as git `:(exclude)` pathspecs (so tracked and untracked
/// copies are both dropped, like the tarball's walk).
pub fn exclude_pathspecs(patterns: &[String]) -> Vec<String> {
    let mut specs = Vec::new();
    for raw in patterns {
        let dir_only = raw.ends_with('/');
        let pattern = raw.trim_end_matches('/');
        if pattern.is_empty() {
            continue;
        }
        if pattern.contains('/') {
            if !dir_only {
                specs.push(format!(":(glob,exclude){pattern}"));
            }
            specs.push(format!(":(glob,exclude){pattern}/**"));
        } else {
            if !dir_only {
                specs.push(format!(":(glob,exclude)**/{pattern}"));
            }
            specs.push(format!(":(glob,exclude)**/{pattern}/**"));
        }
    }
    specs
}

/// Whether `rel` is a credential-bearing file inside a `.git` directory
/// (at any depth, submodules included) or a reflog.
pub fn is_sensitive_git_internal(rel: &[&str]) -> bool {
    match rel.iter().position(|p| *p == ".git") {
        Some(i) => {
            let inside = &rel[i + 1..];
            match inside.last() {
                None => false,
                Some(last) => inside.contains(&"logs") || SENSITIVE_GIT_FILES.contains(last),
            }
        }
        None => false,
    }
}

/// The repository to archive for `target`: itself when it is one, else the
/// only repository up to three levels below (hidden and vendored
/// directories skipped, no descent into a repository), else `target`.
pub fn resolve_repository_root(target: &Path) -> PathBuf {
    if target.join(".git").exists() {
        return target.to_path_buf();
    }
    let mut found: Vec<PathBuf> = Vec::new();
    let mut frontier = vec![(target.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = frontier.pop() {
        if depth >= 3 {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut children: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        children.sort();
        for child in children {
            let name = child
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name.starts_with('.') || DESCENT_SKIP.contains(&name.as_str()) {
                continue;
            }
            match std::fs::symlink_metadata(&child) {
                Ok(m) if m.is_dir() => {}
                _ => continue,
            }
            if child.join(".git").exists() {
                found.push(child);
                if found.len() > 1 {
                    return target.to_path_buf();
                }
            } else {
                frontier.push((child, depth + 1));
            }
        }
    }
    match found.as_slice() {
        [only] => only.clone(),
        _ => target.to_path_buf(),
    }
}

/// What a tarball holds, recorded in its manifest.
#[derive(Debug, Default)]
struct Captured {
    files: u64,
    bytes: u64,
    manifest_collision: bool,
}

/// Writes `root` as a gzip tarball to `output` (blocking: call it on a
/// blocking thread). Regular files and directories only; excluded and
/// sensitive paths pruned; a file changing size meanwhile is cut or padded
/// to the size its header declares, so the stream stays consistent; a
/// deterministic manifest member closes it unless the workspace has a
/// file of that name.
pub fn write_tar_gz(root: &Path, output: &Path, excludes: &[String]) -> Result<(), ArchiveError> {
    let io = |e: std::io::Error| ArchiveError::Io(e.to_string());
    let rules = Excludes::new(excludes)?;
    let name = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".to_string());
    let file = File::create(output).map_err(io)?;
    let mut tar = tar::Builder::new(GzEncoder::new(file, Compression::default()));
    tar.follow_symlinks(false);
    let mut captured = Captured::default();
    let manifest_member = format!("{name}/{MANIFEST_NAME}");
    walk(
        root,
        &[],
        &name,
        &rules,
        &mut tar,
        &mut captured,
        &manifest_member,
    )
    .map_err(io)?;
    if !captured.manifest_collision {
        let manifest = serde_json::json!({
            "excludes": excludes,
            "file_count": captured.files,
            "format": "tar.gz",
            "source": name,
            "total_bytes": captured.bytes,
        });
        let body =
            serde_json::to_vec_pretty(&manifest).map_err(|e| ArchiveError::Io(e.to_string()))?;
        let mut header = tar::Header::new_gnu();
        header.set_size(body.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, &manifest_member, body.as_slice())
            .map_err(io)?;
    }
    let encoder = tar.into_inner().map_err(io)?;
    let mut file = encoder.finish().map_err(io)?;
    file.flush().map_err(io)?;
    file.sync_all().map_err(io)
}

fn walk<W: Write>(
    dir: &Path,
    rel: &[String],
    top: &str,
    rules: &Excludes,
    tar: &mut tar::Builder<W>,
    captured: &mut Captured,
    manifest_member: &str,
) -> std::io::Result<()> {
    let arc_dir = if rel.is_empty() {
        top.to_string()
    } else {
        format!("{top}/{}", rel.join("/"))
    };
    // Every surviving directory gets a member, so empty ones round-trip.
    if let Err(e) = tar.append_dir(&arc_dir, dir) {
        tracing::warn!(dir = %dir.display(), error = %e, "directory skipped in archive");
        return Ok(());
    }
    let mut entries: Vec<_> = match std::fs::read_dir(dir) {
        Ok(e) => e.filter_map(Result::ok).collect(),
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "unreadable directory skipped");
            return Ok(());
        }
    };
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let mut child_rel: Vec<String> = rel.to_vec();
        child_rel.push(name);
        let parts: Vec<&str> = child_rel.iter().map(String::as_str).collect();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if rules.excludes(&parts, true) || is_sensitive_git_internal(&parts) {
                continue;
            }
            walk(
                &entry.path(),
                &child_rel,
                top,
                rules,
                tar,
                captured,
                manifest_member,
            )?;
        } else if kind.is_file() {
            if rules.excludes(&parts, false) || is_sensitive_git_internal(&parts) {
                continue;
            }
            let member = format!("{top}/{}", child_rel.join("/"));
            if let Some(size) = append_file(tar, &entry.path(), &member)? {
                captured.files += 1;
                captured.bytes += size;
                if member == manifest_member {
                    captured.manifest_collision = true;
                }
            }
        }
    }
    Ok(())
}

/// Adds one regular file sized from its open descriptor; `None` when it
/// vanished or is no longer a regular file.
fn append_file<W: Write>(
    tar: &mut tar::Builder<W>,
    path: &Path,
    member: &str,
) -> std::io::Result<Option<u64>> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "unreadable file skipped");
            return Ok(None);
        }
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Ok(None);
    }
    let size = meta.len();
    let mut header = tar::Header::new_gnu();
    header.set_metadata(&meta);
    header.set_size(size);
    let body = ExactSize {
        inner: file.take(size),
        remaining: size,
    };
    tar.append_data(&mut header, member, body)?;
    Ok(Some(size))
}

/// Yields exactly the declared number of bytes: stops at it when the file
/// grew, pads with NULs when it shrank.
struct ExactSize<R> {
    inner: R,
    remaining: u64,
}

impl<R: Read> Read for ExactSize<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.remaining == 0 {
            return Ok(0);
        }
        let want = buf
            .len()
            .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        let n = match self.inner.read(&mut buf[..want])? {
            0 => {
                buf[..want].fill(0);
                want
            }
            n => n,
        };
        self.remaining -= n as u64;
        Ok(n)
    }
}

/// Archives `target` (absolute, an existing directory) in `format`. The
/// temporary file is created beside `target` when its parent is writable.
pub async fn create_archive(
    git: &Git,
    target: &Path,
    format: ArchiveFormat,
    base_ref: Option<&str>,
    excludes: &[String],
) -> Result<Archive, ArchiveError> {
    let target_owned = target.to_path_buf();
    let root = tokio::task::spawn_blocking(move || resolve_repository_root(&target_owned))
        .await
        .map_err(|e| ArchiveError::Io(e.to_string()))?;
    let scratch = target
        .parent()
        .filter(|p| *p != target && !p.as_os_str().is_empty())
        .map(Path::to_path_buf);
    let temp = match scratch.and_then(|dir| {
        tempfile::Builder::new()
            .suffix(format.suffix())
            .tempfile_in(dir)
            .ok()
    }) {
        Some(t) => t,
        None => tempfile::Builder::new()
            .suffix(format.suffix())
            .tempfile()
            .map_err(|e| ArchiveError::Io(e.to_string()))?,
    };
    let path = temp.into_temp_path();
    let mut base_commit = String::new();
    match format {
        ArchiveFormat::GitDelta => {
            base_commit = git
                .write_delta(&root, base_ref, &path, &exclude_pathspecs(excludes))
                .await
                .map_err(|e| match e {
                    GitError::Repository(m) => ArchiveError::NotARepository(m),
                    GitError::Path(m) => ArchiveError::Invalid(m),
                    GitError::Command(m) => ArchiveError::Git(m),
                })?;
        }
        ArchiveFormat::TarGz => {
            let (root, out, excludes) = (root.clone(), path.to_path_buf(), excludes.to_vec());
            tokio::task::spawn_blocking(move || write_tar_gz(&root, &out, &excludes))
                .await
                .map_err(|e| ArchiveError::Io(e.to_string()))??;
        }
    }
    let repository = if tokio::fs::try_exists(root.join(".git"))
        .await
        .unwrap_or(false)
    {
        Some(git.repository_metadata(&root).await)
    } else {
        None
    };
    let name = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Archive {
        file: path,
        filename: format!("{name}{}", format.suffix()),
        root,
        base_commit,
        repository,
    })
}

#[cfg(test)]
#[path = "archive_tests.rs"]
mod tests;
