//! `grep`: which files contain a match for a regular expression, searched
//! in-process with ripgrep's engine, newest files first.

use crate::common::{blocking, resolve_against};
use crate::search::{MAX_RESULTS, NameFilter, PatternError, StopSignals, newest_first, walk_files};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use openhands_sdk::tool::{ToolCallContext, ToolEnv, ToolError, TypedTool};
use openhands_wire::content::Content;
use openhands_wire::tool::ToolAnnotations;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Name the model calls.
pub const GREP_NAME: &str = "grep";

/// `GrepAction`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrepAction {
    /// Regular expression (Rust `regex` syntax, case-insensitive).
    pub pattern: String,
    /// Directory (or file) to search; the working directory by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Glob restricting which files are searched (`*.py`, `*.{ts,tsx}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include: Option<String>,
}

/// `GrepObservation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrepObservation {
    /// What the model sees.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Whether the search failed.
    #[serde(default)]
    pub is_error: bool,
    /// Matching files, absolute, most recently modified first.
    pub matches: Vec<String>,
    /// The pattern searched for.
    pub pattern: String,
    /// The directory searched.
    pub search_path: String,
    /// The `include` filter, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_pattern: Option<String>,
    /// More files matched than are listed.
    #[serde(default)]
    pub truncated: bool,
}

/// Stops the search of a file at its first match.
struct FirstMatch(bool);

impl Sink for FirstMatch {
    type Error = std::io::Error;
    fn matched(&mut self, _: &Searcher, _: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.0 = true;
        Ok(false)
    }
}

/// Builds the case-insensitive line matcher used by [`search_files`].
pub fn build_matcher(pattern: &str) -> Result<RegexMatcher, PatternError> {
    RegexMatcherBuilder::new()
        .case_insensitive(true)
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|source| PatternError::Regex {
            pattern: pattern.to_string(),
            source,
        })
}

/// Files under `root` (respecting ignore files, skipping hidden and binary
/// files) that contain a match, sorted newest first and capped at
/// [`MAX_RESULTS`]: `(files, truncated, total, stopped_early)`.
pub fn search_files(
    root: &Path,
    matcher: &RegexMatcher,
    include: Option<&NameFilter>,
    stop: &StopSignals,
) -> (Vec<String>, bool, usize, bool) {
    let outcome = walk_files(root, include, stop, || {
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(false)
            .build();
        let matcher = matcher.clone();
        move |path: &Path| {
            let mut sink = FirstMatch(false);
            // Unreadable files are skipped, like rg does.
            searcher.search_path(&matcher, path, &mut sink).is_ok() && sink.0
        }
    });
    let early = outcome.timed_out || outcome.cancelled;
    let (files, truncated, total) = newest_first(outcome.found);
    (files, truncated, total, early)
}

/// The grep tool.
#[derive(Debug, Clone)]
pub struct GrepTool {
    working_dir: PathBuf,
    confined_to: Option<PathBuf>,
}

impl GrepTool {
    /// A grep tool searching below `env.working_dir` by default.
    pub fn new(env: &ToolEnv) -> Self {
        Self {
            working_dir: env.working_dir.clone(),
            confined_to: crate::search::sandbox_root(env),
        }
    }

