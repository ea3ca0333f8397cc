//! `hook_config` in the reference's format: per event type a list of
//! matchers, each with the hooks it runs. Accepted spellings: snake_case
//! keys (`pre_tool_use`), PascalCase keys (`PreToolUse`), and both wrapped
//! in `{"hooks": {...}}` (the `.openhands/hooks.json` / Claude Code layout).

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The moments hooks run at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEventType {
    /// Before a tool runs; may block it.
    PreToolUse,
    /// After a tool ran.
    PostToolUse,
    /// When the user sends a message; may block it or add context.
    UserPromptSubmit,
    /// When the conversation starts.
    SessionStart,
    /// When the conversation is closed.
    SessionEnd,
    /// When the agent is about to finish; may send it back to work.
    Stop,
}

impl HookEventType {
    /// All types, in the reference's order.
    pub const ALL: [HookEventType; 6] = [
        Self::PreToolUse,
        Self::PostToolUse,
        Self::UserPromptSubmit,
        Self::SessionStart,
        Self::SessionEnd,
        Self::Stop,
    ];

    /// Wire name (`PreToolUse`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::SessionStart => "SessionStart",
            Self::SessionEnd => "SessionEnd",
            Self::Stop => "Stop",
        }
    }

    /// Field name in the configuration (`pre_tool_use`).
    pub fn field(self) -> &'static str {
        match self {
            Self::PreToolUse => "pre_tool_use",
            Self::PostToolUse => "post_tool_use",
            Self::UserPromptSubmit => "user_prompt_submit",
            Self::SessionStart => "session_start",
            Self::SessionEnd => "session_end",
            Self::Stop => "stop",
        }
    }
}

fn d_type() -> String {
    "command".into()
}
fn d_timeout() -> u64 {
    60
}
fn d_iterations() -> u64 {
    3
}
fn d_matcher() -> String {
    "*".into()
}

/// One hook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookDefinition {
    /// `command`, `prompt` or `agent`.
    #[serde(default = "d_type")]
    pub r#type: String,
    /// Optional label.
    #[serde(default)]
    pub name: Option<String>,
    /// Shell command (run with `sh -c` in the workspace).
    #[serde(default)]
    pub command: String,
    /// Policy text of a prompt hook.
    #[serde(default)]
    pub prompt: Option<String>,
    /// System prompt of an agent hook.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Tools of an agent hook.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Seconds before the hook's process group is stopped.
    #[serde(default = "d_timeout")]
    pub timeout: u64,
    /// Iterations of an agent hook.
    #[serde(default = "d_iterations")]
    pub max_iterations: u64,
    /// Run in the background without waiting.
    #[serde(default, rename = "async", alias = "async_")]
    pub is_async: bool,
}

impl HookDefinition {
    /// The label of the hook in events: its command, else
    /// `<type>-hook:<name or the policy's first 20 characters>`.
    pub fn display_command(&self) -> String {
        if !self.command.is_empty() {
            return self.command.clone();
        }
        let prefix = format!("{}-hook", self.r#type);
        if let Some(n) = &self.name {
            return format!("{prefix}:{n}");
        }
        let text = match self.r#type.as_str() {
            "prompt" => self.prompt.as_deref(),
            "agent" => self.system_prompt.as_deref(),
            _ => None,
        }
        .filter(|t| !t.is_empty());
        match text {
            Some(t) => format!("{prefix}:{}", t.chars().take(20).collect::<String>()),
            None => format!("{prefix}:{}", self.r#type),
        }
    }
}

/// Hooks for the tools a pattern matches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookMatcher {
    /// `*` or empty (everything), an exact tool name, a regex (with regex
    /// metacharacters, or between slashes), matched against the whole name.
    #[serde(default = "d_matcher")]
    pub matcher: String,
    /// Hooks run in order.
    #[serde(default)]
    pub hooks: Vec<HookDefinition>,
}

impl HookMatcher {
    /// Whether this matcher applies to `tool_name` (events without a tool
    /// only match `*` and the empty pattern).
    pub fn matches(&self, tool_name: Option<&str>) -> bool {
        let m = self.matcher.as_str();
        if m == "*" || m.is_empty() {
            return true;
        }
        let Some(tool) = tool_name else {
            return false;
        };
        let full = |p: &str| {
            Regex::new(&format!("^(?:{p})$"))
                .ok()
                .map(|r| r.is_match(tool))
        };
        if m.len() > 2 && m.starts_with('/') && m.ends_with('/') {
            return full(&m[1..m.len() - 1]).unwrap_or(false);
        }
        if m.chars().any(|c| "|.*+?[]()^$\\".contains(c))
            && let Some(hit) = full(m)
        {
            return hit;
        }
        m == tool
    }
}

