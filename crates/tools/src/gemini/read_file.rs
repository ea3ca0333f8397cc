//! `read_file`: a text file with line numbers, a page of lines at a time.

use super::paths::{WorkspacePaths, io_message, read_text};
use crate::common::{blocking, lenient_opt_i64};
use openhands_sdk::tool::{ToolCallContext, ToolEnv, ToolError, TypedTool};
use openhands_wire::content::Content;
use openhands_wire::tool::ToolAnnotations;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

/// Name the model calls.
pub const READ_FILE_NAME: &str = "read_file";
/// Lines returned when the call gives no `limit`.
pub const MAX_LINES_PER_READ: usize = 1000;

/// `ReadFileAction`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadFileAction {
    /// File to read, absolute or relative to the working directory.
    pub file_path: String,
    /// 0-based line to start at.
    #[serde(default, deserialize_with = "lenient_opt_i64")]
    pub offset: Option<i64>,
    /// Most lines to return.
    #[serde(default, deserialize_with = "lenient_opt_i64")]
    pub limit: Option<i64>,
}

/// `ReadFileObservation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadFileObservation {
    /// What the model sees.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Whether the read failed.
    #[serde(default)]
    pub is_error: bool,
    /// The path read (joined to the working directory when relative).
    pub file_path: String,
    /// The numbered lines returned.
    #[serde(default)]
    pub file_content: String,
    /// Whether lines after the ones returned exist.
    #[serde(default)]
    pub is_truncated: bool,
    /// When truncated: the 1-based first and last line returned.
    #[serde(default)]
    pub lines_shown: Option<(u64, u64)>,
    /// Lines in the file.
    #[serde(default)]
    pub total_lines: Option<u64>,
}

impl ReadFileObservation {
    fn error(path: &Path, text: String) -> Self {
        Self {
            content: vec![Content::text(text)],
            is_error: true,
            file_path: path.display().to_string(),
            file_content: String::new(),
            is_truncated: false,
            lines_shown: None,
            total_lines: None,
        }
    }
}

const DESCRIPTION: &str = "\
Return the text of one file, each line prefixed with its 1-based line number.

* `file_path` may be absolute or relative to the working directory; it must lie inside the \
workspace.
* Without `limit`, at most 1000 lines are returned. When the file has more lines than were \
returned, the answer says which lines you got and the exact call that reads the next page.
* `offset` (0-based) and `limit` page through large files: offset=200, limit=100 returns \
lines 201 to 300.
* Directories are refused (use list_directory); bytes that are not valid UTF-8 are shown \
as replacement characters.";

/// The `read_file` tool.
#[derive(Debug, Clone)]
pub struct ReadFileTool {
    paths: Arc<WorkspacePaths>,
}

impl ReadFileTool {
    /// `read_file` for the conversation described by `env`.
    pub fn new(env: &ToolEnv) -> Self {
        Self {
            paths: Arc::new(WorkspacePaths::new(&env.working_dir)),
        }
    }
}

fn read(paths: &WorkspacePaths, action: &ReadFileAction) -> ReadFileObservation {
    let shown = paths.join(&action.file_path);
    let real = match paths.confine(&shown) {
        Ok(p) => p,
        Err(msg) => return ReadFileObservation::error(&shown, msg.to_string()),
    };
    if !real.exists() {
        let msg = format!("Error: File not found: {}", shown.display());
        return ReadFileObservation::error(&shown, msg);
    }
    if real.is_dir() {
        let msg = format!(
            "Error: Path is a directory, not a file: {}",
            shown.display()
        );
        return ReadFileObservation::error(&shown, msg);
    }
    let text = match read_text(&real) {
        Ok(t) => t,
        Err(e) => {
            let msg = io_message(&e, &shown, "Error reading file");
            return ReadFileObservation::error(&shown, msg);
        }
    };
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let total = lines.len();
    let start = usize::try_from(action.offset.unwrap_or(0)).unwrap_or(0);
    if start >= total {
        let msg = format!("Error: Offset {start} is beyond file length ({total} lines)");
        return ReadFileObservation::error(&shown, msg);
    }
    let limit = action
        .limit
        .and_then(|l| usize::try_from(l).ok())
        .filter(|l| *l > 0);
    let end = start
        .saturating_add(limit.unwrap_or(MAX_LINES_PER_READ))
        .min(total);
    let mut numbered = String::new();
    for (i, line) in lines[start..end].iter().enumerate() {
        numbered.push_str(&format!("{:6}  {line}", start + i + 1));
    }
    let truncated = end < total;
    let mut header = format!("Read file: {}", shown.display());
    if truncated {
        header.push_str(&format!(
            " (showing lines {}-{end} of {total}) To read more, use: read_file(file_path='{}', offset={end}, limit={})",
            start + 1,
            action.file_path,
            limit.unwrap_or(MAX_LINES_PER_READ)
        ));
    }
    ReadFileObservation {
        content: vec![Content::text(format!("{header}\n\n{numbered}"))],
        is_error: false,
        file_path: shown.display().to_string(),
        file_content: numbered,
        is_truncated: truncated,
        lines_shown: truncated.then_some((start as u64 + 1, end as u64)),
        total_lines: Some(total as u64),
    }
}

