//! `invoke_skill`: the model loads a listed skill's full content by name.
//! Attached automatically when an AgentSkills skill may be invoked, or when
//! `InvokeSkillTool` is among the agent's default tools.

use super::Skill;
use crate::tool::{ToolCallContext, ToolError, TypedTool};
use openhands_wire::content::Content;
use openhands_wire::tool::ToolAnnotations;
use openhands_workspace::exec::ExecPolicy;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The tool, holding the conversation's skills.
#[derive(Debug, Clone)]
pub struct InvokeSkillTool {
    skills: Arc<Vec<Skill>>,
    working_dir: PathBuf,
    exec: ExecPolicy,
}

impl InvokeSkillTool {
    /// A tool offering `skills` to a conversation working in `working_dir`.
    pub fn new(skills: Vec<Skill>, working_dir: impl Into<PathBuf>) -> Self {
        Self {
            skills: Arc::new(skills),
            working_dir: working_dir.into(),
            exec: ExecPolicy::default(),
        }
    }

    /// Runs the skills' ``!`command` `` spans under `exec`.
    pub fn with_exec(mut self, exec: ExecPolicy) -> Self {
        self.exec = exec;
        self
    }
}

/// `InvokeSkillAction`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvokeSkillAction {
    /// Name of the skill.
    pub name: String,
}

/// `InvokeSkillObservation`: the skill's content (or why not).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvokeSkillObservation {
    /// What the model sees.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Whether the call failed.
    #[serde(default)]
    pub is_error: bool,
    /// The skill asked for.
    pub skill_name: String,
}

impl InvokeSkillObservation {
    fn new(skill_name: &str, text: String, is_error: bool) -> Self {
        Self {
            content: vec![Content::text(text)],
            is_error,
            skill_name: skill_name.to_string(),
        }
    }
}

/// A note telling the model where the skill's files are (relative to the
/// workspace when inside it).
fn location_note(source: Option<&str>, working_dir: &Path) -> Option<String> {
    let file = std::fs::canonicalize(source?).ok()?;
    if !file.is_file() {
        return None;
    }
    let dir = file.parent()?.to_path_buf();
    let shown = std::fs::canonicalize(working_dir)
        .ok()
        .and_then(|w| dir.strip_prefix(&w).ok().map(Path::to_path_buf))
        .unwrap_or(dir);
    Some(format!(
        "\n\n---\nThe skill's directory is `{}`; files it mentions (such as `scripts/`, \
         `references/`, `assets/`) are relative to it.",
        shown.display()
    ))
}

impl TypedTool for InvokeSkillTool {
    type Action = InvokeSkillAction;
    type Observation = InvokeSkillObservation;
    const NAME: &'static str = "invoke_skill";
    const KIND: &'static str = "InvokeSkillTool";
    const ACTION_KIND: &'static str = "InvokeSkillAction";
    const OBSERVATION_KIND: &'static str = "InvokeSkillObservation";

    fn description(&self) -> String {
        "Load a skill by name.\n\nUse it for the skills listed in `<available_skills>`, passing \
         the `<name>` given there; the result is the skill's full instructions."
            .to_string()
    }
    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "Name of the skill to load."}},
            "required": ["name"]
        })
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            title: Some("invoke_skill".into()),
            read_only_hint: true,
            destructive_hint: false,
            idempotent_hint: true,
            open_world_hint: false,
        }
    }
    async fn run(
        &self,
        action: InvokeSkillAction,
        _ctx: &ToolCallContext,
    ) -> Result<InvokeSkillObservation, ToolError> {
        let name = action.name.trim();
        let Some(skill) = self.skills.iter().find(|s| s.name == name) else {
            let mut names: Vec<&str> = self
                .skills
                .iter()
                .filter(|s| !s.disable_model_invocation)
                .map(|s| s.name.as_str())
                .collect();
            names.sort_unstable();
            let list = if names.is_empty() {
                "<none>".to_string()
            } else {
                names.join(", ")
            };
            return Ok(InvokeSkillObservation::new(
                name,
                format!("Unknown skill '{name}'. Available skills: {list}."),
                true,
            ));
        };
        if skill.disable_model_invocation {
            return Ok(InvokeSkillObservation::new(
                name,
                format!(
                    "Skill '{name}' cannot be invoked directly; only its trigger keywords activate it."
                ),
                true,
            ));
        }
        let mut text = if super::execute::has_commands(&skill.content) {
            super::execute::render(&skill.content, &self.working_dir, &self.exec).await
        } else {
            skill.content.clone()
        };
        if let Some(note) = location_note(skill.source.as_deref(), &self.working_dir) {
            text.push_str(&note);
        }
        Ok(InvokeSkillObservation::new(name, text, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn invokes_known_skills_only() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("pdf");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("SKILL.md"), "x").unwrap();
        let mut s = Skill::new("pdf", "Use pdftotext.");
        s.is_agentskills_format = true;
        s.source = Some(dir.join("SKILL.md").display().to_string());
        let mut hidden = Skill::new("rule", "r");
        hidden.disable_model_invocation = true;
        let t = InvokeSkillTool::new(vec![s, hidden], d.path());
        let ctx = ToolCallContext::default();
        let ok = t
            .run(
                InvokeSkillAction {
                    name: " pdf ".into(),
                },
                &ctx,
            )
            .await
            .unwrap();
        assert!(!ok.is_error);
        let text = serde_json::to_string(&ok.content).unwrap();
        assert!(
            text.contains("Use pdftotext.") && text.contains("`pdf`"),
            "{text}"
        );
        let unknown = t
            .run(
                InvokeSkillAction {
                    name: "nope".into(),
                },
                &ctx,
            )
            .await
            .unwrap();
        assert!(unknown.is_error);
        assert!(
            serde_json::to_string(&unknown.content)
                .unwrap()
                .contains("Available skills: pdf.")
        );
        let rule = t
            .run(
                InvokeSkillAction {
                    name: "rule".into(),
                },
                &ctx,
            )
            .await
            .unwrap();
        assert!(rule.is_error);
    }
}
