//! `planning_file_editor`: the file editor of the planning agent. It views
//! any file but edits only the plan file (`PLAN.md`), which it creates with
//! the plan's section headers when the conversation starts.

use crate::common::blocking;
use crate::file_editor::{self, Editor, EditorCommand, FileEditorAction, FileEditorObservation};
use openhands_sdk::fsutil::{WriteOptions, write_atomic_with};
use openhands_sdk::tool::{ToolCallContext, ToolEnv, ToolError, TypedTool};
use openhands_wire::tool::ToolAnnotations;
use openhands_workspace::confine::resolve_lenient;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Name the model calls.
pub const PLANNING_FILE_EDITOR_NAME: &str = "planning_file_editor";
/// Directory (under the workspace) holding the plan by default.
pub const DEFAULT_CONFIG_DIR: &str = ".agents_tmp";
/// File name of the plan.
pub const PLAN_FILENAME: &str = "PLAN.md";
/// The plan's sections, in order (the headers of a new `PLAN.md`).
pub const PLAN_SECTIONS: [&str; 5] = [
    "OBJECTIVE",
    "CONTEXT SUMMARY",
    "APPROACH OVERVIEW",
    "IMPLEMENTATION STEPS",
    "TESTING AND VALIDATION",
];

/// The content of a new plan: one numbered `#` header per section
/// (`# 1. OBJECTIVE`), separated by blank lines.
pub fn plan_headers() -> String {
    PLAN_SECTIONS
        .iter()
        .enumerate()
        .map(|(i, title)| format!("# {}. {title}\n", i + 1))
        .collect::<Vec<_>>()
        .join("\n")
}

const RESTRICTION: &str = "\
Planning restrictions:
* `view` works on any file or directory.
* `create`, `str_replace`, `insert` and `undo_edit` work only on the plan file named below; \
any other path is refused.
* The plan file already exists with its section headers; fill in each section rather than \
rewriting the headers.";

/// The planning file editor: a [`file_editor`](crate::file_editor) that
/// refuses edits to anything but the plan.
#[derive(Debug, Clone)]
pub struct PlanningFileEditorTool {
    editor: Arc<Editor>,
    working_dir: PathBuf,
    plan_path: PathBuf,
}

impl PlanningFileEditorTool {
    /// The tool for `env` with the plan at `plan_path` (absolute), or by
    /// default at `<workspace>/.agents_tmp/PLAN.md` (`<workspace>/PLAN.md`
    /// when that older location already has one). Creates the plan with its
    /// headers when missing. Blocking (small file-system work).
    pub fn new(env: &ToolEnv, plan_path: Option<&str>) -> Result<Self, ToolError> {
        let plan_path = match plan_path {
            Some(p) if !Path::new(p).is_absolute() => {
                return Err(ToolError::InvalidArguments(format!(
                    "plan_path must be an absolute path, got: {p}"
                )));
            }
            Some(p) => PathBuf::from(p),
            None => {
                let root = resolve_lenient(&env.working_dir);
                let legacy = root.join(PLAN_FILENAME);
                if legacy.exists() {
                    tracing::warn!(
                        path = %legacy.display(),
                        "PLAN.md found at the workspace root; {DEFAULT_CONFIG_DIR}/{PLAN_FILENAME} is the usual place"
                    );
                    legacy
                } else {
                    root.join(DEFAULT_CONFIG_DIR).join(PLAN_FILENAME)
                }
            }
        };
        if !plan_path.exists() {
            let created = plan_path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| {
                    write_atomic_with(
                        &plan_path,
                        plan_headers().as_bytes(),
                        WriteOptions::user_file(),
                    )
                });
            created.map_err(|e| {
                ToolError::Execution(format!(
                    "cannot create the plan file {}: {e}",
                    plan_path.display()
                ))
            })?;
        }
        Ok(Self {
            editor: Arc::new(Editor::new(env.working_dir.clone())),
            working_dir: env.working_dir.clone(),
            plan_path,
        })
    }

    /// Builds the tool from an agent's tool spec params (`plan_path`).
    pub fn from_params(params: &Map<String, Value>, env: &ToolEnv) -> Result<Self, ToolError> {
        let plan_path = match params.get("plan_path") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(other) => {
                return Err(ToolError::InvalidArguments(format!(
                    "plan_path must be a string, got {other}"
                )));
            }
        };
        Self::new(env, plan_path)
    }

    /// Where the plan is.
    pub fn plan_path(&self) -> &Path {
        &self.plan_path
    }
}

