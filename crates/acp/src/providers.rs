//! The reference's known ACP servers: default launch command, the session
//! mode that disables permission prompts, how the runtime agent name
//! identifies them, and whether they switch models live.

/// One known ACP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Provider {
    /// Registry key (`acp_server`).
    pub key: &'static str,
    /// Default launch command.
    pub default_command: &'static [&'static str],
    /// Session mode set after `session/new` (`None`: no call).
    pub default_session_mode: Option<&'static str>,
    /// Lowercase fragments of the `agentInfo.name` it reports.
    pub agent_name_patterns: &'static [&'static str],
    /// Whether a model can be switched in a live session.
    pub supports_runtime_model_switch: bool,
}

/// Every known provider, in the reference's order.
pub const PROVIDERS: &[Provider] = &[
    Provider {
        key: "claude-code",
        default_command: &[
            "npx",
            "-y",
            "--prefer-offline",
            "@agentclientprotocol/claude-agent-acp@0.63.0",
        ],
        default_session_mode: Some("bypassPermissions"),
        agent_name_patterns: &["claude-agent"],
        supports_runtime_model_switch: true,
    },
    Provider {
        key: "codex",
        default_command: &[
            "npx",
            "-y",
            "--prefer-offline",
            "@agentclientprotocol/codex-acp@1.10.0",
        ],
        default_session_mode: Some("agent-full-access"),
        agent_name_patterns: &["codex-acp"],
        supports_runtime_model_switch: true,
    },
    Provider {
        key: "gemini-cli",
        default_command: &[
            "npx",
            "-y",
            "--prefer-offline",
            "@google/gemini-cli@0.46.0",
            "--acp",
        ],
        default_session_mode: Some("default"),
        agent_name_patterns: &["gemini-cli"],
        supports_runtime_model_switch: true,
    },
    Provider {
        key: "kimi-code",
        default_command: &[
            "npx",
            "-y",
            "--prefer-offline",
            "@moonshot-ai/kimi-code@0.38.0",
            "acp",
        ],
        default_session_mode: Some("yolo"),
        agent_name_patterns: &["kimi"],
        supports_runtime_model_switch: true,
    },
    Provider {
        key: "pi",
        default_command: &[
            "npx",
            "-y",
            "--prefer-offline",
            "--package=pi-acp@0.0.33",
            "--package=@earendil-works/pi-coding-agent@0.83.0",
            "pi-acp",
        ],
        default_session_mode: None,
        agent_name_patterns: &["pi-acp"],
        supports_runtime_model_switch: true,
    },
    Provider {
        key: "opencode",
        default_command: &[
            "npx",
            "-y",
            "--prefer-offline",
            "opencode-ai@1.18.23",
            "acp",
        ],
        default_session_mode: Some("build"),
        agent_name_patterns: &["opencode"],
        supports_runtime_model_switch: true,
    },
];

/// The provider registered under `key`.
pub fn by_key(key: &str) -> Option<&'static Provider> {
    PROVIDERS.iter().find(|p| p.key == key)
}

/// The provider whose name pattern occurs in the runtime agent name.
pub fn by_agent_name(agent_name: &str) -> Option<&'static Provider> {
    let lower = agent_name.to_lowercase();
    if lower.is_empty() {
        return None;
    }
    PROVIDERS
        .iter()
        .find(|p| p.agent_name_patterns.iter().any(|pat| lower.contains(pat)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_are_found_by_key_and_by_reported_name() {
        assert_eq!(by_key("codex").map(|p| p.key), Some("codex"));
        assert!(by_key("custom").is_none());
        assert_eq!(
            by_agent_name("@agentclientprotocol/Claude-Agent-ACP").map(|p| p.key),
            Some("claude-code")
        );
        assert!(by_agent_name("scripted-peer").is_none());
        assert!(by_agent_name("").is_none());
    }
}
