//! Wire types of the terminal tool: `TerminalAction`, `TerminalObservation`
//! and its `CmdOutputMetadata`, with the reference's field names and
//! defaults.

use openhands_wire::content::Content;
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

/// `kind` of the tool definition.
pub const TOOL_KIND: &str = "TerminalTool";
/// `kind` of actions.
pub const ACTION_KIND: &str = "TerminalAction";
/// `kind` of observations.
pub const OBSERVATION_KIND: &str = "TerminalObservation";

/// A command for the terminal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TerminalAction {
    /// The shell command; with `is_input`, text or a key name for the
    /// running program; empty to fetch more output of a running command.
    pub command: String,
    /// Send `command` to the running program instead of the shell.
    #[serde(default, deserialize_with = "lenient_bool")]
    pub is_input: bool,
    /// Seconds to wait before returning while the command keeps running.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_timeout"
    )]
    pub timeout: Option<f64>,
    /// Kill the session and start a new one.
    #[serde(default, deserialize_with = "lenient_bool")]
    pub reset: bool,
}

impl TerminalAction {
    /// A plain command.
    pub fn command(command: impl Into<String>) -> Self {
        Self {
            command: command.into(),
            is_input: false,
            timeout: None,
            reset: false,
        }
    }

    /// Input (text or a key name) for the running program.
    pub fn input(text: impl Into<String>) -> Self {
        Self {
            is_input: true,
            ..Self::command(text)
        }
    }

    /// The same action with a timeout in seconds.
    pub fn with_timeout(mut self, seconds: f64) -> Self {
        self.timeout = Some(seconds);
        self
    }
}

/// Metadata the shell reported with the prompt after a command
/// (`CmdOutputMetadata`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CmdOutputMetadata {
    /// Exit code of the last command; `-1` while it is still running.
    #[serde(default = "minus_one")]
    pub exit_code: i64,
    /// PID of the last background job (`$!`), `-1` when none.
    #[serde(default = "minus_one")]
    pub pid: i64,
    /// The user the shell runs as.
    #[serde(default)]
    pub username: Option<String>,
    /// The machine's host name.
    #[serde(default)]
    pub hostname: Option<String>,
    /// The shell's working directory after the command.
    #[serde(default)]
    pub working_dir: Option<String>,
    /// The Python interpreter found on `PATH`.
    #[serde(default)]
    pub py_interpreter_path: Option<String>,
    /// Text shown before the output.
    #[serde(default)]
    pub prefix: String,
    /// Text shown after the output.
    #[serde(default)]
    pub suffix: String,
}

impl Default for CmdOutputMetadata {
    fn default() -> Self {
        Self {
            exit_code: -1,
            pid: -1,
            username: None,
            hostname: None,
            working_dir: None,
            py_interpreter_path: None,
            prefix: String::new(),
            suffix: String::new(),
        }
    }
}

/// The result of a terminal action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TerminalObservation {
    /// The output (one text part).
    #[serde(default)]
    pub content: Vec<Content>,
    /// Whether the action failed (e.g. input with no running command).
    #[serde(default)]
    pub is_error: bool,
    /// The command or input this observation answers.
    #[serde(default)]
    pub command: Option<String>,
    /// Exit code; `-1` while the command is still running.
    #[serde(default)]
    pub exit_code: Option<i64>,
    /// The wait ended because of a timeout (the command keeps running).
    #[serde(default)]
    pub timeout: bool,
    /// Shell metadata.
    #[serde(default)]
    pub metadata: CmdOutputMetadata,
    /// Directory holding the full output when it was truncated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_output_save_dir: Option<String>,
}

impl TerminalObservation {
    /// The concatenated text parts of `content`.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(Content::as_text)
            .collect::<Vec<_>>()
            .join("")
    }
}

fn minus_one() -> i64 {
    -1
}

