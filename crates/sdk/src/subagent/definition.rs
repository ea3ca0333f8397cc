//! Agent definitions: a named sub-agent configuration (tools, model, system
//! prompt, limits) as the reference's `AgentDefinition`, read from a
//! Markdown file with YAML frontmatter (`.agents/agents/<name>.md`) or from
//! JSON (a start request's `agent_definitions`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::Path;

/// Frontmatter keys with a field of their own; every other key goes to
/// [`AgentDefinition::metadata`].
const KNOWN_FIELDS: &[&str] = &[
    "name",
    "description",
    "model",
    "color",
    "tools",
    "skills",
    "max_iteration_per_run",
    "max_budget_per_run",
    "hooks",
    "profile_store_dir",
    "mcp_config",
    "mcp_servers",
    "permission_mode",
    "condenser",
];

/// The permission modes a definition may name.
pub const PERMISSION_MODES: &[&str] = &["always_confirm", "never_confirm", "confirm_risky"];

/// The model value meaning "use the delegating agent's LLM".
pub const INHERIT_MODEL: &str = "inherit";

/// An invalid definition: which field and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct DefinitionError {
    /// The offending field (`name`, `max_iteration_per_run`, ... or `file`).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl DefinitionError {
    fn new(field: &str, message: impl Into<String>) -> Self {
        Self {
            field: field.to_string(),
            message: message.into(),
        }
    }
}

/// A sub-agent definition, serialized as the reference's `AgentDefinition`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentDefinition {
    /// Agent name (the frontmatter's `name`, else the file stem).
    pub name: String,
    /// What the agent is for (shown to the delegating model).
    #[serde(default)]
    pub description: String,
    /// `inherit` (the parent's LLM) or an LLM profile name.
    #[serde(default = "inherit")]
    pub model: String,
    /// Display color.
    #[serde(default)]
    pub color: Option<String>,
    /// Registered tool names the agent gets.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Skill names resolved from the project and user skill directories.
    #[serde(default)]
    pub skills: Vec<String>,
    /// The Markdown body: appended to the agent's system prompt.
    #[serde(default)]
    pub system_prompt: String,
    /// The file it was read from.
    #[serde(default)]
    pub source: Option<String>,
    /// Where it was discovered (`project`, `user`, `builtin`, `plugin`,
    /// `programmatic`); set by discovery.
    #[serde(default)]
    pub level: Option<String>,
    /// `<example>` blocks of the description.
    #[serde(default)]
    pub when_to_use_examples: Vec<String>,
    /// Hook configuration of the sub-agent's conversation.
    #[serde(default)]
    pub hooks: Option<Value>,
    /// `always_confirm`, `never_confirm`, `confirm_risky`; `None` inherits
    /// the parent's confirmation policy.
    #[serde(default)]
    pub permission_mode: Option<String>,
    /// Iteration limit of one run (> 0); `None` inherits the parent's.
    #[serde(default)]
    pub max_iteration_per_run: Option<i64>,
    /// Cost budget of one run in USD (> 0).
    #[serde(default)]
    pub max_budget_per_run: Option<f64>,
    /// MCP servers the definition declares (a delegated sub-agent ignores
    /// them and inherits its parent's).
    #[serde(default)]
    pub mcp_config: Option<Value>,
    /// Directory of LLM profiles for `model`.
    #[serde(default)]
    pub profile_store_dir: Option<String>,
    /// Condenser configuration of the sub-agent.
    #[serde(default)]
    pub condenser: Option<Value>,
    /// Other frontmatter keys.
    #[serde(default)]
    pub metadata: Map<String, Value>,
}

fn inherit() -> String {
    INHERIT_MODEL.to_string()
}

