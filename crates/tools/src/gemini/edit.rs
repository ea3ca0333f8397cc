//! `edit`: replace exact text in a file a known number of times, or create
//! a file when the text to replace is empty.

use super::paths::{WorkspacePaths, io_message, read_text, write_text};
use crate::common::blocking;
use openhands_sdk::tool::{ToolCallContext, ToolEnv, ToolError, TypedTool};
use openhands_wire::content::Content;
use openhands_wire::tool::ToolAnnotations;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;

/// Name the model calls.
pub const EDIT_NAME: &str = "edit";

fn one() -> i64 {
    1
}

fn lenient_i64_or_one<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    Ok(crate::common::lenient_opt_i64(d)?.unwrap_or(1))
}

/// `EditAction`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditAction {
    /// File to change, absolute or relative to the working directory.
    pub file_path: String,
    /// Exact text to replace; empty to create a new file.
    pub old_string: String,
    /// Replacement text (the new file's content when creating).
    pub new_string: String,
    /// How many occurrences must be found (and replaced).
    #[serde(default = "one", deserialize_with = "lenient_i64_or_one")]
    pub expected_replacements: i64,
}

/// `EditObservation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EditObservation {
    /// What the model sees.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Whether the edit failed.
    #[serde(default)]
    pub is_error: bool,
    /// The file edited (resolved).
    #[serde(default)]
    pub file_path: Option<String>,
    /// Whether the edit created the file.
    #[serde(default)]
    pub is_new_file: bool,
    /// Occurrences replaced.
    #[serde(default)]
    pub replacements_made: i64,
    /// Content before the edit.
    #[serde(default)]
    pub old_content: Option<String>,
    /// Content after the edit.
    #[serde(default)]
    pub new_content: Option<String>,
}

impl EditObservation {
    fn error(text: String, file_path: Option<String>) -> Self {
        Self {
            content: vec![Content::text(text)],
            is_error: true,
            file_path,
            is_new_file: false,
            replacements_made: 0,
            old_content: None,
            new_content: None,
        }
    }
}

const DESCRIPTION: &str = "\
Change a file by replacing exact text, or create a new file.

* `old_string` must match the file exactly, whitespace, indentation and line breaks \
included; copy it from read_file output without the line-number prefix. Give a few \
surrounding lines so it is unambiguous.
* The edit happens only if the number of occurrences equals `expected_replacements` \
(default 1); then every occurrence is replaced by `new_string`. If the count differs, or the \
text is not found, nothing changes and you are told what was found.
* An empty `old_string` creates a new file whose content is `new_string`; it fails if the \
file already exists (use write_file to overwrite).
* Identical `old_string` and `new_string` are refused as a no-op.
* `file_path` may be absolute or relative to the working directory and must lie inside the \
workspace. For large rewrites use write_file instead.";

/// The `edit` tool.
#[derive(Debug, Clone)]
pub struct EditTool {
    paths: Arc<WorkspacePaths>,
}

impl EditTool {
    /// `edit` for the conversation described by `env`.
    pub fn new(env: &ToolEnv) -> Self {
        Self {
            paths: Arc::new(WorkspacePaths::new(&env.working_dir)),
        }
    }
}

fn edit(paths: &WorkspacePaths, action: &EditAction) -> EditObservation {
    let joined = paths.join(&action.file_path);
    let real = match paths.confine(&joined) {
        Ok(p) => p,
        Err(msg) => return EditObservation::error(msg.to_string(), None),
    };
    let shown = real.display().to_string();
    if action.old_string.is_empty() {
        if real.exists() {
            return EditObservation::error(
                format!(
                    "Error: Cannot create file that already exists: {shown}. Use write_file to overwrite or provide non-empty old_string."
                ),
                None,
            );
        }
        if let Err(e) = write_text(&real, &action.new_string) {
            return EditObservation::error(io_message(&e, &real, "Error creating file"), None);
        }
        return EditObservation {
            content: vec![Content::text(format!("Created new file: {shown}"))],
            is_error: false,
            file_path: Some(shown),
            is_new_file: true,
            replacements_made: 1,
            old_content: None,
            new_content: Some(action.new_string.clone()),
        };
    }
    if !real.exists() {
        return EditObservation::error(
            format!("Error: File not found: {shown}. To create a new file, use old_string=''."),
            None,
        );
    }
    if real.is_dir() {
        return EditObservation::error(
            format!("Error: Path is a directory, not a file: {shown}"),
            None,
        );
    }
    let old_content = match read_text(&real) {
        Ok(t) => t,
        Err(e) => return EditObservation::error(io_message(&e, &real, "Error editing file"), None),
    };
    if action.old_string == action.new_string {
        return EditObservation::error(
            "Error: No changes to apply. old_string and new_string are identical.".into(),
            None,
        );
    }
    let found = old_content.matches(action.old_string.as_str()).count();
    if found == 0 {
        return EditObservation::error(
            format!(
                "Error: Could not find the string to replace. 0 occurrences found in {shown}. Use read_file to verify the exact text."
            ),
            Some(shown),
        );
    }
    let expected = action.expected_replacements;
    if i64::try_from(found).ok() != Some(expected) {
        let word = if expected == 1 {
            "occurrence"
        } else {
            "occurrences"
        };
        return EditObservation::error(
            format!("Error: Expected {expected} {word} but found {found} in {shown}."),
            Some(shown),
        );
    }
    let new_content = old_content.replace(action.old_string.as_str(), &action.new_string);
    if new_content == old_content {
        return EditObservation::error(
            "Error: No changes made. The new content is identical to the current content.".into(),
            Some(shown),
        );
    }
    if let Err(e) = write_text(&real, &new_content) {
        return EditObservation::error(io_message(&e, &real, "Error editing file"), None);
    }
    EditObservation {
        content: vec![Content::text(format!(
            "Successfully edited {shown} ({found} replacement(s))"
        ))],
        is_error: false,
        file_path: Some(shown),
        is_new_file: false,
        replacements_made: expected,
        old_content: Some(old_content),
        new_content: Some(new_content),
    }
}

