//! `file_editor`: view, create and edit text files by exact string
//! replacement or line insertion, with per-file undo.

mod editor;
mod render;
mod types;

pub use editor::{DEFAULT_MAX_FILE_SIZE, Editor, MAX_HISTORY_PER_FILE};
pub use types::{EditorCommand, FileEditorAction, FileEditorObservation};

use crate::common::blocking;
use openhands_sdk::tool::{ToolCallContext, ToolEnv, ToolError, TypedTool};
use openhands_wire::tool::ToolAnnotations;
use serde_json::{Value, json};
use std::sync::Arc;

/// Name the model calls.
pub const FILE_EDITOR_NAME: &str = "file_editor";

pub(crate) const DESCRIPTION: &str = "\
View, create and edit plain-text files.

Commands:
* `view` — for a file, print it with line numbers (like `cat -n`); pass `view_range` \
[start, end] to see only part of it (`[start, -1]` reads to the end). For a directory, list \
its non-hidden files and subdirectories two levels deep. Images (png, jpg, gif, webp, bmp) \
are shown as images.
* `create` — write a new file with `file_text`. Refuses to overwrite an existing file; \
missing parent directories are created.
* `str_replace` — replace the text `old_str` with `new_str` (empty if omitted). `old_str` \
must match the file exactly once, character for character including indentation and line \
breaks; if it matches zero or several times nothing changes and you are told where it \
occurs. Include enough surrounding lines to make it unique.
* `insert` — insert `new_str` after line `insert_line` (0 inserts at the top of the file).
* `undo_edit` — restore the file to its state before the last `str_replace` or `insert` \
made with this tool.

Rules:
* `path` must be absolute (e.g. `/workspace/project/src/main.py`).
* The editor keeps state between calls in this conversation (the undo history).
* Binary files, files that are not UTF-8 and files over 10 MB are refused; use the terminal \
for those.
* Prefer several small, precise edits over one large one, and `view` the result when unsure.";

/// The file editor's parameter schema (shared with the planning file editor).
pub(crate) fn parameters_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "description": "The command to run: `view`, `create`, `str_replace`, `insert` or `undo_edit`.",
                "enum": ["view", "create", "str_replace", "insert", "undo_edit"]
            },
            "path": {
                "type": "string",
                "description": "Absolute path of the file or directory, e.g. `/workspace/repo/app.py`."
            },
            "file_text": {
                "type": "string",
                "description": "For `create` (required): the full content of the new file."
            },
            "old_str": {
                "type": "string",
                "description": "For `str_replace` (required): the exact text to replace; it must occur exactly once in the file."
            },
            "new_str": {
                "type": "string",
                "description": "For `str_replace`: the replacement text (empty when omitted). For `insert` (required): the text to insert."
            },
            "insert_line": {
                "type": "integer",
                "description": "For `insert` (required): `new_str` goes after this line; 0 inserts at the top of the file."
            },
            "view_range": {
                "type": "array",
                "items": {"type": "integer"},
                "description": "For `view` of a file (optional): [start_line, end_line], 1-based and inclusive; `[start_line, -1]` shows everything from start_line to the end."
            }
        },
        "required": ["command", "path"]
    })
}

/// The file editor tool: one instance per conversation (it owns the undo
/// history).
#[derive(Debug, Clone)]
pub struct FileEditorTool {
    editor: Arc<Editor>,
}

impl FileEditorTool {
    /// A file editor for the conversation described by `env`.
    pub fn new(env: &ToolEnv) -> Self {
        let editor = Editor::new(env.working_dir.clone());
        Self::with_editor(match &env.exec.sandbox {
            Some(sandbox) => editor.confined_to(sandbox.workspace()),
            None => editor,
        })
    }

    /// A file editor using a configured [`Editor`].
    pub fn with_editor(editor: Editor) -> Self {
        Self {
            editor: Arc::new(editor),
        }
    }
}

impl TypedTool for FileEditorTool {
    type Action = FileEditorAction;
    type Observation = FileEditorObservation;
    const NAME: &'static str = FILE_EDITOR_NAME;
    const KIND: &'static str = "FileEditorTool";
    const ACTION_KIND: &'static str = "FileEditorAction";
    const OBSERVATION_KIND: &'static str = "FileEditorObservation";

    fn description(&self) -> String {
        DESCRIPTION.to_string()
    }

    fn parameters_schema(&self) -> Value {
        parameters_schema()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            title: Some(FILE_EDITOR_NAME.to_string()),
            read_only_hint: false,
            destructive_hint: true,
            idempotent_hint: false,
            open_world_hint: false,
        }
    }

    async fn run(
        &self,
        action: FileEditorAction,
        _ctx: &ToolCallContext,
    ) -> Result<FileEditorObservation, ToolError> {
        let editor = self.editor.clone();
        blocking(move || editor.run(&action)).await
    }
}