impl AgentDefinition {
    /// A minimal definition (name and description), as `register_agent`
    /// builds from a plain description.
    pub fn named(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            model: inherit(),
            color: None,
            tools: Vec::new(),
            skills: Vec::new(),
            system_prompt: String::new(),
            source: None,
            level: None,
            when_to_use_examples: Vec::new(),
            hooks: None,
            permission_mode: None,
            max_iteration_per_run: None,
            max_budget_per_run: None,
            mcp_config: None,
            profile_store_dir: None,
            condenser: None,
            metadata: Map::new(),
        }
    }

    /// Parses and validates a definition given as JSON (a start request's
    /// `agent_definitions` entry); the error names the offending field.
    pub fn from_value(value: &Value) -> Result<Self, DefinitionError> {
        let Value::Object(map) = value else {
            return Err(DefinitionError::new(
                "",
                "an agent definition must be an object",
            ));
        };
        match map.get("name") {
            Some(Value::String(n)) if !n.trim().is_empty() => {}
            Some(Value::String(_)) => {
                return Err(DefinitionError::new("name", "must not be empty"));
            }
            Some(_) => return Err(DefinitionError::new("name", "must be a string")),
            None => return Err(DefinitionError::new("name", "Field required")),
        }
        let def: Self = serde_json::from_value(value.clone())
            .map_err(|e| DefinitionError::new(&offending_field(map), e.to_string()))?;
        def.validate()?;
        Ok(def)
    }

    /// Checks the constraints the reference's model enforces.
    pub fn validate(&self) -> Result<(), DefinitionError> {
        if self.name.trim().is_empty() {
            return Err(DefinitionError::new("name", "must not be empty"));
        }
        if let Some(n) = self.max_iteration_per_run
            && n <= 0
        {
            return Err(DefinitionError::new(
                "max_iteration_per_run",
                "Input should be greater than 0",
            ));
        }
        if let Some(b) = self.max_budget_per_run
            && b.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater)
        {
            return Err(DefinitionError::new(
                "max_budget_per_run",
                "Input should be greater than 0",
            ));
        }
        if let Some(m) = &self.permission_mode
            && !PERMISSION_MODES.contains(&m.as_str())
        {
            return Err(DefinitionError::new(
                "permission_mode",
                format!(
                    "Invalid permission_mode '{m}'. Must be one of: {}",
                    PERMISSION_MODES.join(", ")
                ),
            ));
        }
        if let Some(h) = &self.hooks
            && !h.is_null()
            && let Err(e) = crate::hooks::HookConfig::from_value(h)
        {
            return Err(DefinitionError::new("hooks", e.to_string()));
        }
        if let Some(m) = &self.mcp_config
            && !m.is_null()
            && !m.is_object()
        {
            return Err(DefinitionError::new(
                "mcp_config",
                "must be a mapping of server names to configs",
            ));
        }
        Ok(())
    }

    /// Reads a Markdown definition: YAML frontmatter for the fields, the
    /// body as the system prompt, the file stem as the default name.
    pub fn load(path: &Path) -> Result<Self, DefinitionError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| DefinitionError::new("file", format!("{}: {e}", path.display())))?;
        Self::parse_markdown(&text, path)
    }

    /// [`AgentDefinition::load`] on text already read from `path`.
    pub fn parse_markdown(text: &str, path: &Path) -> Result<Self, DefinitionError> {
        let (fm, body) = crate::skills::parse::split_frontmatter(text);
        let fm = crate::skills::parse::frontmatter_map(path, fm)
            .map_err(|e| DefinitionError::new("frontmatter", e.to_string()))?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = fm.get("name").map(scalar_text).unwrap_or(stem);
        let description = fm.get("description").map(scalar_text).unwrap_or_default();
        let def = Self {
            when_to_use_examples: examples_in(&description),
            name,
            description,
            model: fm.get("model").map(scalar_text).unwrap_or_else(inherit),
            color: fm.get("color").filter(|v| !v.is_null()).map(scalar_text),
            tools: string_list(fm.get("tools"), false),
            skills: string_list(fm.get("skills"), true),
            system_prompt: body.to_string(),
            source: Some(path.to_string_lossy().into_owned()),
            level: None,
            hooks: fm.get("hooks").filter(|v| v.is_object()).cloned(),
            permission_mode: permission_mode(fm.get("permission_mode"))?,
            max_iteration_per_run: integer(fm.get("max_iteration_per_run"))?,
            max_budget_per_run: number(fm.get("max_budget_per_run"))?,
            mcp_config: fm
                .get("mcp_config")
                .or_else(|| fm.get("mcp_servers"))
                .filter(|v| !v.is_null())
                .cloned(),
            profile_store_dir: match fm.get("profile_store_dir") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => {
                    return Err(DefinitionError::new(
                        "profile_store_dir",
                        "must be a scalar value",
                    ));
                }
            },
            condenser: condenser(fm.get("condenser"))?,
            metadata: fm
                .iter()
                .filter(|(k, _)| !KNOWN_FIELDS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        };
        def.validate()?;
        Ok(def)
    }

    /// The confirmation policy its `permission_mode` names (`None`:
    /// inherit the parent's).
    pub fn confirmation_policy(&self) -> Option<openhands_wire::state::ConfirmationPolicy> {
        use openhands_wire::state::ConfirmationPolicy;
        match self.permission_mode.as_deref()? {
            "always_confirm" => Some(ConfirmationPolicy::AlwaysConfirm),
            "never_confirm" => Some(ConfirmationPolicy::NeverConfirm),
            "confirm_risky" => {
                serde_json::from_value(serde_json::json!({"kind": "ConfirmRisky"})).ok()
            }
            _ => None,
        }
    }
}