impl TypedTool for ReadFileTool {
    type Action = ReadFileAction;
    type Observation = ReadFileObservation;
    const NAME: &'static str = READ_FILE_NAME;
    const KIND: &'static str = "ReadFileTool";
    const ACTION_KIND: &'static str = "ReadFileAction";
    const OBSERVATION_KIND: &'static str = "ReadFileObservation";

    fn description(&self) -> String {
        self.paths.describe(DESCRIPTION)
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {
                    "type": "string",
                    "description": "The file to read, absolute or relative to the working directory."
                },
                "offset": {
                    "type": "integer",
                    "description": "Optional 0-based index of the first line to return (0 or more); use it with `limit` to page through a long file."
                },
                "limit": {
                    "type": "integer",
                    "description": "Optional number of lines to return (1 or more); 1000 when omitted."
                }
            },
            "required": ["file_path"]
        })
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            title: Some(READ_FILE_NAME.to_string()),
            read_only_hint: true,
            destructive_hint: false,
            idempotent_hint: true,
            open_world_hint: false,
        }
    }

    fn validate(&self, action: &ReadFileAction) -> Result<(), ToolError> {
        if action.offset.is_some_and(|o| o < 0) {
            return Err(ToolError::InvalidArguments(
                "offset: Input should be greater than or equal to 0".into(),
            ));
        }
        if action.limit.is_some_and(|l| l < 1) {
            return Err(ToolError::InvalidArguments(
                "limit: Input should be greater than or equal to 1".into(),
            ));
        }
        Ok(())
    }

    async fn run(
        &self,
        action: ReadFileAction,
        _ctx: &ToolCallContext,
    ) -> Result<ReadFileObservation, ToolError> {
        let paths = self.paths.clone();
        blocking(move || read(&paths, &action)).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn action(path: &str, offset: Option<i64>, limit: Option<i64>) -> ReadFileAction {
        ReadFileAction {
            file_path: path.into(),
            offset,
            limit,
        }
    }

    #[test]
    fn numbers_lines_and_pages() {
        let dir = tempfile::tempdir().unwrap();
        let body: String = (1..=5).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.path().join("f.txt"), body).unwrap();
        let paths = WorkspacePaths::new(dir.path());
        let all = read(&paths, &action("f.txt", None, None));
        assert!(!all.is_error);
        assert_eq!(all.total_lines, Some(5));
        assert!(all.file_content.starts_with("     1  line 1\n"));
        assert!(!all.is_truncated && all.lines_shown.is_none());
        let page = read(&paths, &action("f.txt", Some(1), Some(2)));
        assert_eq!(page.file_content, "     2  line 2\n     3  line 3\n");
        assert_eq!(page.lines_shown, Some((2, 3)));
        let Content::Text(t) = &page.content[0] else {
            panic!()
        };
        assert!(
            t.text
                .contains("(showing lines 2-3 of 5) To read more, use: read_file(file_path='f.txt', offset=3, limit=2)"),
            "{}",
            t.text
        );
    }

    #[test]
    fn errors_name_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("one"), "x").unwrap();
        let paths = WorkspacePaths::new(dir.path());
        let text = |o: ReadFileObservation| match &o.content[0] {
            Content::Text(t) => (o.is_error, t.text.clone()),
            _ => panic!(),
        };
        let (e, t) = text(read(&paths, &action("missing", None, None)));
        assert!(e && t.starts_with("Error: File not found: "), "{t}");
        let (e, t) = text(read(&paths, &action(".", None, None)));
        assert!(e && t.contains("is a directory"), "{t}");
        let (e, t) = text(read(&paths, &action("one", Some(1), None)));
        assert!(
            e && t.contains("Offset 1 is beyond file length (1 lines)"),
            "{t}"
        );
        let (e, t) = text(read(&paths, &action("/etc/hostname", None, None)));
        assert!(e && t.contains("outside the workspace"), "{t}");
    }
}
