//! The reference's known ACP servers: default launch command, the session
//! mode that disables permission prompts, how the runtime agent name
//! identifies them, whether they switch models live, where they read
//! credentials from (API-key variable, credential files) and which variable
//! relocates their data directory.

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
    /// Variable the server reads its API key from.
    pub api_key_env_var: Option<&'static str>,
    /// Variable the server reads a custom API base URL from.
    pub base_url_env_var: Option<&'static str>,
    /// Reserved file-content secrets it authenticates from.
    pub file_secrets: &'static [BuiltinFileSecret],
    /// Variable relocating its per-user data/config root
    /// (`acp_isolate_data_dir`).
    pub data_dir_env_var: Option<&'static str>,
    /// Variables removed when another one (`dominant`) is present, because
    /// they would defeat the credential it carries.
    pub env_conflicts: &'static [EnvConflict],
}

/// A built-in `ACPFileSecretSpec`: the secret `secret_name` is written to
/// `<conversation>/acp/<subdir>/<filename>` and `env_var` points at the
/// directory (`env_points_to_dir`) or the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinFileSecret {
    /// Reserved secret name.
    pub secret_name: &'static str,
    /// Basename of the written file.
    pub filename: &'static str,
    /// Variable locating it.
    pub env_var: &'static str,
    /// Folder under the conversation's `acp/` directory.
    pub subdir: &'static str,
    /// Whether `env_var` names the directory (else the file).
    pub env_points_to_dir: bool,
    /// Companion variables worth a warning when unset.
    pub warn_if_unset: &'static [&'static str],
}

/// Variables stripped when `dominant` is present.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvConflict {
    /// The variable whose presence selects the provider's credential.
    pub dominant: &'static str,
    /// Variables removed then.
    pub strip: &'static [&'static str],
}

const CODEX_FILE_SECRETS: &[BuiltinFileSecret] = &[BuiltinFileSecret {
    secret_name: "CODEX_AUTH_JSON",
    filename: "auth.json",
    env_var: "CODEX_HOME",
    subdir: "codex",
    env_points_to_dir: true,
    warn_if_unset: &[],
}];
const KIMI_FILE_SECRETS: &[BuiltinFileSecret] = &[BuiltinFileSecret {
    secret_name: "KIMI_CODE_CONFIG_TOML",
    filename: "config.toml",
    env_var: "KIMI_CODE_HOME",
    subdir: "kimi-code",
    env_points_to_dir: true,
    warn_if_unset: &[],
}];
const GEMINI_FILE_SECRETS: &[BuiltinFileSecret] = &[BuiltinFileSecret {
    secret_name: "GOOGLE_APPLICATION_CREDENTIALS_JSON",
    filename: "gcloud-credentials.json",
    env_var: "GOOGLE_APPLICATION_CREDENTIALS",
    subdir: "gemini-cli",
    env_points_to_dir: false,
    warn_if_unset: &["GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"],
}];
const PI_FILE_SECRETS: &[BuiltinFileSecret] = &[BuiltinFileSecret {
    secret_name: "PI_AUTH_JSON",
    filename: "auth.json",
    env_var: "PI_CODING_AGENT_DIR",
    subdir: "pi",
    env_points_to_dir: true,
    warn_if_unset: &[],
}];

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
        api_key_env_var: Some("ANTHROPIC_API_KEY"),
        base_url_env_var: Some("ANTHROPIC_BASE_URL"),
        file_secrets: &[],
        data_dir_env_var: Some("CLAUDE_CONFIG_DIR"),
        env_conflicts: &[EnvConflict {
            dominant: "CLAUDE_CODE_OAUTH_TOKEN",
            strip: &["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"],
        }],
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
        api_key_env_var: Some("OPENAI_API_KEY"),
        base_url_env_var: Some("OPENAI_BASE_URL"),
        file_secrets: CODEX_FILE_SECRETS,
        data_dir_env_var: Some("CODEX_HOME"),
        env_conflicts: &[],
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
        api_key_env_var: Some("GEMINI_API_KEY"),
        base_url_env_var: Some("GEMINI_BASE_URL"),
        file_secrets: GEMINI_FILE_SECRETS,
        data_dir_env_var: Some("HOME"),
        env_conflicts: &[],
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
        api_key_env_var: None,
        base_url_env_var: Some("KIMI_BASE_URL"),
        file_secrets: KIMI_FILE_SECRETS,
        data_dir_env_var: Some("KIMI_CODE_HOME"),
        env_conflicts: &[],
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
        api_key_env_var: Some("ANTHROPIC_API_KEY"),
        base_url_env_var: None,
        file_secrets: PI_FILE_SECRETS,
        data_dir_env_var: Some("HOME"),
        env_conflicts: &[],
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
        api_key_env_var: Some("OPENCODE_API_KEY"),
        base_url_env_var: None,
        file_secrets: &[],
        data_dir_env_var: Some("HOME"),
        env_conflicts: &[],
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

/// The provider a launch command runs: a token's basename (without a
/// trailing `@version`) starts with one of its name patterns. Stricter than
/// [`by_agent_name`] because the command is caller-controlled.
pub fn by_command(command: &[String]) -> Option<&'static Provider> {
    let bases: Vec<String> = command
        .iter()
        .map(|token| {
            let base = token.rsplit('/').next().unwrap_or(token).to_lowercase();
            match base.rfind('@') {
                Some(at) if at > 0 => base[..at].to_string(),
                _ => base,
            }
        })
        .collect();
    PROVIDERS.iter().find(|p| {
        bases
            .iter()
            .any(|b| p.agent_name_patterns.iter().any(|pat| b.starts_with(pat)))
    })
}

/// The provider an agent runs: its `acp_server` key, else detected from
/// the command.
pub fn resolve(server: Option<&str>, command: &[String]) -> Option<&'static Provider> {
    server.and_then(by_key).or_else(|| by_command(command))
}

/// The default `acp_file_secrets`: every provider's file secrets.
pub fn default_file_secrets() -> impl Iterator<Item = &'static BuiltinFileSecret> {
    PROVIDERS.iter().flat_map(|p| p.file_secrets.iter())
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

    #[test]
    fn providers_are_found_by_command_basename_only() {
        let cmd = |c: &[&str]| {
            by_command(&c.iter().map(|s| s.to_string()).collect::<Vec<_>>()).map(|p| p.key)
        };
        assert_eq!(
            cmd(&["npx", "-y", "@agentclientprotocol/codex-acp@1.10.0"]),
            Some("codex")
        );
        assert_eq!(cmd(&["/opt/bin/gemini-cli", "--acp"]), Some("gemini-cli"));
        assert_eq!(cmd(&["my-codex-acp-wrapper"]), None);
        assert_eq!(cmd(&["/opt/shims/not-codex-acp"]), None);
        assert_eq!(default_file_secrets().count(), 4);
        assert_eq!(resolve(Some("pi"), &[]).map(|p| p.key), Some("pi"));
    }
}
