//! Client-defined tools: tools described by a JSON spec (name, description,
//! JSON-schema parameters) and carried out by whoever listens to the
//! conversation's events (an event callback, a WebSocket subscriber).
//!
//! When the model calls one, the agent records the `ActionEvent` (with the
//! tool's name and the arguments as `ClientAction_<name>`) as for any tool;
//! the tool itself only answers with the reference's acknowledgement
//! (`ClientToolObservation`, "Tool call dispatched to client.") so the loop
//! goes on while the client does the work.
//!
//! A client tool travels with the agent as a `ToolSpec` named like the tool
//! whose `params.spec` is the whole [`ClientToolSpec`] (the reference's
//! layout), so a resumed conversation rebuilds it from `base_state.json`.

use crate::tool::{Tool, ToolCallContext, ToolError, ToolRegistry, text_observation};
use async_trait::async_trait;
use openhands_wire::tool::{ToolAnnotations, ToolDefinition, ToolSpec};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// `kind` of client tools in tool definitions.
pub const TOOL_KIND: &str = "ClientTool";
/// `kind` of the acknowledgement observation.
pub const OBSERVATION_KIND: &str = "ClientToolObservation";
/// Text of the acknowledgement the model sees.
pub const ACKNOWLEDGEMENT: &str = "Tool call dispatched to client.";
/// Names of the always-available built-in tools a client tool may not take.
const BUILTIN_NAMES: &[&str] = &["finish", "think", "invoke_skill"];

fn default_parameters() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("type".into(), json!("object"));
    m.insert("properties".into(), Value::Object(Map::new()));
    m
}

/// A tool defined by the client (`ClientToolSpec`): the model sees its name,
/// description and parameters; the client executes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientToolSpec {
    /// Unique tool name the model calls.
    pub name: String,
    /// Description shown to the model.
    pub description: String,
    /// JSON Schema of the arguments; must be an object schema.
    #[serde(default = "default_parameters")]
    pub parameters: Map<String, Value>,
    /// MCP-style hints; without them the tool counts as able to change
    /// things (the model is asked for a security risk).
    #[serde(default)]
    pub annotations: Option<ToolAnnotations>,
}

/// Why client tools cannot be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientToolError {
    /// `parameters` is not an object schema (field error of one spec).
    #[error(
        "ClientToolSpec.parameters must be an object JSON Schema (got type={0}). Example: {{\"type\": \"object\", \"properties\": {{...}}}}"
    )]
    NotObjectSchema(String),
    /// Two specs of one registration share a name.
    #[error(
        "Duplicate client tool name '{0}' in one registration request. Client tool names must be unique."
    )]
    Duplicate(String),
    /// The name is taken by a tool that is not a client tool.
    #[error(
        "Client tool name '{0}' collides with an existing non-client tool. Choose a unique client tool name."
    )]
    Collision(String),
}

impl ClientToolSpec {
    /// A spec with the default (empty object) parameters and no annotations.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters: default_parameters(),
            annotations: None,
        }
    }

    /// The same spec with these parameters.
    pub fn with_parameters(mut self, parameters: Map<String, Value>) -> Self {
        self.parameters = parameters;
        self
    }

    /// Checks the parameters are an object schema, as the reference's field
    /// validator does.
    pub fn validate(&self) -> Result<(), ClientToolError> {
        match self.parameters.get("type") {
            Some(Value::String(t)) if t == "object" => Ok(()),
            Some(Value::String(t)) => Err(ClientToolError::NotObjectSchema(format!("'{t}'"))),
            Some(other) => Err(ClientToolError::NotObjectSchema(other.to_string())),
            None => Err(ClientToolError::NotObjectSchema("None".into())),
        }
    }

    /// The spec as stored in `meta.json` and answered in conversation infos
    /// (every field present, like pydantic's dump).
    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "annotations": self.annotations,
        })
    }

    /// The spec a persisted `ToolSpec` carries, when it is a client tool
    /// (its `params.spec` is a valid spec of the same name).
    pub fn from_tool_spec(tool: &ToolSpec) -> Option<Self> {
        let spec: Self = serde_json::from_value(tool.params.get("spec")?.clone()).ok()?;
        (spec.name == tool.name && spec.validate().is_ok()).then_some(spec)
    }

    fn to_tool_spec(&self) -> ToolSpec {
        let mut params = Map::new();
        params.insert("spec".into(), self.to_json());
        ToolSpec {
            name: self.name.clone(),
            params,
        }
    }
}

