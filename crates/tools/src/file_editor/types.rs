//! Wire types of the file editor: `FileEditorAction` and
//! `FileEditorObservation`.

use crate::common::{lenient_opt_i64, lenient_opt_i64_list};
use openhands_wire::content::Content;
use serde::{Deserialize, Serialize};

/// The file editor's commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EditorCommand {
    /// Show a file (numbered lines) or a directory (two levels deep).
    View,
    /// Create a new file; never overwrites.
    Create,
    /// Replace one exact, unique occurrence of a string.
    StrReplace,
    /// Insert text after a given line.
    Insert,
    /// Restore the file's version before the last edit.
    UndoEdit,
}

impl EditorCommand {
    /// The wire name (`str_replace`).
    pub fn as_str(self) -> &'static str {
        match self {
            EditorCommand::View => "view",
            EditorCommand::Create => "create",
            EditorCommand::StrReplace => "str_replace",
            EditorCommand::Insert => "insert",
            EditorCommand::UndoEdit => "undo_edit",
        }
    }
}

/// `FileEditorAction`: the arguments of one file editor call. Absent
/// optional fields are omitted from the JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileEditorAction {
    /// The command.
    pub command: EditorCommand,
    /// Absolute path of the file or directory.
    pub path: String,
    /// Content of the file to `create`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_text: Option<String>,
    /// Text to replace (`str_replace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_str: Option<String>,
    /// Replacement (`str_replace`, default empty) or text to insert (`insert`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_str: Option<String>,
    /// Line after which `insert` inserts (0 = top).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_opt_i64"
    )]
    pub insert_line: Option<i64>,
    /// `[start, end]` lines to `view` (1-based, `-1` = to the end).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_opt_i64_list"
    )]
    pub view_range: Option<Vec<i64>>,
}

fn yes() -> bool {
    true
}

/// `FileEditorObservation`: the result of a file editor call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileEditorObservation {
    /// What the model sees.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Whether the command failed.
    #[serde(default)]
    pub is_error: bool,
    /// The command that ran.
    pub command: EditorCommand,
    /// The file or directory acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Whether the file existed before the command (`false` after `create`).
    #[serde(default = "yes")]
    pub prev_exist: bool,
    /// File content before an edit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_content: Option<String>,
    /// File content after an edit or creation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_content: Option<String>,
}

impl FileEditorObservation {
    /// A successful observation for `command` carrying `text`.
    pub fn text(command: EditorCommand, text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(text)],
            is_error: false,
            command,
            path: None,
            prev_exist: true,
            old_content: None,
            new_content: None,
        }
    }
}