/// Every configured hook.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookConfig {
    /// Before tools run.
    #[serde(default)]
    pub pre_tool_use: Vec<HookMatcher>,
    /// After tools ran.
    #[serde(default)]
    pub post_tool_use: Vec<HookMatcher>,
    /// When the user sends a message.
    #[serde(default)]
    pub user_prompt_submit: Vec<HookMatcher>,
    /// When the conversation starts.
    #[serde(default)]
    pub session_start: Vec<HookMatcher>,
    /// When the conversation is closed.
    #[serde(default)]
    pub session_end: Vec<HookMatcher>,
    /// When the agent is about to finish.
    #[serde(default)]
    pub stop: Vec<HookMatcher>,
}

/// A configuration that cannot be used; the message names the culprit.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct HookConfigError(pub String);

fn pascal_to_snake(key: &str) -> String {
    let mut out = String::new();
    for (i, c) in key.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

impl HookConfig {
    /// Parses a configuration value (`null` = no hooks) and refuses what
    /// this implementation cannot run.
    pub fn from_value(value: &Value) -> Result<Self, HookConfigError> {
        let config = Self::parse(value)?;
        config.validate()?;
        Ok(config)
    }

    /// Parses a configuration value (`null` = no hooks) without checking
    /// that every hook can run here.
    pub fn parse(value: &Value) -> Result<Self, HookConfigError> {
        let obj = match value {
            Value::Null => return Ok(Self::default()),
            Value::Object(o) => o,
            other => {
                return Err(HookConfigError(format!(
                    "hook_config must be an object, got {other}"
                )));
            }
        };
        let obj = match obj.get("hooks") {
            Some(Value::Object(inner)) => inner,
            _ => obj,
        };
        let mut normalized = Map::new();
        for (key, v) in obj {
            let snake = pascal_to_snake(key);
            if !HookEventType::ALL.iter().any(|t| t.field() == snake) {
                let valid: Vec<&str> = HookEventType::ALL.iter().map(|t| t.field()).collect();
                return Err(HookConfigError(format!(
                    "Unknown hook event type '{key}'. Valid types: {}",
                    valid.join(", ")
                )));
            }
            if normalized.insert(snake.clone(), v.clone()).is_some() {
                return Err(HookConfigError(format!(
                    "Duplicate hook event: both '{key}' and '{snake}' were provided"
                )));
            }
        }
        serde_json::from_value(Value::Object(normalized))
            .map_err(|e| HookConfigError(format!("invalid hook_config: {e}")))
    }

    /// The project hooks of `project_dir` (`.openhands/hooks.json`): `None`
    /// when absent, empty or unreadable (logged).
    pub fn load_project(project_dir: &std::path::Path) -> Option<Self> {
        let path = project_dir.join(".openhands").join("hooks.json");
        let text = std::fs::read_to_string(&path).ok()?;
        let parsed = serde_json::from_str::<Value>(&text)
            .map_err(|e| HookConfigError(e.to_string()))
            .and_then(|v| Self::parse(&v));
        match parsed {
            Ok(c) if !c.is_empty() => Some(c),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "hooks.json not loaded");
                None
            }
        }
    }

    /// Refuses what cannot run, with the reference's messages: a command
    /// hook without command, a prompt hook without prompt, a command on a
    /// prompt or agent hook, `async` on anything but a command hook.
    fn validate(&self) -> Result<(), HookConfigError> {
        for t in HookEventType::ALL {
            for m in self.matchers(t) {
                for h in &m.hooks {
                    let at = format!("hook_config.{}[matcher={}]", t.field(), m.matcher);
                    match h.r#type.as_str() {
                        "command" if h.command.trim().is_empty() => {
                            return Err(HookConfigError(format!(
                                "{at}: 'command' is required when type is 'command'"
                            )));
                        }
                        "command" => {}
                        "prompt" if h.prompt.as_deref().is_none_or(str::is_empty) => {
                            return Err(HookConfigError(format!(
                                "{at}: 'prompt' is required when type is 'prompt'"
                            )));
                        }
                        "prompt" if !h.command.is_empty() => {
                            return Err(HookConfigError(format!(
                                "{at}: 'command' must not be set when type is 'prompt'"
                            )));
                        }
                        "prompt" if h.is_async => {
                            return Err(HookConfigError(format!(
                                "{at}: 'async' is not supported for prompt hooks"
                            )));
                        }
                        "prompt" => {}
                        "agent" if !h.command.is_empty() => {
                            return Err(HookConfigError(format!(
                                "{at}: 'command' must not be set when type is 'agent'; use 'system_prompt' instead"
                            )));
                        }
                        "agent" if h.is_async => {
                            return Err(HookConfigError(format!(
                                "{at}: 'async' is not supported for agent hooks"
                            )));
                        }
                        "agent" => {}
                        other => {
                            return Err(HookConfigError(format!(
                                "{at}: unknown hook type '{other}'"
                            )));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The matchers of one event type.
    pub fn matchers(&self, t: HookEventType) -> &[HookMatcher] {
        match t {
            HookEventType::PreToolUse => &self.pre_tool_use,
            HookEventType::PostToolUse => &self.post_tool_use,
            HookEventType::UserPromptSubmit => &self.user_prompt_submit,
            HookEventType::SessionStart => &self.session_start,
            HookEventType::SessionEnd => &self.session_end,
            HookEventType::Stop => &self.stop,
        }
    }

    /// The hooks to run for `t` (and `tool_name`), in order.
    pub fn hooks_for(&self, t: HookEventType, tool_name: Option<&str>) -> Vec<&HookDefinition> {
        self.matchers(t)
            .iter()
            .filter(|m| m.matches(tool_name))
            .flat_map(|m| m.hooks.iter())
            .collect()
    }

    /// The configurations concatenated per event, in order (`None` when
    /// nothing is configured).
    pub fn merge(configs: impl IntoIterator<Item = HookConfig>) -> Option<HookConfig> {
        let mut out = HookConfig::default();
        for c in configs {
            out.pre_tool_use.extend(c.pre_tool_use);
            out.post_tool_use.extend(c.post_tool_use);
            out.user_prompt_submit.extend(c.user_prompt_submit);
            out.session_start.extend(c.session_start);
            out.session_end.extend(c.session_end);
            out.stop.extend(c.stop);
        }
        (!out.is_empty()).then_some(out)
    }

    /// Whether nothing is configured.
    pub fn is_empty(&self) -> bool {
        HookEventType::ALL
            .iter()
            .all(|t| self.matchers(*t).is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepts_the_reference_spellings() {
        let pascal = json!({"hooks": {"PreToolUse": [{"matcher": "terminal", "hooks": [{"command": "a.sh", "timeout": 5}]}]}});
        let c = HookConfig::from_value(&pascal).unwrap();
        assert_eq!(c.pre_tool_use[0].hooks[0].timeout, 5);
        let snake = json!({"stop": [{"hooks": [{"type": "command", "command": "b"}]}]});
        let c = HookConfig::from_value(&snake).unwrap();
        assert_eq!(c.hooks_for(HookEventType::Stop, None).len(), 1);
        assert!(HookConfig::from_value(&Value::Null).unwrap().is_empty());
    }

    #[test]
    fn refuses_unknown_events_and_unsupported_kinds() {
        let e = HookConfig::from_value(&json!({"BeforeThing": []})).unwrap_err();
        assert!(e.0.contains("BeforeThing"));
        assert!(
            HookConfig::from_value(
                &json!({"pre_tool_use": [{"hooks": [{"type": "prompt", "prompt": "x"}]}]})
            )
            .is_ok()
        );
        let e = HookConfig::from_value(&json!({"pre_tool_use": [{"hooks": [{"type": "prompt"}]}]}))
            .unwrap_err();
        assert!(e.0.contains("'prompt' is required"), "{e}");
        assert!(
            HookConfig::from_value(
                &json!({"pre_tool_use": [{"hooks": [{"type": "agent", "system_prompt": "x"}]}]}),
            )
            .is_ok()
        );
        let e = HookConfig::from_value(
            &json!({"pre_tool_use": [{"hooks": [{"type": "agent", "command": "x"}]}]}),
        )
        .unwrap_err();
        assert!(e.0.contains("use 'system_prompt' instead"), "{e}");
        let e = HookConfig::from_value(
            &json!({"pre_tool_use": [{"hooks": [{"type": "agent", "async": true}]}]}),
        )
        .unwrap_err();
        assert!(
            e.0.contains("'async' is not supported for agent hooks"),
            "{e}"
        );
        assert!(HookConfig::from_value(&json!({"stop": [{"hooks": [{"command": ""}]}]})).is_err());
        assert!(
            HookConfig::from_value(
                &json!({"stop": [{"hooks": [{"command": "x", "async": true}]}]})
            )
            .is_ok()
        );
    }

    #[test]
    fn matcher_rules() {
        let m = |p: &str| HookMatcher {
            matcher: p.into(),
            hooks: vec![],
        };
        assert!(m("*").matches(Some("terminal")) && m("").matches(None));
        assert!(
            m("terminal").matches(Some("terminal")) && !m("terminal").matches(Some("terminal2"))
        );
        assert!(m("term.*").matches(Some("terminal")) && !m("term.*").matches(Some("xterminal")));
        assert!(m("/file_.*|terminal/").matches(Some("terminal")));
        assert!(!m("terminal").matches(None));
    }
}
