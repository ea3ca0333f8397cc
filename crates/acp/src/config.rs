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

/// One `ACPFileSecretSpec`: the conversation secret `secret_name` holds a
/// credential file's contents, written to `<acp root>/<subdir>/<filename>`
/// before the server starts; `env_var` then names the directory
/// (`env_points_to_dir`) or the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSecretSpec {
    /// Reserved secret name.
    pub secret_name: String,
    /// Bare basename of the written file.
    pub filename: String,
    /// Variable the server reads to find it.
    pub env_var: String,
    /// Relative folder under the conversation's `acp/` directory.
    pub subdir: String,
    /// `env_points_to: "dir"` (else `"file"`).
    pub env_points_to_dir: bool,
    /// Companion variables warned about when unset.
    pub warn_if_unset: Vec<String>,
}

impl FileSecretSpec {
    /// The spec as the reference serializes it.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "secret_name": self.secret_name,
            "filename": self.filename,
            "env_var": self.env_var,
            "subdir": self.subdir,
            "env_points_to": if self.env_points_to_dir { "dir" } else { "file" },
            "warn_if_unset": self.warn_if_unset,
        })
    }
}

/// Fills the `ACPAgent` fields `agent` leaves out (or sets to null where
/// null means the default) with the reference's defaults, so the stored
/// and returned agent JSON reads as the reference's does: `acp_server`,
/// `acp_session_mode`, `acp_model`, `acp_resume_session_id` null,
/// `acp_args` empty, the timeouts 1800 and 90 seconds, the built-in
/// `acp_file_secrets`, `acp_isolate_data_dir` false.
pub fn fill_defaults(agent: &mut Map<String, Value>) {
    let defaults = AcpAgentConfig::new(Vec::new());
    let file_secrets = defaults
        .file_secrets
        .iter()
        .map(FileSecretSpec::to_json)
        .collect::<Vec<_>>();
    let nullable = [
        "acp_server",
        "acp_session_mode",
        "acp_model",
        "acp_resume_session_id",
    ];
    for key in nullable {
        agent.entry(key).or_insert(Value::Null);
    }
    let valued = [
        ("acp_args", Value::Array(Vec::new())),
        (
            "acp_prompt_timeout",
            serde_json::json!(defaults.prompt_timeout.as_secs_f64()),
        ),
        (
            "acp_startup_timeout",
            serde_json::json!(defaults.startup_timeout.as_secs_f64()),
        ),
        ("acp_file_secrets", Value::Array(file_secrets)),
        (
            "acp_isolate_data_dir",
            Value::Bool(defaults.isolate_data_dir),
        ),
    ];
    for (key, value) in valued {
        let slot = agent.entry(key).or_insert(Value::Null);
        if slot.is_null() {
            *slot = value;
        }
    }
}

/// The fields an `agent_kind: "acp"` settings block hands on to its
/// `ACPAgent` besides the command.
pub const SETTINGS_FIELDS: &[&str] = &[
    "acp_args",
    "acp_model",
    "acp_session_mode",
    "acp_prompt_timeout",
    "acp_startup_timeout",
    "acp_isolate_data_dir",
    "acp_file_secrets",
    "mcp_config",
    "agent_context",
];

/// The `ACPAgent` JSON an `agent_kind: "acp"` settings block describes
/// (the reference's `ACPAgentSettings.create_agent`): `kind`, `acp_server`
/// (default `claude-code`), `acp_command` (a list, or a command line split
/// on whitespace; else the provider's default command) and the
/// [`SETTINGS_FIELDS`] that are set. The result is not checked further:
/// [`AcpAgentConfig::from_agent`] does that. The error names
/// `acp_command` when there is no command to run.
pub fn agent_from_settings(
    settings: &Map<String, Value>,
) -> Result<Map<String, Value>, ConfigError> {
    let mut agent = Map::new();
    agent.insert("kind".into(), Value::String(ACP_AGENT_KIND.into()));
    let server = settings
        .get("acp_server")
        .and_then(Value::as_str)
        .unwrap_or("claude-code")
        .to_string();
    let command = match settings.get("acp_command") {
        Some(Value::Array(c)) if !c.is_empty() => Value::Array(c.clone()),
        Some(Value::String(c)) if !c.trim().is_empty() => Value::Array(
            c.split_whitespace()
                .map(|w| Value::String(w.to_string()))
                .collect(),
        ),
        _ => match crate::providers::by_key(&server) {
            Some(p) => Value::Array(
                p.default_command
                    .iter()
                    .map(|w| Value::String(w.to_string()))
                    .collect(),
            ),
            None if server == "custom" => {
                return Err(ConfigError::new(
                    "acp_command",
                    "ACPAgentSettings.acp_command must be set when acp_server='custom' — there is no default to fall back to",
                ));
            }
            None => {
                return Err(ConfigError::new(
                    "acp_command",
                    format!("No default ACP command for acp_server='{server}'"),
                ));
            }
        },
    };
    agent.insert("acp_command".into(), command);
    agent.insert("acp_server".into(), Value::String(server));
    for key in SETTINGS_FIELDS {
        if let Some(v) = settings.get(*key).filter(|v| !v.is_null()) {
            agent.insert((*key).into(), v.clone());
        }
    }
    Ok(agent)
}