/// Adds client tools to an agent's tool list (the reference's
/// `register_client_tools` + launch): each spec is validated, names must be
/// unique and must not name a registered, built-in or already listed
/// non-client tool; a client tool already listed is kept as it is.
pub fn add_client_tools(
    tools: &mut Vec<ToolSpec>,
    specs: &[ClientToolSpec],
    registry: &ToolRegistry,
) -> Result<(), ClientToolError> {
    let mut seen = BTreeSet::new();
    for s in specs {
        s.validate()?;
        if !seen.insert(s.name.as_str()) {
            return Err(ClientToolError::Duplicate(s.name.clone()));
        }
    }
    for s in specs {
        let listed_non_client = tools
            .iter()
            .any(|t| t.name == s.name && ClientToolSpec::from_tool_spec(t).is_none());
        if registry.contains(&s.name)
            || BUILTIN_NAMES.contains(&s.name.as_str())
            || listed_non_client
        {
            return Err(ClientToolError::Collision(s.name.clone()));
        }
    }
    for s in specs {
        if !tools.iter().any(|t| t.name == s.name) {
            tools.push(s.to_tool_spec());
        }
    }
    Ok(())
}

/// A client-defined tool inside one conversation.
#[derive(Debug, Clone)]
pub struct ClientTool {
    spec: ClientToolSpec,
    action_kind: String,
}

impl ClientTool {
    /// The tool of `spec`.
    pub fn new(spec: ClientToolSpec) -> Result<Self, ClientToolError> {
        spec.validate()?;
        Ok(Self {
            action_kind: format!("ClientAction_{}", spec.name),
            spec,
        })
    }

    /// Its spec.
    pub fn spec(&self) -> &ClientToolSpec {
        &self.spec
    }

    /// The names the schema declares, each with the field name the action
    /// records it under (a property called `kind` would clash with the
    /// action's discriminator and is recorded as `mcp_arg_kind`, as the
    /// reference does).
    fn fields(&self) -> Vec<(String, String)> {
        self.spec
            .parameters
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| {
                p.keys()
                    .map(|k| {
                        let field = if k == "kind" {
                            "mcp_arg_kind".to_string()
                        } else {
                            k.clone()
                        };
                        (k.clone(), field)
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[async_trait]
impl Tool for ClientTool {
    fn name(&self) -> &str {
        &self.spec.name
    }
    fn kind(&self) -> &str {
        TOOL_KIND
    }
    fn action_kind(&self) -> &str {
        &self.action_kind
    }
    fn observation_kind(&self) -> &str {
        OBSERVATION_KIND
    }
    fn description(&self) -> String {
        self.spec.description.clone()
    }
    /// The client's schema verbatim (enums, bounds, nested objects and
    /// `additionalProperties` are kept).
    fn parameters_schema(&self) -> Value {
        Value::Object(self.spec.parameters.clone())
    }
    fn annotations(&self) -> ToolAnnotations {
        self.spec.annotations.clone().unwrap_or(ToolAnnotations {
            title: None,
            read_only_hint: false,
            destructive_hint: true,
            idempotent_hint: false,
            open_world_hint: true,
        })
    }

    /// Validates the arguments against the client's schema and records
    /// every declared property (absent optional ones as `null`).
    fn parse_action(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        let schema = Value::Object(self.spec.parameters.clone());
        let instance = Value::Object(args);
        match jsonschema::draft202012::new(&schema) {
            Ok(validator) => {
                if let Some(e) = validator.iter_errors(&instance).next() {
                    return Err(ToolError::InvalidArguments(e.to_string()));
                }
            }
            Err(e) => {
                return Err(ToolError::InvalidArguments(format!(
                    "the client's parameters schema is invalid: {e}"
                )));
            }
        }
        let Value::Object(mut args) = instance else {
            return Err(ToolError::InvalidArguments(
                "arguments must be an object".into(),
            ));
        };
        let mut action = Map::new();
        for (property, field) in self.fields() {
            action.insert(field, args.remove(&property).unwrap_or(Value::Null));
        }
        for (k, v) in args {
            action.entry(k).or_insert(v);
        }
        action.insert("kind".into(), Value::String(self.action_kind.clone()));
        Ok(Value::Object(action))
    }

    async fn execute(&self, _action: Value, _ctx: &ToolCallContext) -> Result<Value, ToolError> {
        Ok(text_observation(OBSERVATION_KIND, ACKNOWLEDGEMENT, false))
    }

    fn definition(&self) -> ToolDefinition {
        let mut extra = Map::new();
        extra.insert("meta".into(), Value::Null);
        extra.insert("client_tool_name".into(), json!(self.spec.name));
        extra.insert(
            "input_schema".into(),
            Value::Object(self.spec.parameters.clone()),
        );
        ToolDefinition {
            description: self.description(),
            action_type: self.action_kind.clone(),
            observation_type: Some(OBSERVATION_KIND.to_string()),
            annotations: self.spec.annotations.clone(),
            kind: TOOL_KIND.to_string(),
            title: self
                .spec
                .annotations
                .as_ref()
                .and_then(|a| a.title.clone())
                .unwrap_or_else(|| self.spec.name.clone()),
            extra,
        }
    }
}

#[cfg(test)]
#[path = "client_tool_tests.rs"]
mod tests;