/// The field whose value alone fails to parse (serde_json's messages do
/// not name it).
fn offending_field(map: &Map<String, Value>) -> String {
    map.iter()
        .find(|(k, v)| {
            let mut probe = Map::new();
            probe.insert("name".into(), Value::String("probe".into()));
            probe.insert((*k).clone(), (*v).clone());
            serde_json::from_value::<AgentDefinition>(Value::Object(probe)).is_err()
        })
        .map(|(k, _)| k.clone())
        .unwrap_or_default()
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn string_list(v: Option<&Value>, comma_separated: bool) -> Vec<String> {
    match v {
        Some(Value::String(s)) if comma_separated => s
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items.iter().map(scalar_text).collect(),
        _ => Vec::new(),
    }
}

fn examples_in(description: &str) -> Vec<String> {
    let lower = description.to_lowercase();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(open) = lower[from..].find("<example>") {
        let start = from + open + "<example>".len();
        let Some(close) = lower[start..].find("</example>") else {
            break;
        };
        let text = description[start..start + close].trim();
        if !text.is_empty() {
            out.push(text.to_string());
        }
        from = start + close + "</example>".len();
    }
    out
}

fn permission_mode(v: Option<&Value>) -> Result<Option<String>, DefinitionError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(raw) => {
            let mode = scalar_text(raw).trim().to_lowercase();
            if PERMISSION_MODES.contains(&mode.as_str()) {
                Ok(Some(mode))
            } else {
                Err(DefinitionError::new(
                    "permission_mode",
                    format!(
                        "Invalid permission_mode '{}'. Must be one of: {}",
                        scalar_text(raw),
                        PERMISSION_MODES.join(", ")
                    ),
                ))
            }
        }
    }
}

fn integer(v: Option<&Value>) -> Result<Option<i64>, DefinitionError> {
    match v {
        Some(Value::Number(n)) => Ok(n.as_i64()),
        Some(Value::String(s)) => s.trim().parse().map(Some).map_err(|_| {
            DefinitionError::new("max_iteration_per_run", format!("not an integer: {s:?}"))
        }),
        _ => Ok(None),
    }
}

fn number(v: Option<&Value>) -> Result<Option<f64>, DefinitionError> {
    match v {
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(Value::String(s)) => s.trim().parse().map(Some).map_err(|_| {
            DefinitionError::new("max_budget_per_run", format!("not a number: {s:?}"))
        }),
        _ => Ok(None),
    }
}

/// `condenser`: absent/`default`/`inherit` → none (the default applies);
/// `none`/`off`/`false`/... → the no-op condenser; a mapping → as given.
fn condenser(v: Option<&Value>) -> Result<Option<Value>, DefinitionError> {
    let noop = || Some(serde_json::json!({"kind": "NoOpCondenser"}));
    match v {
        None | Some(Value::Null) | Some(Value::Bool(true)) => Ok(None),
        Some(Value::Bool(false)) => Ok(noop()),
        Some(Value::String(s)) => match s.trim().to_lowercase().as_str() {
            "" | "default" | "inherit" => Ok(None),
            "none" | "off" | "false" | "no" | "disable" | "disabled" => Ok(noop()),
            _ => Err(DefinitionError::new(
                "condenser",
                format!("Invalid condenser value: {s:?}. Use 'default', 'none', or a mapping"),
            )),
        },
        Some(m @ Value::Object(_)) => Ok(Some(m.clone())),
        Some(other) => Err(DefinitionError::new(
            "condenser",
            format!("Invalid condenser value: {other}"),
        )),
    }
}

#[cfg(test)]
#[path = "definition_tests.rs"]
mod tests;
