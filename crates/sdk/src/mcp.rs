//! MCP tools in the agent: every tool of the agent's MCP servers
//! (`AgentSpec.mcp_config`) becomes a [`Tool`] with the reference's names,
//! kinds (`MCPToolDefinition`, `MCPToolAction` `{"data": {...}}`,
//! `MCPToolObservation` with `tool_name`) and JSON schema. The MCP client
//! is reached only through [`openhands_mcp::McpClient`].

use crate::tool::{Tool, ToolCallContext, ToolEnv, ToolError};
use async_trait::async_trait;
use openhands_mcp::{
    CallResult, McpClient, McpConfig, McpContent, McpSession, ServerFailure, StartOptions,
};
use openhands_wire::content::{Content, ImageContent};
use openhands_wire::tool::{ToolAnnotations, ToolDefinition};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// `kind` of MCP tool definitions.
pub const TOOL_KIND: &str = "MCPToolDefinition";
/// `kind` of MCP actions.
pub const ACTION_KIND: &str = "MCPToolAction";
/// `kind` of MCP observations.
pub const OBSERVATION_KIND: &str = "MCPToolObservation";
/// What the model sees before the content of a failed call (the
/// reference's `Observation.ERROR_MESSAGE_HEADER`).
pub const ERROR_HEADER: &str = "[An error occurred during execution.]\n";

/// The agent's MCP servers once started: the client and the servers that
/// did not start.
#[derive(Debug, Clone)]
pub struct McpStartup {
    /// The connected servers.
    pub client: Arc<dyn McpClient>,
    /// Servers that could not be started.
    pub failures: Vec<ServerFailure>,
}

impl McpStartup {
    /// A startup from a started session.
    pub fn from_session(started: openhands_mcp::Started) -> Self {
        Self {
            client: started.session,
            failures: started.failures,
        }
    }

    /// One line per failed server, for the model and the logs.
    pub fn failure_notice(&self) -> Option<String> {
        if self.failures.is_empty() {
            return None;
        }
        let lines: Vec<String> = self
            .failures
            .iter()
            .map(|f| format!("- {}", f.error))
            .collect();
        Some(format!(
            "These MCP servers could not be started, so their tools are not available:\n{}",
            lines.join("\n")
        ))
    }
}

/// The agent's MCP configuration (`None` when it has no enabled server).
pub fn config_of(
    mcp_config: &Map<String, Value>,
) -> Result<Option<McpConfig>, openhands_mcp::ConfigError> {
    if mcp_config.is_empty() {
        return Ok(None);
    }
    let cfg = McpConfig::from_agent_map(mcp_config)?;
    Ok((!cfg.is_empty()).then_some(cfg))
}

/// Start options for a conversation's tool environment.
pub fn start_options(env: &ToolEnv) -> StartOptions {
    let mut o = StartOptions::new(env.working_dir.clone());
    o.env = env.exec.env.clone();
    o.sandbox = env.exec.sandbox.clone();
    if let Some(states) = &env.mcp_oauth_states {
        o.oauth_states = states.clone();
    }
    o.oauth_consent = env.mcp_oauth_consent.clone();
    o
}

/// `mcp_config` with its `${VAR}` / `${VAR:-default}` placeholders
/// expanded as the reference does: a conversation secret, then the
/// environment the agent's processes get (the policy's, so a withheld
/// server credential cannot be pulled in), then the default.
pub fn expanded_config(mcp_config: &Map<String, Value>, env: &ToolEnv) -> Map<String, Value> {
    let child_env = env.exec.env.child_env();
    let secrets = env.secrets.clone();
    let lookup = move |name: &str| {
        secrets
            .secret_value(name)
            .or_else(|| child_env.get(name).map(str::to_string))
    };
    openhands_mcp::expand_variables(mcp_config, &lookup)
}

/// Starts the servers of `mcp_config` (async).
pub async fn start(
    mcp_config: &Map<String, Value>,
    env: &ToolEnv,
) -> Result<Option<McpStartup>, openhands_mcp::ConfigError> {
    let Some(cfg) = config_of(&expanded_config(mcp_config, env))? else {
        return Ok(None);
    };
    let started = McpSession::start(&cfg, start_options(env)).await;
    Ok(Some(McpStartup::from_session(started)))
}

