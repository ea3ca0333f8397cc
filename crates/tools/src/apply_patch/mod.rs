//! `apply_patch`: edits files with a `*** Begin Patch` / `*** End Patch`
//! patch (the editing format of the GPT-5 preset), atomically.

pub mod matcher;
pub mod parser;
pub mod transaction;

pub use parser::{Chunk, Hunk, ParseError, parse_patch};
pub use transaction::{Applied, ChangeType, Commit, FileChange, Workspace, apply_hunks};

use crate::common::blocking;
use openhands_sdk::tool::{ToolCallContext, ToolEnv, ToolError, TypedTool};
use openhands_wire::content::Content;
use openhands_wire::tool::ToolAnnotations;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Name the model calls.
pub const APPLY_PATCH_NAME: &str = "apply_patch";

/// `ApplyPatchAction`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApplyPatchAction {
    /// The whole patch, `*** Begin Patch` to `*** End Patch`.
    pub patch: String,
}

/// `ApplyPatchObservation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApplyPatchObservation {
    /// What the model sees.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Whether the patch was rejected.
    #[serde(default)]
    pub is_error: bool,
    /// Summary of the changes, or why nothing changed.
    #[serde(default)]
    pub message: String,
    /// Sections that matched only after relaxing whitespace (0 = all exact).
    #[serde(default)]
    pub fuzz: usize,
    /// The applied changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<Commit>,
}

/// Parses and applies `patch` inside `ws`; the observation says what
/// changed or why nothing did.
pub fn run_patch(ws: &Workspace, patch: &str) -> ApplyPatchObservation {
    let outcome = parse_patch(patch)
        .map_err(|e| format!("{e}. Nothing was changed."))
        .and_then(|hunks| {
            apply_hunks(ws, &hunks).map_err(|e| {
                format!(
                    "The patch was not applied: {e}. Nothing was changed; fix the patch and send \
                     all of it again."
                )
            })
        });
    match outcome {
        Ok(applied) => {
            let mut message = format!(
                "Patch applied to {} file(s):\n{}",
                applied.summary.len(),
                applied
                    .summary
                    .iter()
                    .map(|l| format!("  {l}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            if applied.fuzz > 0 {
                message.push_str(&format!(
                    "\n{} section(s) matched only after ignoring whitespace or punctuation \
                     differences; check that the result is what you intended.",
                    applied.fuzz
                ));
            }
            ApplyPatchObservation {
                content: vec![Content::text(message.clone())],
                is_error: false,
                message,
                fuzz: applied.fuzz,
                commit: Some(applied.commit),
            }
        }
        Err(message) => ApplyPatchObservation {
            content: vec![Content::text(message.clone())],
            is_error: true,
            message,
            fuzz: 0,
            commit: None,
        },
    }
}

const DESCRIPTION: &str = "\
Create, delete, move and edit files in the workspace with one patch. All changes are applied \
together or not at all.

The patch format:
*** Begin Patch
*** Add File: path/new_file.py
+every line of the new file, each prefixed with +
*** Delete File: path/obsolete.txt
*** Update File: path/existing.py
*** Move to: path/renamed.py        (optional: also rename the file)
@@ class Example:                   (optional: a line to find first, e.g. a class or def)
 unchanged context line (space prefix)
-line to remove
+line to add
 unchanged context line
*** End of File                     (optional: the section ends at the end of the file)
*** End Patch

Rules:
* Paths are relative to the working directory (absolute paths must lie inside it).
* Show about 3 unchanged lines before and after each change so the place is unambiguous; \
add a `@@` line naming the enclosing class or function when the context alone repeats.
* Several `@@` sections may follow one `*** Update File`, in file order.
* Context and removed lines must match the file; small whitespace differences are tolerated \
and reported.
* If any section does not match, no file is changed and the error names the file and the \
lines that were not found.";

/// The apply_patch tool.
#[derive(Debug, Clone)]
pub struct ApplyPatchTool {
    workspace: Workspace,
}

impl ApplyPatchTool {
    /// A tool applying patches inside `env.working_dir`.
    pub fn new(env: &ToolEnv) -> Self {
        Self {
            workspace: Workspace::new(&env.working_dir),
        }
    }
}

impl TypedTool for ApplyPatchTool {
    type Action = ApplyPatchAction;
    type Observation = ApplyPatchObservation;
    const NAME: &'static str = APPLY_PATCH_NAME;
    const KIND: &'static str = "ApplyPatchTool";
    const ACTION_KIND: &'static str = "ApplyPatchAction";
    const OBSERVATION_KIND: &'static str = "ApplyPatchObservation";

    fn description(&self) -> String {
        DESCRIPTION.to_string()
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "patch": {
                    "type": "string",
                    "description": "The complete patch, from `*** Begin Patch` to `*** End Patch`."
                }
            },
            "required": ["patch"]
        })
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            title: Some(APPLY_PATCH_NAME.to_string()),
            read_only_hint: false,
            destructive_hint: true,
            idempotent_hint: false,
            open_world_hint: false,
        }
    }

    async fn run(
        &self,
        action: ApplyPatchAction,
        _ctx: &ToolCallContext,
    ) -> Result<ApplyPatchObservation, ToolError> {
        let ws = self.workspace.clone();
        blocking(move || run_patch(&ws, &action.patch)).await
    }
}
