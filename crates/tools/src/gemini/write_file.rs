//! `write_file`: create a file or replace its whole content.

use super::paths::{WorkspacePaths, io_message, read_text, write_text};
use crate::common::blocking;
use openhands_sdk::tool::{ToolCallContext, ToolEnv, ToolError, TypedTool};
use openhands_wire::content::Content;
use openhands_wire::tool::ToolAnnotations;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;

/// Name the model calls.
pub const WRITE_FILE_NAME: &str = "write_file";

/// `WriteFileAction`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteFileAction {
    /// File to write, absolute or relative to the working directory.
    pub file_path: String,
    /// The file's complete new content.
    pub content: String,
}

/// `WriteFileObservation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WriteFileObservation {
    /// What the model sees.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Whether the write failed.
    #[serde(default)]
    pub is_error: bool,
    /// The path written (joined to the working directory when relative).
    #[serde(default)]
    pub file_path: Option<String>,
    /// Whether the file did not exist before.
    #[serde(default)]
    pub is_new_file: bool,
    /// The content the file had before, if it existed.
    #[serde(default)]
    pub old_content: Option<String>,
    /// The content written.
    #[serde(default)]
    pub new_content: Option<String>,
}

impl WriteFileObservation {
    /// A failed write: only the message.
    pub(crate) fn error(text: String) -> Self {
        Self {
            content: vec![Content::text(text)],
            is_error: true,
            file_path: None,
            is_new_file: false,
            old_content: None,
            new_content: None,
        }
    }
}

const DESCRIPTION: &str = "\
Write a whole file: create it, or replace everything it contained.

* `file_path` may be absolute or relative to the working directory; it must lie inside the \
workspace. Missing parent directories are created.
* `content` becomes the complete file; nothing of an existing file is kept, so pass all of \
it.
* Use this for new files or rewrites of most of a file; for a targeted change of an \
existing file the `edit` tool is safer and shorter.
* The write is atomic: the file holds either the old or the new content, never a mix, and \
an existing file keeps its permissions.";

/// The `write_file` tool.
#[derive(Debug, Clone)]
pub struct WriteFileTool {
    paths: Arc<WorkspacePaths>,
}

impl WriteFileTool {
    /// `write_file` for the conversation described by `env`.
    pub fn new(env: &ToolEnv) -> Self {
        Self {
            paths: Arc::new(WorkspacePaths::new(&env.working_dir)),
        }
    }
}

fn write(paths: &WorkspacePaths, action: &WriteFileAction) -> WriteFileObservation {
    let shown = paths.join(&action.file_path);
    let real = match paths.confine(&shown) {
        Ok(p) => p,
        Err(msg) => return WriteFileObservation::error(msg.to_string()),
    };
    if real.is_dir() {
        return WriteFileObservation::error(format!(
            "Error: Path is a directory, not a file: {}",
            shown.display()
        ));
    }
    let is_new_file = !real.exists();
    let old_content = if is_new_file {
        None
    } else {
        read_text(&real).ok()
    };
    if let Err(e) = write_text(&real, &action.content) {
        return WriteFileObservation::error(io_message(&e, &shown, "Error writing file"));
    }
    let verb = if is_new_file { "Created" } else { "Updated" };
    WriteFileObservation {
        content: vec![Content::text(format!("{verb} file: {}", shown.display()))],
        is_error: false,
        file_path: Some(shown.display().to_string()),
        is_new_file,
        old_content,
        new_content: Some(action.content.clone()),
    }
}

impl TypedTool for WriteFileTool {
    type Action = WriteFileAction;
    type Observation = WriteFileObservation;
    const NAME: &'static str = WRITE_FILE_NAME;
    const KIND: &'static str = "WriteFileTool";
    const ACTION_KIND: &'static str = "WriteFileAction";
    const OBSERVATION_KIND: &'static str = "WriteFileObservation";

    fn description(&self) -> String {
        self.paths.describe(DESCRIPTION)
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {
                    "type": "string",
                    "description": "The file to create or overwrite, absolute or relative to the working directory."
                },
                "content": {
                    "type": "string",
                    "description": "The complete text the file will contain."
                }
            },
            "required": ["file_path", "content"]
        })
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            title: Some(WRITE_FILE_NAME.to_string()),
            read_only_hint: false,
            destructive_hint: true,
            idempotent_hint: false,
            open_world_hint: false,
        }
    }

    async fn run(
        &self,
        action: WriteFileAction,
        _ctx: &ToolCallContext,
    ) -> Result<WriteFileObservation, ToolError> {
        let paths = self.paths.clone();
        blocking(move || write(&paths, &action)).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn action(path: &str, content: &str) -> WriteFileAction {
        WriteFileAction {
            file_path: path.into(),
            content: content.into(),
        }
    }

    #[test]
    fn creates_then_updates_keeping_mode() {
        let dir = tempfile::tempdir().unwrap();
        let paths = WorkspacePaths::new(dir.path());
        let created = write(&paths, &action("sub/dir/a.txt", "one\n"));
        assert!(!created.is_error && created.is_new_file);
        assert_eq!(created.old_content, None);
        let file = dir.path().join("sub/dir/a.txt");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\n");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o754)).unwrap();
        let updated = write(&paths, &action(file.to_str().unwrap(), "two\n"));
        assert!(!updated.is_error && !updated.is_new_file);
        assert_eq!(updated.old_content.as_deref(), Some("one\n"));
        assert_eq!(updated.new_content.as_deref(), Some("two\n"));
        assert_eq!(
            updated.content[0].as_text().unwrap(),
            format!("Updated file: {}", file.display())
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "two\n");
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o754);
    }

    #[test]
    fn refuses_directories_and_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let paths = WorkspacePaths::new(dir.path());
        let d = write(&paths, &action(".", "x"));
        assert!(d.is_error && d.file_path.is_none());
        assert!(d.content[0].as_text().unwrap().contains("is a directory"));
        let out = write(&paths, &action("../escape.txt", "x"));
        assert!(out.is_error);
        assert!(!dir.path().parent().unwrap().join("escape.txt").exists());
    }
}
