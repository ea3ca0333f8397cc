//! The directory walk shared by `grep` and `glob`: ripgrep's `ignore` walker
//! (respects `.gitignore`, `.ignore` and `.git/info/exclude`, skips hidden
//! entries), run on several threads, with file-name filters, a deadline and
//! cancellation, collecting matches to be listed newest first.

use globset::{GlobBuilder, GlobMatcher};
use ignore::{WalkBuilder, WalkState};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// Most files a search lists.
pub const MAX_RESULTS: usize = 100;
/// Longest a single search may walk before it stops with partial results.
pub const SEARCH_DEADLINE: Duration = Duration::from_secs(60);

/// A search pattern the `grep` and `glob` tools could not compile; its text
/// names the pattern and what is wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum PatternError {
    /// A regular expression that does not parse.
    #[error("Invalid regular expression `{pattern}`: {source}")]
    Regex {
        /// The pattern as given.
        pattern: String,
        /// The parser's reason.
        source: grep_regex::Error,
    },
    /// A glob that does not parse.
    #[error("invalid glob pattern `{pattern}`: {source}")]
    Glob {
        /// The pattern as given.
        pattern: String,
        /// The parser's reason.
        source: globset::Error,
    },
}

/// A file-name pattern with gitignore-like anchoring: a pattern without `/`
/// matches a file's name at any depth (`*.py`), one with `/` matches the
/// path relative to the search root (`src/**/*.rs`, `/setup.py`).
#[derive(Debug, Clone)]
pub struct NameFilter {
    matcher: GlobMatcher,
    whole_path: bool,
}

impl NameFilter {
    /// Compiles `pattern`; the error names what is wrong with it.
    pub fn new(pattern: &str) -> Result<Self, PatternError> {
        let trimmed = pattern.trim();
        let anchored = trimmed.strip_prefix('/').unwrap_or(trimmed);
        let whole_path = trimmed.contains('/');
        let glob = GlobBuilder::new(anchored)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|source| PatternError::Glob {
                pattern: pattern.to_string(),
                source,
            })?;
        Ok(Self {
            matcher: glob.compile_matcher(),
            whole_path,
        })
    }

    /// Whether the file at `path` (below `root`) matches.
    pub fn matches(&self, root: &Path, path: &Path) -> bool {
        if self.whole_path {
            path.strip_prefix(root)
                .map(|rel| self.matcher.is_match(rel))
                .unwrap_or(false)
        } else {
            path.file_name()
                .is_some_and(|name| self.matcher.is_match(Path::new(name)))
        }
    }
}

/// Result of a walk: matching files (unordered) and whether it stopped early.
#[derive(Debug, Default)]
pub struct WalkOutcome {
    /// Matching files with their modification times.
    pub found: Vec<(PathBuf, SystemTime)>,
    /// The deadline passed before the walk finished.
    pub timed_out: bool,
    /// The search was cancelled.
    pub cancelled: bool,
}

/// How to stop a walk early.
#[derive(Clone)]
pub struct StopSignals {
    /// Stop when this returns true (checked per entry).
    pub cancelled: Arc<dyn Fn() -> bool + Send + Sync>,
    /// Stop at this instant.
    pub deadline: Instant,
}

impl StopSignals {
    /// Never cancelled; [`SEARCH_DEADLINE`] from now.
    pub fn default_deadline() -> Self {
        Self {
            cancelled: Arc::new(|| false),
            deadline: Instant::now() + SEARCH_DEADLINE,
        }
    }

    /// Stopped by `cancel` (a tool call's token) or [`SEARCH_DEADLINE`] from now.
    pub fn until_cancelled(cancel: tokio_util::sync::CancellationToken) -> Self {
        Self {
            cancelled: Arc::new(move || cancel.is_cancelled()),
            ..Self::default_deadline()
        }
    }
}

/// Walks `root` on several threads. Every regular file passing `filter` is
/// handed to a per-thread checker built by `make_check`; files it accepts
/// are collected.
pub fn walk_files<C, F>(
    root: &Path,
    filter: Option<&NameFilter>,
    stop: &StopSignals,
    make_check: F,
) -> WalkOutcome
where
    F: Fn() -> C + Sync,
    C: FnMut(&Path) -> bool + Send,
{
    let shared = Shared::default();
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .min(12);
    let walker = WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .ignore(true)
        .parents(true)
        .require_git(false)
        .follow_links(false)
        .threads(threads)
        .build_parallel();
    let mut builder = Builder {
        root,
        filter,
        stop,
        shared: &shared,
        make_check: &make_check,
    };
    walker.visit(&mut builder);
    WalkOutcome {
        found: shared.found.into_inner(),
        timed_out: shared.timed_out.load(Ordering::Relaxed),
        cancelled: shared.cancelled.load(Ordering::Relaxed),
    }
}

#[derive(Default)]
struct Shared {
    found: Mutex<Vec<(PathBuf, SystemTime)>>,
    timed_out: AtomicBool,
    cancelled: AtomicBool,
}

struct Builder<'s, F> {
    root: &'s Path,
    filter: Option<&'s NameFilter>,
    stop: &'s StopSignals,
    shared: &'s Shared,
    make_check: &'s F,
}

