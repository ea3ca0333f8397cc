//! Skills: reusable instructions that reach the model through the agent
//! context, in the reference's JSON shape (`agent_context.skills[]`).
//!
//! * [`parse`] reads one skill file (legacy `*.md` with optional YAML
//!   frontmatter, AgentSkills `SKILL.md` directories, third-party files such
//!   as `AGENTS.md`);
//! * [`discover`] finds the files of a skills directory, a project, the
//!   user's home and a local copy of the public skills repository;
//! * [`context`] resolves the `load_*_skills` flags of an agent context into
//!   its `skills` list;
//! * [`render`] turns skills into prompt text (repository context, the list
//!   of available skills, knowledge blocks for triggered skills);
//! * [`invoke`] is the `invoke_skill` tool, which renders a skill's
//!   ``!`command` `` spans with [`execute`].

pub mod context;
pub mod discover;
pub mod execute;
pub mod invoke;
pub mod parse;
pub mod public_repo;
pub mod render;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// When a skill's content is injected (`trigger` of the reference's skill).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Trigger {
    /// Injected into the user turn when one of the keywords appears.
    Keyword {
        /// Keywords (whole-token, case-insensitive).
        keywords: Vec<String>,
    },
    /// A task skill: keyword matching plus declared inputs.
    Task {
        /// Trigger strings (`/<name>` is always one of them).
        triggers: Vec<String>,
    },
    /// A rule injected when the agent touches a file matching a glob.
    Path {
        /// Gitignore-style globs relative to the workspace.
        paths: Vec<String>,
    },
}

/// One input of a task skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputMetadata {
    /// Input name.
    pub name: String,
    /// What the user should provide.
    pub description: String,
}

/// Resource directories beside an AgentSkills `SKILL.md`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillResources {
    /// Absolute directory of the skill.
    pub skill_root: String,
    /// Files under `scripts/` (relative).
    #[serde(default)]
    pub scripts: Vec<String>,
    /// Files under `references/` (relative).
    #[serde(default)]
    pub references: Vec<String>,
    /// Files under `assets/` (relative).
    #[serde(default)]
    pub assets: Vec<String>,
}

fn d_version() -> String {
    "1.0.0".into()
}

/// A skill as the reference serializes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skill {
    /// Unique name.
    pub name: String,
    /// Instruction text (frontmatter removed).
    pub content: String,
    /// Activation; `None` = always in the repository context (legacy) or
    /// read on demand (AgentSkills).
    #[serde(default)]
    pub trigger: Option<Trigger>,
    /// Path of the file it came from.
    #[serde(default)]
    pub source: Option<String>,
    /// MCP servers the skill brings (kept verbatim).
    #[serde(default)]
    pub mcp_tools: Option<Value>,
    /// Inputs of a task skill.
    #[serde(default)]
    pub inputs: Vec<InputMetadata>,
    /// Loaded from a `SKILL.md` (progressive disclosure).
    #[serde(default)]
    pub is_agentskills_format: bool,
    /// AgentSkills version.
    #[serde(default = "d_version")]
    pub version: String,
    /// Short description shown in the list of available skills.
    #[serde(default)]
    pub description: Option<String>,
    /// License.
    #[serde(default)]
    pub license: Option<String>,
    /// Compatibility notes.
    #[serde(default)]
    pub compatibility: Option<String>,
    /// Free-form metadata.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// Pre-approved tools.
    #[serde(default)]
    pub allowed_tools: Option<Vec<String>>,
    /// Only trigger matching may activate it (never listed, never invoked).
    #[serde(default)]
    pub disable_model_invocation: bool,
    /// Resource directories (AgentSkills only).
    #[serde(default)]
    pub resources: Option<SkillResources>,
    /// Fields of newer peers, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Skill {
    /// A skill with `name` and `content`, no trigger, no source.
    pub fn new(name: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            content: content.into(),
            trigger: None,
            source: None,
            mcp_tools: None,
            inputs: Vec::new(),
            is_agentskills_format: false,
            version: d_version(),
            description: None,
            license: None,
            compatibility: None,
            metadata: None,
            allowed_tools: None,
            disable_model_invocation: false,
            resources: None,
            extra: Map::new(),
        }
    }

    /// The keywords that activate this skill (keyword and task triggers).
    pub fn keywords(&self) -> &[String] {
        match &self.trigger {
            Some(Trigger::Keyword { keywords }) => keywords,
            Some(Trigger::Task { triggers }) => triggers,
            _ => &[],
        }
    }

    /// The first keyword appearing in `message` as a whole token
    /// (case-insensitive; alphanumeric boundaries, so `git` does not match
    /// `github` while `/deploy` still matches).
    pub fn match_trigger(&self, message: &str) -> Option<&str> {
        let lower = message.to_lowercase();
        self.keywords()
            .iter()
            .find(|k| keyword_matches(&k.to_lowercase(), &lower))
            .map(String::as_str)
    }

    /// `agentskills`, `repo` (always on) or `knowledge` (triggered).
    pub fn skill_type(&self) -> &'static str {
        if self.is_agentskills_format {
            "agentskills"
        } else if self.trigger.is_none() {
            "repo"
        } else {
            "knowledge"
        }
    }

    /// Whether this skill's full content goes into the repository context
    /// (legacy format without trigger).
    pub fn is_repo_context(&self) -> bool {
        !self.is_agentskills_format && self.trigger.is_none()
    }

    /// Whether the model is told about it and may invoke it.
    pub fn is_listed(&self) -> bool {
        (self.is_agentskills_format || self.trigger.is_some()) && !self.disable_model_invocation
    }
}

