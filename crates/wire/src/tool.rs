//! Tool descriptions as they travel: the `{name, params}` spec an agent is
//! configured with, the MCP-style annotations, and the tool definition JSON
//! recorded in `SystemPromptEvent.tools`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A tool requested by an agent configuration: a registered name plus
/// parameters for its factory (`{"name":"terminal","params":{}}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Registered tool name.
    pub name: String,
    /// Factory parameters.
    #[serde(default)]
    pub params: Map<String, Value>,
}

impl ToolSpec {
    /// A spec without parameters.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            params: Map::new(),
        }
    }
}

/// MCP-style behaviour hints of a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ToolAnnotations {
    /// Human title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not change its environment.
    #[serde(rename = "readOnlyHint", default)]
    pub read_only_hint: bool,
    /// The tool may perform destructive updates.
    #[serde(rename = "destructiveHint", default = "yes")]
    pub destructive_hint: bool,
    /// Repeating a call with the same arguments has no further effect.
    #[serde(rename = "idempotentHint", default)]
    pub idempotent_hint: bool,
    /// The tool interacts with an open world (network, arbitrary processes).
    #[serde(rename = "openWorldHint", default = "yes")]
    pub open_world_hint: bool,
}

fn yes() -> bool {
    true
}

/// A tool definition as serialized in `SystemPromptEvent.tools`:
/// `{description, action_type, observation_type, annotations, kind, title}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// Description shown to the model.
    pub description: String,
    /// `kind` of the tool's actions (`TerminalAction`).
    pub action_type: String,
    /// `kind` of the tool's observations (`TerminalObservation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation_type: Option<String>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Tool class name (`TerminalTool`).
    pub kind: String,
    /// The tool's name as the model calls it.
    pub title: String,
    /// Fields of newer peers (e.g. `meta`), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