/// Starts the servers of `mcp_config`, blocking the calling thread (for
/// synchronous callers; never on an async worker thread).
pub fn start_blocking(
    mcp_config: &Map<String, Value>,
    env: &ToolEnv,
) -> Result<Option<McpStartup>, openhands_mcp::ConfigError> {
    let Some(cfg) = config_of(&expanded_config(mcp_config, env))? else {
        return Ok(None);
    };
    let started = McpSession::start_blocking(&cfg, start_options(env));
    Ok(Some(McpStartup::from_session(started)))
}

/// The tools of a started client.
pub fn tools_of(client: &Arc<dyn McpClient>, env: &ToolEnv) -> Vec<Arc<dyn Tool>> {
    client
        .tools()
        .into_iter()
        .map(|tool| {
            Arc::new(McpTool {
                client: client.clone(),
                tool,
                secrets: env.secrets.clone(),
            }) as Arc<dyn Tool>
        })
        .collect()
}

/// One MCP tool as the agent sees it.
pub struct McpTool {
    client: Arc<dyn McpClient>,
    tool: openhands_mcp::McpTool,
    secrets: Arc<dyn crate::tool::SecretAccess>,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.tool.name)
            .finish_non_exhaustive()
    }
}

impl McpTool {
    fn observation(&self, content: Vec<Content>, is_error: bool) -> Value {
        json!({
            "content": content,
            "is_error": is_error,
            "tool_name": self.tool.name,
            "kind": OBSERVATION_KIND,
        })
    }

    fn error_observation(&self, text: String) -> Value {
        self.observation(vec![Content::text(self.secrets.mask(&text))], true)
    }

    /// The reference's `MCPToolObservation.from_call_tool_result`: a
    /// header line, then text and image blocks (other blocks are dropped).
    fn result_observation(&self, r: CallResult) -> Value {
        let mut content = vec![Content::text(format!(
            "[Tool '{}' executed.]",
            self.tool.name
        ))];
        for block in r.content {
            match block {
                McpContent::Text(t) => content.push(Content::text(self.secrets.mask(&t))),
                McpContent::Image { mime_type, data } => content.push(Content::Image(
                    ImageContent::new(vec![format!("data:{mime_type};base64,{data}")]),
                )),
                McpContent::Other(v) => {
                    let block = v.get("type").and_then(Value::as_str).unwrap_or("?");
                    tracing::warn!(tool = %self.tool.name, %block, "unsupported MCP content block ignored");
                }
            }
        }
        self.observation(content, r.is_error)
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.tool.name
    }
    fn kind(&self) -> &str {
        TOOL_KIND
    }
    fn action_kind(&self) -> &str {
        ACTION_KIND
    }
    fn observation_kind(&self) -> &str {
        OBSERVATION_KIND
    }
    fn description(&self) -> String {
        self.tool
            .description
            .clone()
            .unwrap_or_else(|| "No description provided".into())
    }
    fn parameters_schema(&self) -> Value {
        let defs = self
            .tool
            .input_schema
            .get("$defs")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut schema = match simplify_schema(&self.tool.input_schema, &defs, &[]) {
            Value::Object(o) => o,
            _ => Map::new(),
        };
        schema
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        Value::Object(schema)
    }
    fn annotations(&self) -> ToolAnnotations {
        self.tool
            .annotations
            .as_ref()
            .and_then(|a| serde_json::from_value(a.clone()).ok())
            .unwrap_or_default()
    }