/// `keyword` (lowercase) occurs in `message` (lowercase) without an ASCII
/// letter or digit right before or after it.
fn keyword_matches(keyword: &str, message: &str) -> bool {
    if keyword.is_empty() {
        return false;
    }
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    message.match_indices(keyword).any(|(i, m)| {
        let before = message[..i].chars().next_back();
        let after = message[i + m.len()..].chars().next();
        !alnum(before) && !alnum(after)
    })
}

/// Skills of an agent context value (`agent_context.skills`); entries that
/// do not parse are skipped with a warning.
pub fn skills_of(agent_context: Option<&Value>) -> Vec<Skill> {
    let Some(list) = agent_context
        .and_then(|c| c.get("skills"))
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|v| match serde_json::from_value::<Skill>(v.clone()) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::warn!(error = %e, "agent_context.skills entry ignored");
                None
            }
        })
        .collect()
}

/// Keeps the first skill of each name: `primary` first, then the
/// `secondary` skills whose names are new.
pub fn merge_by_name(
    primary: Vec<Skill>,
    secondary: impl IntoIterator<Item = Skill>,
) -> Vec<Skill> {
    let mut out = primary;
    let mut seen: std::collections::HashSet<String> = out.iter().map(|s| s.name.clone()).collect();
    for s in secondary {
        if seen.insert(s.name.clone()) {
            out.push(s);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keyword_matching_is_whole_token() {
        let mut s = Skill::new("k", "c");
        s.trigger = Some(Trigger::Keyword {
            keywords: vec!["git".into(), "/deploy".into()],
        });
        assert_eq!(s.match_trigger("Use GIT please"), Some("git"));
        assert_eq!(s.match_trigger("open github"), None);
        assert_eq!(s.match_trigger("run /deploy now"), Some("/deploy"));
        assert_eq!(s.match_trigger("x/deployed"), None);
    }

    #[test]
    fn reference_json_round_trips() {
        let v = json!({"name": "k", "content": "c", "trigger": {"type": "task", "triggers": ["/k"]},
            "source": null, "mcp_tools": null, "inputs": [{"name": "a", "description": "d"}],
            "is_agentskills_format": false, "version": "1.0.0", "description": null,
            "license": null, "compatibility": null, "metadata": null, "allowed_tools": null,
            "disable_model_invocation": false, "resources": null});
        let s: Skill = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(s.keywords(), ["/k"]);
        assert_eq!(serde_json::to_value(&s).unwrap(), v);
        let minimal: Skill = serde_json::from_value(json!({"name": "n", "content": "x"})).unwrap();
        assert!(minimal.is_repo_context() && !minimal.is_listed());
    }

    #[test]
    fn merge_keeps_primary() {
        let a = vec![Skill::new("a", "1")];
        let m = merge_by_name(a, vec![Skill::new("a", "2"), Skill::new("b", "3")]);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].content, "1");
    }
}