    fn search(&self, action: GrepAction, stop: StopSignals) -> GrepObservation {
        let started = Instant::now();
        let root = match &action.path {
            Some(p) if !p.trim().is_empty() => resolve_against(&self.working_dir, p.trim()),
            _ => self.working_dir.clone(),
        };
        let root = std::fs::canonicalize(&root).unwrap_or(root);
        let fail = |msg: String| GrepObservation {
            content: vec![Content::text(msg)],
            is_error: true,
            matches: Vec::new(),
            pattern: action.pattern.clone(),
            search_path: root.display().to_string(),
            include_pattern: action.include.clone(),
            truncated: false,
        };
        if let Some(refusal) = crate::search::outside_sandbox(self.confined_to.as_deref(), &root) {
            return fail(refusal);
        }
        if !root.exists() {
            return fail(format!(
                "The search path {} does not exist; pass an existing directory (or omit `path` to \
                 search the working directory).",
                root.display()
            ));
        }
        let matcher = match build_matcher(&action.pattern) {
            Ok(m) => m,
            Err(e) => {
                return fail(format!(
                    "{e}. Escape special characters such as `(`, `[` or `.` with a backslash to match them literally."
                ));
            }
        };
        let include = match action
            .include
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            Some(glob) => match NameFilter::new(glob) {
                Ok(f) => Some(f),
                Err(e) => return fail(format!("{e}.")),
            },
            None => None,
        };
        let (files, truncated, total, early) =
            search_files(&root, &matcher, include.as_ref(), &stop);
        let filter_note = action
            .include
            .as_deref()
            .map(|g| format!(" among files matching `{g}`"))
            .unwrap_or_default();
        let mut text = if files.is_empty() {
            format!(
                "No file under {} contains a match for `{}`{filter_note}.",
                root.display(),
                action.pattern
            )
        } else {
            format!(
                "{} file(s) under {} contain a match for `{}`{filter_note} (most recently modified first):\n{}",
                total,
                root.display(),
                action.pattern,
                files.join("\n")
            )
        };
        if truncated {
            text.push_str(&format!(
                "\n\n[Only the {MAX_RESULTS} most recently modified of {total} files are listed. Use a more specific pattern, `path` or `include` to narrow the search.]"
            ));
        }
        if early {
            text.push_str(&format!(
                "\n\n[The search stopped after {:.0?} before covering every file; results may be incomplete.]",
                started.elapsed()
            ));
        }
        GrepObservation {
            content: vec![Content::text(text)],
            is_error: false,
            matches: files,
            pattern: action.pattern,
            search_path: root.display().to_string(),
            include_pattern: action.include,
            truncated: truncated || early,
        }
    }
}

const DESCRIPTION: &str = "\
Find which files contain text matching a regular expression.

* Searches file contents recursively under `path` (default: the working directory) and \
returns the paths of files with at least one match — not the matching lines. To see the \
lines, view the file or run `grep -n` in the terminal.
* `pattern` is a regular expression (e.g. `fn\\s+main`, `TODO|FIXME`, `import .*requests`), \
matched case-insensitively line by line. Escape regex characters to match them literally \
(`\\.get\\(`).
* `include` limits the search to files whose name matches a glob: `*.py`, `*.{ts,tsx}`; a \
glob containing `/` is matched against the path relative to `path` (`src/**/*.rs`).
* Files ignored by `.gitignore`/`.ignore`, hidden files and directories, and binary files are \
skipped.
* Results are sorted by modification time, newest first, and capped at 100 files.
* Use this instead of running `grep`/`rg` through the terminal when you only need to know \
where something occurs.";

impl TypedTool for GrepTool {
    type Action = GrepAction;
    type Observation = GrepObservation;
    const NAME: &'static str = GREP_NAME;
    const KIND: &'static str = "GrepTool";
    const ACTION_KIND: &'static str = "GrepAction";
    const OBSERVATION_KIND: &'static str = "GrepObservation";

    fn description(&self) -> String {
        DESCRIPTION.to_string()
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Regular expression to search file contents for (case-insensitive)."
                },
                "path": {
                    "type": "string",
                    "description": "Directory to search, absolute or relative to the working directory. Defaults to the working directory."
                },
                "include": {
                    "type": "string",
                    "description": "Only search files whose name matches this glob, e.g. `*.py` or `*.{ts,tsx}`."
                }
            },
            "required": ["pattern"]
        })
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            title: Some(GREP_NAME.to_string()),
            read_only_hint: true,
            destructive_hint: false,
            idempotent_hint: true,
            open_world_hint: false,
        }
    }

    async fn run(
        &self,
        action: GrepAction,
        ctx: &ToolCallContext,
    ) -> Result<GrepObservation, ToolError> {
        let tool = self.clone();
        let stop = StopSignals::until_cancelled(ctx.cancel.clone());
        blocking(move || tool.search(action, stop)).await
    }
}