impl<'s, C, F> ignore::ParallelVisitorBuilder<'s> for Builder<'s, F>
where
    F: Fn() -> C + Sync,
    C: FnMut(&Path) -> bool + Send + 's,
{
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 's> {
        Box::new(Visitor {
            root: self.root,
            filter: self.filter,
            stop: self.stop,
            shared: self.shared,
            check: (self.make_check)(),
            local: Vec::new(),
            seen: 0,
        })
    }
}

/// One walker thread's state; its matches are handed over in one lock when
/// the walker drops it at the end of the walk.
struct Visitor<'s, C> {
    root: &'s Path,
    filter: Option<&'s NameFilter>,
    stop: &'s StopSignals,
    shared: &'s Shared,
    check: C,
    local: Vec<(PathBuf, SystemTime)>,
    seen: u32,
}

impl<C: FnMut(&Path) -> bool + Send> ignore::ParallelVisitor for Visitor<'_, C> {
    fn visit(&mut self, entry: Result<ignore::DirEntry, ignore::Error>) -> WalkState {
        self.seen = self.seen.wrapping_add(1);
        if self.seen % 64 == 1 {
            if (self.stop.cancelled)() {
                self.shared.cancelled.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            if Instant::now() >= self.stop.deadline {
                self.shared.timed_out.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
        }
        let Ok(entry) = entry else {
            // Unreadable directories and broken entries are skipped, like rg.
            return WalkState::Continue;
        };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            return WalkState::Continue;
        }
        let path = entry.path();
        if self.filter.is_some_and(|f| !f.matches(self.root, path)) {
            return WalkState::Continue;
        }
        if (self.check)(path) {
            let mtime = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            self.local.push((path.to_path_buf(), mtime));
        }
        WalkState::Continue
    }
}

impl<C> Drop for Visitor<'_, C> {
    fn drop(&mut self) {
        if !self.local.is_empty() {
            self.shared.found.lock().append(&mut self.local);
        }
    }
}

/// Sorts newest first (ties by path), keeps at most [`MAX_RESULTS`], and
/// says whether anything was cut.
pub fn newest_first(mut found: Vec<(PathBuf, SystemTime)>) -> (Vec<String>, bool, usize) {
    let total = found.len();
    found.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let truncated = total > MAX_RESULTS;
    let list = found
        .into_iter()
        .take(MAX_RESULTS)
        .map(|(p, _)| p.display().to_string())
        .collect();
    (list, truncated, total)
}

/// The workspace a sandboxed conversation's search tools stay in (`None`
/// when it is not sandboxed): its processes cannot read the server's data
/// or other workspaces, so neither may these in-process tools.
pub fn sandbox_root(env: &openhands_sdk::tool::ToolEnv) -> Option<std::path::PathBuf> {
    env.exec.sandbox.as_ref().map(|s| {
        let root = s.workspace().to_path_buf();
        std::fs::canonicalize(&root).unwrap_or(root)
    })
}

/// Why a search below `root` is refused in a sandboxed conversation
/// confined to `confined_to`, if it is.
pub fn outside_sandbox(
    confined_to: Option<&std::path::Path>,
    root: &std::path::Path,
) -> Option<String> {
    let ws = confined_to?;
    (!root.starts_with(ws)).then(|| {
        format!(
            "{} is outside the workspace {}; this conversation is sandboxed and may only search \
             inside it.",
            root.display(),
            ws.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_filter_anchoring() {
        let root = Path::new("/r");
        let any = NameFilter::new("*.py").unwrap();
        assert!(any.matches(root, Path::new("/r/a.py")));
        assert!(any.matches(root, Path::new("/r/x/y/a.py")));
        assert!(!any.matches(root, Path::new("/r/a.pyc")));
        let deep = NameFilter::new("src/**/*.rs").unwrap();
        assert!(deep.matches(root, Path::new("/r/src/a.rs")));
        assert!(deep.matches(root, Path::new("/r/src/x/y/a.rs")));
        assert!(!deep.matches(root, Path::new("/r/other/src/a.rs")));
        let all = NameFilter::new("**/*.rs").unwrap();
        assert!(all.matches(root, Path::new("/r/a.rs")));
        assert!(all.matches(root, Path::new("/r/q/a.rs")));
        let top = NameFilter::new("/setup.py").unwrap();
        assert!(top.matches(root, Path::new("/r/setup.py")));
        assert!(!top.matches(root, Path::new("/r/sub/setup.py")));
        let one = NameFilter::new("src/*.rs").unwrap();
        assert!(!one.matches(root, Path::new("/r/src/x/a.rs")));
        let braces = NameFilter::new("*.{ts,tsx}").unwrap();
        assert!(braces.matches(root, Path::new("/r/a.tsx")));
        assert!(NameFilter::new("a[").is_err());
    }

    #[test]
    fn newest_first_sorts_and_caps() {
        let t = |s: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        let found: Vec<(PathBuf, SystemTime)> = (0..(MAX_RESULTS as u64 + 5))
            .map(|i| (PathBuf::from(format!("/f{i:03}")), t(i)))
            .collect();
        let (list, truncated, total) = newest_first(found);
        assert!(truncated);
        assert_eq!(total, MAX_RESULTS + 5);
        assert_eq!(list.len(), MAX_RESULTS);
        assert_eq!(list[0], "/f104");
        let (list, truncated, _) = newest_first(vec![
            (PathBuf::from("/b"), t(1)),
            (PathBuf::from("/a"), t(1)),
        ]);
        assert_eq!(
            (list, truncated),
            (vec!["/a".to_string(), "/b".to_string()], false)
        );
    }
}
