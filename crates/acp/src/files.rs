//! Credential files and data directories of an ACP server, as the
//! reference's `ACPAgent` prepares them before the process starts.
//!
//! - **File secrets** (`acp_file_secrets`): a conversation secret named by a
//!   spec holds a credential file's contents (Codex `auth.json`, a Vertex
//!   service-account JSON, ...). It is written to
//!   `<conversation dir>/acp/<subdir>/<filename>` (directories 0700, file
//!   0600, written atomically) and the spec's variable points at the file or
//!   its directory; the secret itself is not passed as a variable. The file
//!   is seeded only when absent (a non-empty file is kept: the server may
//!   have refreshed the token in it), so it lives as long as the
//!   conversation's directory, across restarts and resumes, and goes when
//!   the conversation is deleted. Without a persisted conversation the root
//!   is `<working dir>/.openhands/acp`.
//! - **Data directory** (`acp_isolate_data_dir`): the recognised provider's
//!   data variable (`CODEX_HOME`, `CLAUDE_CONFIG_DIR`, `HOME`, ...) points at
//!   `<conversation dir>/acp/<provider>`, the same tree.

use crate::config::{AcpAgentConfig, FileSecretSpec};
use crate::providers::{self, PROVIDERS};
use openhands_workspace::exec::ChildEnv;
use openhands_workspace::fsutil;
use std::collections::BTreeSet;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why the credential files could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    /// Creating a directory or writing a file failed.
    #[error("cannot write the ACP credential file for '{name}' under {}: {source}", dir.display())]
    Io {
        /// The secret (or provider data directory) concerned.
        name: String,
        /// The directory.
        dir: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A variable could not be set in the server's environment.
    #[error("ACP server environment: {0}")]
    Env(String),
}

/// The root of a conversation's ACP files: `<persistence dir>/acp`, or
/// `<working dir>/.openhands/acp` for a conversation that is not persisted.
pub fn acp_root(persistence_dir: Option<&Path>, working_dir: &Path) -> PathBuf {
    let root = match persistence_dir {
        Some(d) => d.join("acp"),
        None => working_dir.join(".openhands").join("acp"),
    };
    std::path::absolute(&root).unwrap_or(root)
}

/// The file-secret specs that apply to the provider the agent runs: specs
/// reserved by *another* known provider are dropped; an unknown server
/// keeps them all.
pub fn active_file_secrets(config: &AcpAgentConfig) -> Vec<FileSecretSpec> {
    let Some(provider) = providers::resolve(config.server.as_deref(), &config.command) else {
        return config.file_secrets.clone();
    };
    let own: BTreeSet<&str> = provider
        .file_secrets
        .iter()
        .map(|s| s.secret_name)
        .collect();
    let elsewhere: BTreeSet<&str> = PROVIDERS
        .iter()
        .filter(|p| p.key != provider.key)
        .flat_map(|p| p.file_secrets.iter().map(|s| s.secret_name))
        .filter(|n| !own.contains(n))
        .collect();
    config
        .file_secrets
        .iter()
        .filter(|s| !elsewhere.contains(s.secret_name.as_str()))
        .cloned()
        .collect()
}

/// The configured file-secret names among the conversation's secrets:
/// written to disk, so neither passed as variables nor advertised.
pub fn present_file_secret_names<'a>(
    config: &AcpAgentConfig,
    secret_names: impl IntoIterator<Item = &'a String>,
) -> BTreeSet<String> {
    let configured: BTreeSet<String> = active_file_secrets(config)
        .into_iter()
        .map(|s| s.secret_name)
        .collect();
    secret_names
        .into_iter()
        .filter(|n| configured.contains(*n))
        .cloned()
        .collect()
}

/// Points the provider's data variable at `<root>/<provider key>` when
/// `acp_isolate_data_dir` is set (no-op for an unrecognised command or a
/// provider without one). Blocking.
pub fn isolate_data_dir(
    config: &AcpAgentConfig,
    root: &Path,
    env: &mut ChildEnv,
) -> Result<(), FilesError> {
    if !config.isolate_data_dir {
        return Ok(());
    }
    let Some(provider) = providers::by_command(&config.command) else {
        return Ok(());
    };
    let Some(var) = provider.data_dir_env_var else {
        return Ok(());
    };
    let dir = root.join(provider.key);
    private_dir(&dir).map_err(|source| FilesError::Io {
        name: var.to_string(),
        dir: dir.clone(),
        source,
    })?;
    env.set(var, dir.to_string_lossy())
        .map_err(|e| FilesError::Env(e.to_string()))
}

/// Writes every active file secret the conversation has (`lookup` gives a
/// secret's value) and points its variable at it. Returns the files.
/// Blocking.
pub fn materialize(
    config: &AcpAgentConfig,
    root: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
    env: &mut ChildEnv,
) -> Result<Vec<PathBuf>, FilesError> {
    let mut written = Vec::new();
    for spec in active_file_secrets(config) {
        let Some(value) = lookup(&spec.secret_name).filter(|v| !v.is_empty()) else {
            continue;
        };
        let dir = root.join(&spec.subdir);
        let target = dir.join(&spec.filename);
        let io = |source| FilesError::Io {
            name: spec.secret_name.clone(),
            dir: dir.clone(),
            source,
        };
        private_dir(&dir).map_err(io)?;
        if let Some(parent) = dir.parent() {
            std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o700)).map_err(io)?;
        }
        let present = std::fs::metadata(&target).is_ok_and(|m| m.is_file() && m.len() > 0);
        if present {
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600))
                .map_err(io)?;
            tracing::info!(secret = %spec.secret_name, path = %target.display(), "ACP file secret already present; kept");
        } else {
            write_private(&target, value.as_bytes()).map_err(io)?;
            tracing::info!(secret = %spec.secret_name, path = %target.display(), "ACP file secret written");
        }
        let location = if spec.env_points_to_dir {
            &dir
        } else {
            &target
        };
        env.set(&spec.env_var, location.to_string_lossy())
            .map_err(|e| FilesError::Env(e.to_string()))?;
        for companion in &spec.warn_if_unset {
            if env.get(companion).is_none_or(str::is_empty) {
                tracing::warn!(secret = %spec.secret_name, %companion, "ACP file secret written but its companion variable is unset; the server may fail to authenticate");
            }
        }
        written.push(target);
    }
    Ok(written)
}

/// Creates `dir` (and its parents) and makes it owner-only.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// Writes `bytes` to `path` as an owner-only file, synced and renamed into
/// place (the one crash-safe write of the workspace layer).
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    fsutil::write_atomic(path, bytes, fsutil::Durability::Immediate)
}

#[cfg(test)]
#[path = "files_tests.rs"]
mod tests;