    fn parse_action(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        let data: Map<String, Value> = args.into_iter().filter(|(_, v)| !v.is_null()).collect();
        let missing: Vec<&str> = self
            .tool
            .input_schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|k| !data.contains_key(*k))
            .collect();
        if !missing.is_empty() {
            return Err(ToolError::InvalidArguments(format!(
                "Validation error for MCP tool '{}' args: missing required field(s): {}",
                self.tool.name,
                missing.join(", ")
            )));
        }
        Ok(json!({"data": data, "kind": ACTION_KIND}))
    }

    async fn execute(&self, action: Value, ctx: &ToolCallContext) -> Result<Value, ToolError> {
        let data = match action.get("data") {
            Some(Value::Object(m)) => m.clone(),
            None | Some(Value::Null) => Map::new(),
            Some(_) => {
                return Err(ToolError::InvalidArguments(
                    "MCPToolAction.data must be an object".into(),
                ));
            }
        };
        // Conversation secrets named as `$NAME` / `${NAME}` in the
        // arguments are filled in (as the reference does); the action as
        // recorded keeps the names.
        let secrets = self.secrets.clone();
        let data = match openhands_mcp::expand_references(&Value::Object(data), &move |n: &str| {
            secrets.secret_value(n)
        }) {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let call = self.client.call_tool(&self.tool.name, data);
        tokio::select! {
            r = call => Ok(match r {
                Ok(result) => self.result_observation(result),
                Err(e) => self.error_observation(format!(
                    "Error calling MCP tool {}: {e}",
                    self.tool.name
                )),
            }),
            () = ctx.cancel.cancelled() => Ok(self.error_observation(format!(
                "MCP tool '{}' was interrupted",
                self.tool.name
            ))),
        }
    }

    fn observation_to_llm(&self, observation: &Value) -> Vec<Content> {
        let mut out = Vec::new();
        if observation.get("is_error").and_then(Value::as_bool) == Some(true) {
            out.push(Content::text(ERROR_HEADER));
        }
        out.extend(crate::tool::default_observation_content(observation));
        out
    }

    fn definition(&self) -> ToolDefinition {
        let mut extra = Map::new();
        if let Some(meta) = self.tool.wire.get("_meta").filter(|m| !m.is_null()) {
            extra.insert("meta".into(), meta.clone());
        }
        extra.insert("mcp_tool".into(), self.tool.wire.clone());
        ToolDefinition {
            description: self.description(),
            action_type: ACTION_KIND.into(),
            observation_type: Some(OBSERVATION_KIND.into()),
            annotations: self.tool.annotations.as_ref().map(|_| self.annotations()),
            kind: TOOL_KIND.into(),
            title: self.tool.name.clone(),
            extra,
        }
    }
}

/// The schema the model is offered for an MCP `inputSchema`, simplified
/// as the reference does: `$ref`s into `$defs` resolved (a circular one
/// becomes a plain object), the first non-null `anyOf` branch taken, and
/// only `type`, `description`, `properties`/`required`, `items` and `enum`
/// kept.
pub fn simplify_schema(node: &Value, defs: &Map<String, Value>, visiting: &[&str]) -> Value {
    let node = match node {
        Value::Bool(true) => return json!({}),
        Value::Bool(false) => return json!({"not": {}}),
        Value::Object(o) => o,
        _ => return json!({}),
    };
    if let Some(name) = node
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        && let Some(def) = defs.get(name)
    {
        if visiting.contains(&name) {
            let mut out = Map::new();
            out.insert("type".into(), json!("object"));
            if let Some(d) = def.get("description") {
                out.insert("description".into(), d.clone());
            }
            return Value::Object(out);
        }
        let mut deeper = visiting.to_vec();
        deeper.push(name);
        return simplify_schema(def, defs, &deeper);
    }
    let mut out = Map::new();
    if let Some(t) = node.get("type") {
        out.insert("type".into(), t.clone());
    }
    if let Some(Value::Array(branches)) = node.get("anyOf") {
        let non_null = branches.iter().find(|b| match b {
            Value::Bool(true) => true,
            Value::Object(o) => o.get("type").and_then(Value::as_str) != Some("null"),
            _ => false,
        });
        let chosen = non_null.or_else(|| branches.iter().find(|b| **b == Value::Bool(false)));
        if let Some(Value::Object(o)) = chosen.map(|b| simplify_schema(b, defs, visiting)) {
            out.extend(o);
        }
    }
    if let Some(d) = node.get("description") {
        out.insert("description".into(), d.clone());
    }
    let ty = node.get("type").and_then(Value::as_str);
    if ty == Some("object")
        && let Some(Value::Object(props)) = node.get("properties")
    {
        out.insert("type".into(), json!("object"));
        let props: Map<String, Value> = props
            .iter()
            .map(|(k, v)| (k.clone(), simplify_schema(v, defs, visiting)))
            .collect();
        out.insert("properties".into(), Value::Object(props));
        if let Some(r) = node.get("required") {
            out.insert("required".into(), r.clone());
        }
    }
    if ty == Some("array")
        && let Some(items) = node.get("items")
    {
        out.insert("type".into(), json!("array"));
        out.insert("items".into(), simplify_schema(items, defs, visiting));
    }
    if let Some(e) = node.get("enum") {
        out.insert("enum".into(), e.clone());
    }
    Value::Object(out)
}

#[cfg(test)]
#[path = "mcp_tests.rs"]
mod tests;
