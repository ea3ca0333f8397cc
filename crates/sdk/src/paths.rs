//! Where the user's files are: the one reading of `$HOME` for the SDK, the
//! CLI and the server (each caller picks its own fallback when there is
//! none).

use std::path::PathBuf;

/// The user's home directory: `$HOME` when it is set and not empty.
pub fn user_home() -> Option<PathBuf> {
    openhands_workspace::exec::env::host_var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}