impl From<&crate::providers::BuiltinFileSecret> for FileSecretSpec {
    fn from(b: &crate::providers::BuiltinFileSecret) -> Self {
        Self {
            secret_name: b.secret_name.into(),
            filename: b.filename.into(),
            env_var: b.env_var.into(),
            subdir: b.subdir.into(),
            env_points_to_dir: b.env_points_to_dir,
            warn_if_unset: b.warn_if_unset.iter().map(|s| s.to_string()).collect(),
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
    /// Credential files to write before starting (`acp_file_secrets`;
    /// default: every known provider's).
    pub file_secrets: Vec<FileSecretSpec>,
    /// Give the server a per-conversation data directory
    /// (`acp_isolate_data_dir`).
    pub isolate_data_dir: bool,
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
            file_secrets: crate::providers::default_file_secrets()
                .map(FileSecretSpec::from)
                .collect(),
            isolate_data_dir: false,
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
        match agent.get("acp_isolate_data_dir") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(b)) => cfg.isolate_data_dir = *b,
            Some(_) => {
                return Err(ConfigError::new(
                    "acp_isolate_data_dir",
                    "Input should be a valid boolean",
                ));
            }
        }
        if let Some(v) = agent.get("acp_file_secrets").filter(|v| !v.is_null()) {
            cfg.file_secrets = file_secrets(v)?;
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

/// `acp_file_secrets`: a list of specs validated as the reference does
/// (bare `filename`, relative `subdir` without `.`/`..`).
fn file_secrets(v: &Value) -> Result<Vec<FileSecretSpec>, ConfigError> {
    const FIELD: &str = "acp_file_secrets";
    let items = v
        .as_array()
        .ok_or_else(|| ConfigError::new(FIELD, "Input should be a valid list"))?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let err = |m: &str| ConfigError::new(FIELD, format!("item {i}: {m}"));
            let obj = item
                .as_object()
                .ok_or_else(|| err("Input should be a valid dictionary"))?;
            let text = |k: &str| -> Result<String, ConfigError> {
                match obj.get(k) {
                    Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
                    Some(Value::String(_)) => Err(err(&format!(
                        "{k}: String should have at least 1 character"
                    ))),
                    None => Err(err(&format!("{k}: Field required"))),
                    Some(_) => Err(err(&format!("{k}: Input should be a valid string"))),
                }
            };
            let filename = text("filename")?;
            if filename.contains('/')
                || filename.contains('\\')
                || filename == "."
                || filename == ".."
            {
                return Err(err("filename must be a bare basename, not a path"));
            }
            let subdir = text("subdir")?;
            let parts: Vec<&str> = subdir.split('/').collect();
            if subdir.starts_with('/') || parts.contains(&"..") || matches!(subdir.trim(), "" | ".")
            {
                return Err(err(
                    "subdir must be a non-empty relative path without '.'/'..' segments",
                ));
            }
            let env_points_to_dir = match obj.get("env_points_to") {
                None | Some(Value::Null) => false,
                Some(Value::String(s)) if s == "file" => false,
                Some(Value::String(s)) if s == "dir" => true,
                Some(_) => return Err(err("env_points_to: Input should be 'dir' or 'file'")),
            };
            let warn_if_unset = match obj.get("warn_if_unset") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|x| x.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| err("warn_if_unset: Input should be a valid string"))?,
                Some(_) => return Err(err("warn_if_unset: Input should be a valid tuple")),
            };
            Ok(FileSecretSpec {
                secret_name: text("secret_name")?,
                filename,
                env_var: text("env_var")?,
                subdir,
                env_points_to_dir,
                warn_if_unset,
            })
        })
        .collect()
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
    fn settings_become_the_agent_with_the_providers_command() {
        let a = agent_from_settings(&obj(json!({
            "agent_kind": "acp", "acp_server": "claude-code", "acp_model": "m",
            "llm": {"model": "ignored"}, "acp_args": null
        })))
        .unwrap();
        assert_eq!(a["kind"], "ACPAgent");
        assert_eq!(
            a["acp_command"],
            json!(
                crate::providers::by_key("claude-code")
                    .unwrap()
                    .default_command
            )
        );
        assert_eq!(a["acp_model"], "m");
        assert!(a.get("llm").is_none() && a.get("acp_args").is_none());
        let a = agent_from_settings(&obj(
            json!({"acp_server": "custom", "acp_command": "py  peer.py"}),
        ))
        .unwrap();
        assert_eq!(a["acp_command"], json!(["py", "peer.py"]));
        let e = agent_from_settings(&obj(json!({"acp_server": "custom"}))).unwrap_err();
        assert_eq!(e.field, "acp_command");
        assert!(e.message.contains("acp_server='custom'"), "{e}");
        let e = agent_from_settings(&obj(json!({"acp_server": "nope"}))).unwrap_err();
        assert!(e.message.contains("No default ACP command"), "{e}");
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
        assert_eq!(c.file_secrets.len(), 4, "the built-in specs by default");
        assert!(!c.isolate_data_dir);
        let c = AcpAgentConfig::from_agent(&obj(json!({
            "acp_command": ["x"], "acp_isolate_data_dir": true,
            "acp_file_secrets": [{"secret_name": "TOKEN_FILE", "filename": "token",
                "env_var": "TOKEN_DIR", "subdir": "custom/one", "env_points_to": "dir"}]
        })))
        .unwrap();
        assert!(c.isolate_data_dir);
        assert_eq!(c.file_secrets.len(), 1);
        assert!(c.file_secrets[0].env_points_to_dir);
        assert_eq!(c.file_secrets[0].subdir, "custom/one");
    }

    #[test]
    fn refuses_missing_commands_and_unsupported_settings_by_name() {
        let field = |v: Value| AcpAgentConfig::from_agent(&obj(v)).unwrap_err().field;
        assert_eq!(field(json!({})), "acp_command");
        assert_eq!(field(json!({"acp_command": []})), "acp_command");
        assert_eq!(field(json!({"acp_command": [1]})), "acp_command");
        assert_eq!(
            field(json!({"acp_command": ["x"], "acp_isolate_data_dir": "yes"})),
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
        let spec = |filename: &str, subdir: &str| {
            json!({"acp_command": ["x"], "acp_file_secrets": [{"secret_name": "S",
                "filename": filename, "env_var": "V", "subdir": subdir}]})
        };
        assert_eq!(field(spec("../x", "s")), "acp_file_secrets");
        assert_eq!(field(spec("x", "../s")), "acp_file_secrets");
        assert_eq!(field(spec("x", ".")), "acp_file_secrets");
        assert_eq!(field(spec("x", "/abs")), "acp_file_secrets");
        assert_eq!(
            field(json!({"acp_command": ["x"], "acp_prompt_timeout": -1})),
            "acp_prompt_timeout"
        );
    }

    #[test]
    fn stored_defaults_read_as_the_references() {
        let mut agent =
            json!({"kind": "ACPAgent", "acp_command": ["cat"], "acp_model": "m", "acp_args": null})
                .as_object()
                .unwrap()
                .clone();
        fill_defaults(&mut agent);
        assert_eq!(agent["acp_model"], "m");
        assert_eq!(agent["acp_server"], Value::Null);
        assert_eq!(agent["acp_resume_session_id"], Value::Null);
        assert_eq!(agent["acp_args"], json!([]));
        assert_eq!(agent["acp_prompt_timeout"], json!(1800.0));
        assert_eq!(agent["acp_startup_timeout"], json!(90.0));
        assert_eq!(agent["acp_isolate_data_dir"], false);
        // What the reference 1.58.2 stores for the first built-in spec.
        assert_eq!(
            agent["acp_file_secrets"][0],
            json!({"secret_name": "CODEX_AUTH_JSON", "filename": "auth.json", "env_var": "CODEX_HOME",
                   "subdir": "codex", "env_points_to": "dir", "warn_if_unset": []})
        );
        assert_eq!(agent["acp_file_secrets"].as_array().unwrap().len(), 4);
        // The filled agent reads back as the same configuration.
        let cfg = AcpAgentConfig::from_agent(&agent).unwrap();
        assert_eq!(
            cfg.file_secrets,
            AcpAgentConfig::new(vec!["cat".into()]).file_secrets
        );
    }
}