/// Accepts `true`/`false`, `"true"`/`"false"` (any case), `0`/`1` and null.
fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    match &v {
        serde_json::Value::Bool(b) => Ok(*b),
        serde_json::Value::Null => Ok(false),
        serde_json::Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => Ok(true),
            "false" | "0" | "no" | "" => Ok(false),
            _ => Err(de::Error::custom(format!("expected a boolean, got {v}"))),
        },
        serde_json::Value::Number(n) if n.as_f64() == Some(0.0) => Ok(false),
        serde_json::Value::Number(n) if n.as_f64() == Some(1.0) => Ok(true),
        _ => Err(de::Error::custom(format!("expected a boolean, got {v}"))),
    }
}

/// Accepts a non-negative number, a numeric string, or null.
fn lenient_timeout<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    let n = match &v {
        serde_json::Value::Null => return Ok(None),
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) if s.trim().is_empty() => return Ok(None),
        serde_json::Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match n {
        Some(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
        Some(_) => Err(de::Error::custom(format!(
            "timeout must be a number of seconds >= 0, got {v}"
        ))),
        None => Err(de::Error::custom(format!(
            "timeout must be a number of seconds, got {v}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn action_defaults_and_serialization() {
        let a: TerminalAction = serde_json::from_value(json!({"command": "ls"})).unwrap();
        assert_eq!(a, TerminalAction::command("ls"));
        assert_eq!(
            serde_json::to_value(&a).unwrap(),
            json!({"command": "ls", "is_input": false, "reset": false})
        );
        let t = TerminalAction::command("x").with_timeout(2.5);
        assert_eq!(serde_json::to_value(&t).unwrap()["timeout"], json!(2.5));
    }

    #[test]
    fn action_is_lenient_with_model_types() {
        let a: TerminalAction = serde_json::from_value(
            json!({"command": "C-c", "is_input": "true", "timeout": "3", "reset": null}),
        )
        .unwrap();
        assert!(a.is_input);
        assert_eq!(a.timeout, Some(3.0));
        assert!(!a.reset);
    }

    #[test]
    fn action_rejects_bad_values() {
        for bad in [
            json!({"command": "x", "timeout": -1}),
            json!({"command": "x", "timeout": "soon"}),
            json!({"command": "x", "is_input": "maybe"}),
            json!({"command": "x", "extra": 1}),
            json!({"is_input": true}),
        ] {
            assert!(
                serde_json::from_value::<TerminalAction>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn observation_shape_matches_reference() {
        let obs = TerminalObservation {
            content: vec![Content::text("")],
            is_error: false,
            command: Some("echo hi > x.txt".into()),
            exit_code: Some(0),
            timeout: false,
            metadata: CmdOutputMetadata {
                exit_code: 0,
                username: Some("root".into()),
                hostname: Some("vm".into()),
                working_dir: Some("/tmp/w".into()),
                py_interpreter_path: Some("/usr/bin/python".into()),
                suffix: "\n[The command completed with exit code 0.]".into(),
                ..Default::default()
            },
            full_output_save_dir: None,
        };
        let v = serde_json::to_value(&obs).unwrap();
        assert_eq!(
            v,
            json!({
                "content": [{"cache_prompt": false, "type": "text", "text": ""}],
                "is_error": false,
                "command": "echo hi > x.txt",
                "exit_code": 0,
                "timeout": false,
                "metadata": {
                    "exit_code": 0, "pid": -1, "username": "root", "hostname": "vm",
                    "working_dir": "/tmp/w", "py_interpreter_path": "/usr/bin/python",
                    "prefix": "", "suffix": "\n[The command completed with exit code 0.]"
                }
            })
        );
        let back: TerminalObservation = serde_json::from_value(v).unwrap();
        assert_eq!(back, obs);
        let empty: TerminalObservation = serde_json::from_value(json!({})).unwrap();
        assert_eq!(empty.metadata, CmdOutputMetadata::default());
    }
}
