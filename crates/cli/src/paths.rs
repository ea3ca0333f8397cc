//! Where the command keeps its files: the reference's user directory
//! (`OH_PERSISTENCE_DIR`, else `~/.openhands`), its `settings.json` and the
//! conversations.

use std::path::PathBuf;

/// The user directory: `OH_PERSISTENCE_DIR` when set (a relative value is
/// taken from the current directory, as the reference does), else
/// `~/.openhands`.
pub fn openhands_dir() -> PathBuf {
    if let Some(dir) =
        openhands_workspace::exec::env::host_var_os("OH_PERSISTENCE_DIR").filter(|d| !d.is_empty())
    {
        let dir = PathBuf::from(dir);
        if dir.is_absolute() {
            return dir;
        }
        if let Ok(cwd) = std::env::current_dir() {
            return cwd.join(dir);
        }
        return dir;
    }
    home_dir().join(".openhands")
}

/// `$HOME`, or the current directory when it is unset.
pub fn home_dir() -> PathBuf {
    openhands_sdk::paths::user_home().unwrap_or_else(|| PathBuf::from("."))
}

/// The settings file: `<user directory>/settings.json`.
pub fn settings_file() -> PathBuf {
    openhands_dir().join("settings.json")
}

/// Where conversations are stored: the given folder, else
/// `<user directory>/conversations`.
pub fn conversations_dir(explicit: Option<PathBuf>) -> PathBuf {
    explicit.unwrap_or_else(|| openhands_dir().join("conversations"))
}

/// The interactive session's input history.
pub fn history_file() -> PathBuf {
    openhands_dir().join("cli_history.jsonl")
}

/// The command line's MCP servers (`openhands mcp add`): `<user
/// directory>/mcp.json`, as the reference CLI keeps them.
pub fn mcp_file() -> PathBuf {
    openhands_dir().join("mcp.json")
}