impl TypedTool for EditTool {
    type Action = EditAction;
    type Observation = EditObservation;
    const NAME: &'static str = EDIT_NAME;
    const KIND: &'static str = "EditTool";
    const ACTION_KIND: &'static str = "EditAction";
    const OBSERVATION_KIND: &'static str = "EditObservation";

    fn description(&self) -> String {
        self.paths.describe(DESCRIPTION)
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {
                    "type": "string",
                    "description": "The file to change, absolute or relative to the working directory."
                },
                "old_string": {
                    "type": "string",
                    "description": "The exact text to replace, including whitespace; an empty string creates a new file."
                },
                "new_string": {
                    "type": "string",
                    "description": "The text that replaces each occurrence (the whole content when creating a file)."
                },
                "expected_replacements": {
                    "type": "integer",
                    "description": "How many occurrences of old_string the file must contain; all of them are replaced. 1 when omitted."
                }
            },
            "required": ["file_path", "old_string", "new_string"]
        })
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            title: Some(EDIT_NAME.to_string()),
            read_only_hint: false,
            destructive_hint: true,
            idempotent_hint: false,
            open_world_hint: false,
        }
    }

    fn validate(&self, action: &EditAction) -> Result<(), ToolError> {
        if action.expected_replacements < 0 {
            return Err(ToolError::InvalidArguments(
                "expected_replacements: Input should be greater than or equal to 0".into(),
            ));
        }
        Ok(())
    }

    async fn run(
        &self,
        action: EditAction,
        _ctx: &ToolCallContext,
    ) -> Result<EditObservation, ToolError> {
        let paths = self.paths.clone();
        blocking(move || edit(&paths, &action)).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn action(path: &str, old: &str, new: &str, n: i64) -> EditAction {
        EditAction {
            file_path: path.into(),
            old_string: old.into(),
            new_string: new.into(),
            expected_replacements: n,
        }
    }

    fn text(o: &EditObservation) -> &str {
        o.content[0].as_text().unwrap()
    }

    #[test]
    fn creates_replaces_and_counts() {
        let dir = tempfile::tempdir().unwrap();
        let paths = WorkspacePaths::new(dir.path());
        let f = dir.path().join("a.py");
        let created = edit(&paths, &action("a.py", "", "x = 1\nx = 1\n", 1));
        assert!(
            created.is_new_file && !created.is_error,
            "{}",
            text(&created)
        );
        let again = edit(&paths, &action("a.py", "", "y", 1));
        assert!(again.is_error && text(&again).contains("already exists"));
        let wrong = edit(&paths, &action("a.py", "x = 1", "x = 2", 1));
        assert!(wrong.is_error);
        assert!(
            text(&wrong).contains("Expected 1 occurrence but found 2"),
            "{}",
            text(&wrong)
        );
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "x = 1\nx = 1\n");
        let ok = edit(&paths, &action("a.py", "x = 1", "x = 2", 2));
        assert!(!ok.is_error, "{}", text(&ok));
        assert_eq!(ok.replacements_made, 2);
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "x = 2\nx = 2\n");
        assert_eq!(ok.old_content.as_deref(), Some("x = 1\nx = 1\n"));
        let none = edit(&paths, &action("a.py", "zzz", "q", 1));
        assert!(none.is_error && text(&none).contains("0 occurrences found"));
        let same = edit(&paths, &action("a.py", "x", "x", 1));
        assert!(same.is_error && text(&same).contains("identical"));
        let missing = edit(&paths, &action("b.py", "x", "y", 1));
        assert!(missing.is_error && text(&missing).contains("File not found"));
        let outside = edit(&paths, &action("/tmp/../etc/x", "", "y", 1));
        assert!(outside.is_error && text(&outside).contains("outside the workspace"));
    }
}
