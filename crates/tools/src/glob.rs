//! `glob`: files whose path matches a glob pattern, newest first.

use crate::common::{blocking, normalize_path, resolve_against};
use crate::search::{MAX_RESULTS, NameFilter, StopSignals, newest_first, walk_files};
use openhands_sdk::tool::{ToolCallContext, ToolEnv, ToolError, TypedTool};
use openhands_wire::content::Content;
use openhands_wire::tool::ToolAnnotations;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Name the model calls.
pub const GLOB_NAME: &str = "glob";

/// `GlobAction`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GlobAction {
    /// Glob pattern (`**/*.rs`, `src/*.py`, `*.md`, or an absolute pattern).
    pub pattern: String,
    /// Directory to search; the working directory by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// `GlobObservation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GlobObservation {
    /// What the model sees.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Whether the search failed.
    #[serde(default)]
    pub is_error: bool,
    /// Matching files, absolute, most recently modified first.
    pub files: Vec<String>,
    /// The pattern as given.
    pub pattern: String,
    /// The directory searched.
    pub search_path: String,
    /// More files matched than are listed.
    #[serde(default)]
    pub truncated: bool,
}

/// Splits an absolute pattern into the directory before its first glob
/// component and the rest: `/repo/src/**/*.rs` → (`/repo/src`, `**/*.rs`).
/// Relative patterns give `None`.
pub fn split_absolute_pattern(pattern: &str) -> Option<(PathBuf, String)> {
    if !pattern.starts_with('/') {
        return None;
    }
    let is_magic = |s: &str| s.contains(['*', '?', '[', '{']);
    let parts: Vec<&str> = pattern.split('/').filter(|p| !p.is_empty()).collect();
    let split = parts
        .iter()
        .position(|p| is_magic(p))
        .unwrap_or(parts.len());
    let mut base = PathBuf::from("/");
    for p in &parts[..split] {
        base.push(p);
    }
    let rest = parts[split..].join("/");
    if rest.is_empty() {
        // No glob characters at all: a literal path; match its name in its directory.
        let base = normalize_path(&base);
        let name = base.file_name()?.to_string_lossy().into_owned();
        let dir = base.parent()?.to_path_buf();
        return Some((dir, format!("/{name}")));
    }
    Some((normalize_path(&base), rest))
}

/// Files below `root` matching `pattern` (see [`NameFilter`]), newest first:
/// `(files, truncated, total, stopped_early)`.
pub fn find_files(
    root: &Path,
    pattern: &NameFilter,
    stop: &StopSignals,
) -> (Vec<String>, bool, usize, bool) {
    let outcome = walk_files(root, Some(pattern), stop, || |_: &Path| true);
    let early = outcome.timed_out || outcome.cancelled;
    let (files, truncated, total) = newest_first(outcome.found);
    (files, truncated, total, early)
}

/// The glob tool.
#[derive(Debug, Clone)]
pub struct GlobTool {
    working_dir: PathBuf,
    confined_to: Option<PathBuf>,
}

impl GlobTool {
    /// A glob tool searching below `env.working_dir` by default.
    pub fn new(env: &ToolEnv) -> Self {
        Self {
            working_dir: env.working_dir.clone(),
            confined_to: crate::search::sandbox_root(env),
        }
    }

