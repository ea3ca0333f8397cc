//! `POST /api/skills`, `POST /api/hooks` and `POST /api/sub-agents` bodies and answers.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

fn yes() -> bool {
    true
}

fn d_marketplace() -> Option<String> {
    Some("marketplaces/default.json".into())
}

/// `SkillsRequest`: which sources to load skills from.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SkillsRequest {
    /// Public skills (read from a local copy of the public repository).
    #[serde(default = "yes")]
    pub load_public: bool,
    /// The user's skills (`~/.agents/skills`, `~/.openhands/skills`, ...).
    #[serde(default = "yes")]
    pub load_user: bool,
    /// The project's skills (`project_dir`).
    #[serde(default = "yes")]
    pub load_project: bool,
    /// Organization skills (`org_configs`).
    #[serde(default = "yes")]
    pub load_org: bool,
    /// Marketplace file of the public repository (`null`: every skill).
    #[serde(default = "d_marketplace")]
    pub marketplace_path: Option<String>,
    /// Marketplace registrations.
    #[serde(default)]
    pub registered_marketplaces: Vec<Value>,
    /// Workspace directory of the project.
    #[serde(default)]
    pub project_dir: Option<String>,
    /// Organization skill repositories.
    #[serde(default)]
    pub org_configs: Option<Vec<Value>>,
    /// Sandbox description (exposed URLs).
    #[serde(default)]
    pub sandbox_config: Option<Value>,
}

/// `SkillInfo`: a skill as the API lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SkillInfo {
    /// Name.
    pub name: String,
    /// `repo`, `knowledge` or `agentskills`.
    pub r#type: String,
    /// Content.
    pub content: String,
    /// Trigger keywords.
    pub triggers: Vec<String>,
    /// Source file.
    pub source: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Loaded from a `SKILL.md`.
    pub is_agentskills_format: bool,
    /// Only triggers activate it.
    pub disable_model_invocation: bool,
}

/// `SkillsResponse`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SkillsResponse {
    /// The merged skills.
    pub skills: Vec<SkillInfo>,
    /// How many skills each source gave.
    pub sources: Map<String, Value>,
}

/// `HooksRequest`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HooksRequest {
    /// Workspace whose `.openhands/hooks.json` is read.
    #[serde(default)]
    pub project_dir: Option<String>,
}

/// `HooksResponse`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HooksResponse {
    /// The configuration, or `null` when there is none (or it is invalid).
    pub hook_config: Option<Value>,
}

/// `SubAgentsRequest`: which sources to list sub-agents from.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SubAgentsRequest {
    /// The user's agents (`~/.agents/agents`, `~/.openhands/agents`).
    #[serde(default = "yes")]
    pub load_user: bool,
    /// The project's agents (`project_dir`).
    #[serde(default = "yes")]
    pub load_project: bool,
    /// The built-in agents (`general-purpose`, `code-explorer`, ...).
    #[serde(default = "yes")]
    pub load_builtin: bool,
    /// Workspace directory of the project.
    #[serde(default)]
    pub project_dir: Option<String>,
}

/// `SubAgentInfo`: an agent definition as the API lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SubAgentInfo {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// `inherit` or an LLM profile name.
    pub model: String,
    /// Display color.
    pub color: Option<String>,
    /// Tool names.
    pub tools: Vec<String>,
    /// Skill names.
    pub skills: Vec<String>,
    /// The Markdown body.
    pub system_prompt: String,
    /// `<example>` blocks of the description.
    pub when_to_use_examples: Vec<String>,
    /// Permission mode (`null`: inherit).
    pub permission_mode: Option<String>,
    /// Iteration limit per run.
    pub max_iteration_per_run: Option<i64>,
    /// Cost budget per run (USD).
    pub max_budget_per_run: Option<f64>,
    /// MCP servers the definition declares.
    pub mcp_config: Option<Value>,
    /// Deprecated alias of `mcp_config`.
    pub mcp_servers: Option<Value>,
    /// Profile store directory.
    pub profile_store_dir: Option<String>,
    /// Hook configuration.
    pub hooks: Option<Value>,
    /// Condenser configuration.
    pub condenser: Option<Value>,
    /// Other frontmatter keys.
    pub metadata: Map<String, Value>,
    /// `project`, `user`, `builtin`, ...
    pub level: Option<String>,
    /// Source file.
    pub source: Option<String>,
    /// Whether it is a built-in.
    pub is_builtin: bool,
}

/// `SubAgentsResponse`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SubAgentsResponse {
    /// The agents, first-wins by name: project, user, built-in.
    pub agents: Vec<SubAgentInfo>,
}
