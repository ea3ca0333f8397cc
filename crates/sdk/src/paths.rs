//! Where the user's files are: the one reading of `$HOME` for the SDK, the
//! CLI and the server (each caller picks its own fallback when there is
//! none), and the reference's user persistence directory.

use std::path::PathBuf;

/// The user's home directory: `$HOME` when it is set and not empty.
pub fn user_home() -> Option<PathBuf> {
    openhands_workspace::exec::env::host_var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// The base of the user's OpenHands files, as the reference finds it:
/// `$OH_PERSISTENCE_DIR` when set and not empty (a relative value taken
/// from the current directory), else `~/.openhands` (`None` when neither
/// is known).
pub fn user_persistence_dir() -> Option<PathBuf> {
    match openhands_workspace::exec::env::host_var_os("OH_PERSISTENCE_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
    {
        Some(dir) if dir.is_relative() => {
            Some(std::env::current_dir().map_or(dir.clone(), |cwd| cwd.join(&dir)))
        }
        Some(dir) => Some(dir),
        None => user_home().map(|h| h.join(".openhands")),
    }
}