    fn search(&self, action: GlobAction, stop: StopSignals) -> GlobObservation {
        let given_root = match &action.path {
            Some(p) if !p.trim().is_empty() => resolve_against(&self.working_dir, p.trim()),
            _ => self.working_dir.clone(),
        };
        let (root, pattern) = match split_absolute_pattern(action.pattern.trim()) {
            Some((base, rest)) => (base, rest),
            None => {
                let p = action.pattern.trim();
                (
                    given_root,
                    if p.is_empty() {
                        "*".to_string()
                    } else {
                        p.to_string()
                    },
                )
            }
        };
        let root = std::fs::canonicalize(&root).unwrap_or(root);
        let fail = |msg: String| GlobObservation {
            content: vec![Content::text(msg)],
            is_error: true,
            files: Vec::new(),
            pattern: action.pattern.clone(),
            search_path: root.display().to_string(),
            truncated: false,
        };
        if let Some(refusal) = crate::search::outside_sandbox(self.confined_to.as_deref(), &root) {
            return fail(refusal);
        }
        if !root.is_dir() {
            return fail(format!(
                "The search path {} is not a directory; pass an existing directory (or omit `path` \
                 to search the working directory).",
                root.display()
            ));
        }
        let filter = match NameFilter::new(&pattern) {
            Ok(f) => f,
            Err(e) => return fail(format!("{e}.")),
        };
        let (files, truncated, total, early) = find_files(&root, &filter, &stop);
        let mut text = if files.is_empty() {
            format!(
                "No file under {} matches `{}`.",
                root.display(),
                action.pattern
            )
        } else {
            format!(
                "{} file(s) under {} match `{}` (most recently modified first):\n{}",
                total,
                root.display(),
                action.pattern,
                files.join("\n")
            )
        };
        if truncated {
            text.push_str(&format!(
                "\n\n[Only the {MAX_RESULTS} most recently modified of {total} files are listed. Use a more specific pattern or `path`.]"
            ));
        }
        if early {
            text.push_str(
                "\n\n[The search stopped before covering every file; results may be incomplete.]",
            );
        }
        GlobObservation {
            content: vec![Content::text(text)],
            is_error: false,
            files,
            pattern: action.pattern,
            search_path: root.display().to_string(),
            truncated: truncated || early,
        }
    }
}

const DESCRIPTION: &str = "\
Find files by name or path pattern.

* `pattern` is a glob: `*` matches within one path segment, `**` across directories, `?` one \
character, `{a,b}` alternatives, `[abc]` a character class. Examples: `**/*.py`, `src/**/*.ts`, \
`*.{json,yaml}`, `tests/test_*.rs`.
* A pattern without `/` matches file names at any depth (`*.md` finds every Markdown file); a \
pattern with `/` is matched against the path relative to the search directory.
* `path` is the directory to search (default: the working directory). An absolute pattern such \
as `/repo/src/**/*.rs` searches from its fixed leading part.
* Only files are returned, as absolute paths, most recently modified first, at most 100. Files \
ignored by `.gitignore`/`.ignore` and hidden files and directories are skipped.
* Use it to locate files before viewing or editing them; use `grep` to search their contents.";

impl TypedTool for GlobTool {
    type Action = GlobAction;
    type Observation = GlobObservation;
    const NAME: &'static str = GLOB_NAME;
    const KIND: &'static str = "GlobTool";
    const ACTION_KIND: &'static str = "GlobAction";
    const OBSERVATION_KIND: &'static str = "GlobObservation";

    fn description(&self) -> String {
        DESCRIPTION.to_string()
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Glob pattern to match file paths against, e.g. `**/*.js` or `src/**/*.rs`."
                },
                "path": {
                    "type": "string",
                    "description": "Directory to search, absolute or relative to the working directory. Defaults to the working directory."
                }
            },
            "required": ["pattern"]
        })
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            title: Some(GLOB_NAME.to_string()),
            read_only_hint: true,
            destructive_hint: false,
            idempotent_hint: true,
            open_world_hint: false,
        }
    }

    async fn run(
        &self,
        action: GlobAction,
        ctx: &ToolCallContext,
    ) -> Result<GlobObservation, ToolError> {
        let tool = self.clone();
        let stop = StopSignals::until_cancelled(ctx.cancel.clone());
        blocking(move || tool.search(action, stop)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_patterns_split_at_first_glob() {
        assert_eq!(
            split_absolute_pattern("/repo/src/**/*.rs"),
            Some((PathBuf::from("/repo/src"), "**/*.rs".to_string()))
        );
        assert_eq!(
            split_absolute_pattern("/repo/*.py"),
            Some((PathBuf::from("/repo"), "*.py".to_string()))
        );
        assert_eq!(
            split_absolute_pattern("/repo/README.md"),
            Some((PathBuf::from("/repo"), "/README.md".to_string()))
        );
        assert_eq!(split_absolute_pattern("**/*.rs"), None);
    }
}