/// Runs `action`, refusing every command but `view` on other files than
/// `plan`; the answer carries what the reference's planning observation
/// carries (command, content, error flag, path).
fn run_restricted(
    editor: &Editor,
    working_dir: &Path,
    plan: &Path,
    action: &FileEditorAction,
) -> FileEditorObservation {
    if action.command != EditorCommand::View {
        let target = resolve_lenient(&working_dir.join(&action.path));
        if target != resolve_lenient(plan) {
            let mut obs = FileEditorObservation::text(
                action.command,
                format!(
                    "Operation '{}' is not allowed on file '{}'. Only the following files can be edited: ['{}']",
                    action.command.as_str(),
                    target.display(),
                    resolve_lenient(plan).display()
                ),
            );
            obs.is_error = true;
            return obs;
        }
    }
    let full = editor.run(action);
    let mut obs = FileEditorObservation::text(action.command, String::new());
    obs.content = full.content;
    obs.is_error = full.is_error;
    obs.path = full.path;
    obs
}

impl TypedTool for PlanningFileEditorTool {
    type Action = FileEditorAction;
    type Observation = FileEditorObservation;
    const NAME: &'static str = PLANNING_FILE_EDITOR_NAME;
    const KIND: &'static str = "PlanningFileEditorTool";
    const ACTION_KIND: &'static str = "PlanningFileEditorAction";
    const OBSERVATION_KIND: &'static str = "PlanningFileEditorObservation";

    fn description(&self) -> String {
        format!(
            "{}\n\n{RESTRICTION}\n\nThe working directory is {}.\nThe plan file is {}; other agents of the workflow read it.",
            file_editor::DESCRIPTION,
            self.working_dir.display(),
            self.plan_path.display()
        )
    }

    fn parameters_schema(&self) -> Value {
        file_editor::parameters_schema()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            title: Some(PLANNING_FILE_EDITOR_NAME.to_string()),
            read_only_hint: false,
            destructive_hint: false,
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
        let working_dir = self.working_dir.clone();
        let plan = self.plan_path.clone();
        blocking(move || run_restricted(&editor, &working_dir, &plan, &action)).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn act(command: EditorCommand, path: &Path) -> FileEditorAction {
        FileEditorAction {
            command,
            path: path.display().to_string(),
            file_text: Some("x\n".into()),
            old_str: Some("# 1. OBJECTIVE\n".into()),
            new_str: Some("# 1. OBJECTIVE\nShip it.\n".into()),
            insert_line: None,
            view_range: None,
        }
    }

    #[test]
    fn headers_are_the_references() {
        assert_eq!(
            plan_headers(),
            "# 1. OBJECTIVE\n\n# 2. CONTEXT SUMMARY\n\n# 3. APPROACH OVERVIEW\n\n# 4. IMPLEMENTATION STEPS\n\n# 5. TESTING AND VALIDATION\n"
        );
    }

    #[test]
    fn creates_plan_and_edits_only_it() {
        let dir = tempfile::tempdir().unwrap();
        let env = ToolEnv::new(dir.path());
        let tool = PlanningFileEditorTool::new(&env, None).unwrap();
        let plan = resolve_lenient(dir.path()).join(".agents_tmp/PLAN.md");
        assert_eq!(tool.plan_path(), plan);
        assert_eq!(std::fs::read_to_string(&plan).unwrap(), plan_headers());
        let other = dir.path().join("main.py");
        std::fs::write(&other, "print(1)\n").unwrap();
        let viewed = run_restricted(
            &tool.editor,
            dir.path(),
            &plan,
            &act(EditorCommand::View, &other),
        );
        assert!(!viewed.is_error);
        let refused = run_restricted(
            &tool.editor,
            dir.path(),
            &plan,
            &act(EditorCommand::Create, &dir.path().join("new.py")),
        );
        assert!(refused.is_error);
        assert!(
            refused.content[0]
                .as_text()
                .unwrap()
                .starts_with("Operation 'create' is not allowed on file")
        );
        assert!(!dir.path().join("new.py").exists());
        let edited = run_restricted(
            &tool.editor,
            dir.path(),
            &plan,
            &act(EditorCommand::StrReplace, &plan),
        );
        assert!(!edited.is_error, "{:?}", edited.content);
        assert!(edited.old_content.is_none() && edited.new_content.is_none());
        assert!(std::fs::read_to_string(&plan).unwrap().contains("Ship it."));
    }

    #[test]
    fn legacy_location_and_bad_params() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("PLAN.md"), "mine").unwrap();
        let env = ToolEnv::new(dir.path());
        let tool = PlanningFileEditorTool::new(&env, None).unwrap();
        assert_eq!(
            tool.plan_path(),
            resolve_lenient(dir.path()).join("PLAN.md")
        );
        assert_eq!(std::fs::read_to_string(tool.plan_path()).unwrap(), "mine");
        assert!(PlanningFileEditorTool::new(&env, Some("rel/PLAN.md")).is_err());
        let mut params = Map::new();
        params.insert(
            "plan_path".into(),
            Value::from(dir.path().join("p/P.md").display().to_string()),
        );
        let t = PlanningFileEditorTool::from_params(&params, &env).unwrap();
        assert!(t.plan_path().exists());
    }
}
