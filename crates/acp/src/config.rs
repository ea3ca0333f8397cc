//! The `ACPAgent` fields (the reference's names and defaults) read from an
//! agent's JSON, with the settings this implementation does not carry out
//! refused by name.

use serde_json::{Map, Value};
use std::time::Duration;

/// The agent `kind` of ACP agents.
pub const ACP_AGENT_KIND: &str = "ACPAgent";
/// The model (and usage id) of the placeholder LLM an ACP agent carries.
pub const ACP_SENTINEL_MODEL: &str = "acp-managed";

/// A field of the agent that is malformed or not supported.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ConfigError {
    /// The field, relative to the agent (`acp_command`, `tools`, ...).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl ConfigError {
    fn new(field: &str, message: impl Into<String>) -> Self {
        Self {
            field: field.to_string(),
            message: message.into(),
        }
    }
}

/// How to run one ACP agent.
#[derive(Debug, Clone, PartialEq)]
pub struct AcpAgentConfig {
    /// The launch command (`acp_command`), at least the program.
    pub command: Vec<String>,
    /// Provider key (`acp_server`), informational.
    pub server: Option<String>,
    /// Extra arguments after the command (`acp_args`).
    pub args: Vec<String>,
    /// Session mode set after `session/new` (`acp_session_mode`; `None`:
    /// the provider's default, none for unknown servers).
    pub session_mode: Option<String>,
    /// Inactivity limit of one prompt (`acp_prompt_timeout`, 1800 s).
    pub prompt_timeout: Duration,
    /// Hard limit of spawn + handshake + session creation
    /// (`acp_startup_timeout`, 90 s).
    pub startup_timeout: Duration,
    /// Model to select (`acp_model`; `None`: the server's default).
    pub model: Option<String>,
    /// Session to resume first (`acp_resume_session_id`).
    pub resume_session_id: Option<String>,
}

impl AcpAgentConfig {
    /// A configuration running `command` with the reference's defaults.
    pub fn new(command: Vec<String>) -> Self {
        Self {
            command,
            server: None,
            args: Vec::new(),
            session_mode: None,
            prompt_timeout: Duration::from_secs(1800),
            startup_timeout: Duration::from_secs(90),
            model: None,
            resume_session_id: None,
        }
    }

    /// Reads the ACP fields of an `ACPAgent`'s JSON and refuses the parts
    /// this implementation does not carry out.
    pub fn from_agent(agent: &Map<String, Value>) -> Result<Self, ConfigError> {
        let command = string_list(agent, "acp_command")?
            .ok_or_else(|| ConfigError::new("acp_command", "Field required"))?;
        if command.first().is_none_or(|p| p.trim().is_empty()) {
            return Err(ConfigError::new(
                "acp_command",
                "must name the program that starts the ACP server",
            ));
        }
        let mut cfg = Self::new(command);
        cfg.server = opt_string(agent, "acp_server")?;
        cfg.args = string_list(agent, "acp_args")?.unwrap_or_default();
        cfg.session_mode = opt_string(agent, "acp_session_mode")?;
        cfg.model = opt_string(agent, "acp_model")?.filter(|m| !m.trim().is_empty());
        cfg.resume_session_id = opt_string(agent, "acp_resume_session_id")?
            .filter(|s| !s.is_empty() && s != "**********");
        if let Some(t) = seconds(agent, "acp_prompt_timeout")? {
            cfg.prompt_timeout = t;
        }
        if let Some(t) = seconds(agent, "acp_startup_timeout")? {
            cfg.startup_timeout = t;
        }
        if agent
            .get("acp_isolate_data_dir")
            .and_then(Value::as_bool)
            .unwrap_or(false)
        {
            return Err(ConfigError::new(
                "acp_isolate_data_dir",
                "a per-conversation ACP data directory is not supported by this server",
            ));
        }
        let file_secrets = agent.get("acp_file_secrets");
        if file_secrets.is_some_and(|v| match v {
            Value::Null => false,
            Value::Object(m) => !m.is_empty(),
            Value::Array(a) => !a.is_empty(),
            _ => true,
        }) {
            return Err(ConfigError::new(
                "acp_file_secrets",
                "writing secrets to files for the ACP server is not supported by this server",
            ));
        }
        if agent
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|t| !t.is_empty())
        {
            return Err(ConfigError::new(
                "tools",
                "ACPAgent does not support custom tools; the ACP server manages its own tools",
            ));
        }
        if agent.get("condenser").is_some_and(|c| !c.is_null()) {
            return Err(ConfigError::new(
                "condenser",
                "ACPAgent does not support condenser; the ACP server manages its own context",
            ));
        }
        Ok(cfg)
    }

    /// The program and its arguments (`acp_command` + `acp_args`).
    pub fn argv(&self) -> Vec<String> {
        self.command.iter().chain(&self.args).cloned().collect()
    }
}

fn opt_string(agent: &Map<String, Value>, field: &str) -> Result<Option<String>, ConfigError> {
    match agent.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ConfigError::new(field, "Input should be a valid string")),
    }
}

fn string_list(
    agent: &Map<String, Value>,
    field: &str,
) -> Result<Option<Vec<String>>, ConfigError> {
    match agent.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| ConfigError::new(field, "Input should be a valid string"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(ConfigError::new(field, "Input should be a valid list")),
    }
}

fn seconds(agent: &Map<String, Value>, field: &str) -> Result<Option<Duration>, ConfigError> {
    match agent.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_f64() {
            Some(s) if s > 0.0 && s.is_finite() => Ok(Some(Duration::from_secs_f64(s))),
            _ => Err(ConfigError::new(
                field,
                "must be a positive number of seconds",
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn reads_the_fields_with_the_reference_defaults() {
        let c = AcpAgentConfig::from_agent(&obj(json!({
            "kind": "ACPAgent", "acp_command": ["python", "peer.py"], "acp_args": ["--x"],
            "acp_model": "m1", "acp_prompt_timeout": 5, "acp_resume_session_id": "**********"
        })))
        .unwrap();
        assert_eq!(c.argv(), ["python", "peer.py", "--x"]);
        assert_eq!(c.model.as_deref(), Some("m1"));
        assert_eq!(c.prompt_timeout, Duration::from_secs(5));
        assert_eq!(c.startup_timeout, Duration::from_secs(90));
        assert_eq!(c.resume_session_id, None);
    }

    #[test]
    fn refuses_missing_commands_and_unsupported_settings_by_name() {
        let field = |v: Value| AcpAgentConfig::from_agent(&obj(v)).unwrap_err().field;
        assert_eq!(field(json!({})), "acp_command");
        assert_eq!(field(json!({"acp_command": []})), "acp_command");
        assert_eq!(field(json!({"acp_command": [1]})), "acp_command");
        assert_eq!(
            field(json!({"acp_command": ["x"], "acp_isolate_data_dir": true})),
            "acp_isolate_data_dir"
        );
        assert_eq!(
            field(json!({"acp_command": ["x"], "tools": [{"name": "terminal"}]})),
            "tools"
        );
        assert_eq!(
            field(json!({"acp_command": ["x"], "acp_file_secrets": {"~/.key": "K"}})),
            "acp_file_secrets"
        );
        assert!(
            AcpAgentConfig::from_agent(&obj(json!({"acp_command": ["x"], "acp_file_secrets": {}})))
                .is_ok()
        );
        assert_eq!(
            field(json!({"acp_command": ["x"], "acp_prompt_timeout": -1})),
            "acp_prompt_timeout"
        );
    }
}
