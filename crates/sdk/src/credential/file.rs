//! The credential file of a bound credential, as an ACP server reads it:
//! loaded from its binding when the server starts, written to a fresh
//! private directory (0700, file 0600) that the spec's variable points at
//! (`CODEX_HOME` for Codex's `auth.json`), and written back with a
//! compare-and-swap on the loaded version whenever the server has rotated
//! it — after each turn, after each `ask_agent` fork and when the
//! conversation closes. A rotation another runtime made first is a
//! [`CredentialError::Conflict`] unless both wrote the same value. Every
//! new value (and its JSON `tokens`) is masked in the conversation's
//! output. Errors that retrying cannot fix stick until the binding is
//! re-authorized (a rejected authorization) or never clear.

use super::{CredentialError, VersionedCredentialBinding, is_valid_credential};
use crate::secrets::SecretsRegistry;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Pause between the two reads that must agree before a value is synced.
const STABLE_READ_DELAY: Duration = Duration::from_millis(10);
/// Pauses between attempts to read a file the server is writing.
const READ_RETRY_DELAYS: [Duration; 2] = [Duration::from_millis(100), Duration::from_millis(500)];

struct SyncState {
    expected_version: String,
    local_digest: String,
    error: Option<CredentialError>,
    revision: Option<u64>,
}

/// A bound credential written to disk for an ACP server.
pub struct FileCredential {
    secret_name: String,
    binding: Arc<dyn VersionedCredentialBinding>,
    dir: Option<tempfile::TempDir>,
    path: PathBuf,
    registry: SecretsRegistry,
    state: tokio::sync::Mutex<SyncState>,
}

impl std::fmt::Debug for FileCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileCredential")
            .field("secret_name", &self.secret_name)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn digest(value: &str) -> String {
    hex_string(&Sha256::digest(value.as_bytes()))
}

fn hex_string(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unreadable() -> CredentialError {
    CredentialError::Unavailable("Codex credentials could not be read safely.".into())
}

impl FileCredential {
    /// Loads the credential from `binding` and writes it as `filename` in a
    /// new private directory; its value is masked through `registry`.
    pub async fn materialize(
        secret_name: &str,
        filename: &str,
        binding: Arc<dyn VersionedCredentialBinding>,
        registry: &SecretsRegistry,
    ) -> Result<Self, CredentialError> {
        let resolved = binding.load().await?;
        if !is_valid_credential(secret_name, &resolved.value) {
            return Err(CredentialError::NeedsReauthentication(
                "ChatGPT authentication is invalid. Please sign in again.".into(),
            ));
        }
        let value = resolved.value.clone();
        let filename = filename.to_string();
        let written = tokio::task::spawn_blocking(move || -> std::io::Result<_> {
            let dir = tempfile::Builder::new()
                .prefix("openhands-codex-")
                .tempdir()?;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))?;
            let path = dir.path().join(&filename);
            openhands_workspace::fsutil::write_atomic(
                &path,
                value.as_bytes(),
                openhands_workspace::fsutil::Durability::Immediate,
            )?;
            Ok((dir, path))
        })
        .await
        .map_err(|e| {
            CredentialError::Unavailable(format!("Credential file could not be written: {e}"))
        })?
        .map_err(|e| {
            CredentialError::Unavailable(format!("Credential file could not be written: {e}"))
        })?;
        let (dir, path) = written;
        let this = Self {
            secret_name: secret_name.to_string(),
            binding: binding.clone(),
            dir: Some(dir),
            path,
            registry: registry.clone(),
            state: tokio::sync::Mutex::new(SyncState {
                expected_version: resolved.version,
                local_digest: digest(&resolved.value),
                error: None,
                revision: binding.authorization_revision(),
            }),
        };
        this.track(&resolved.value);
        tracing::info!(credential = %secret_name, "credential_binding_materialized");
        Ok(this)
    }

    /// The secret this file holds.
    pub fn secret_name(&self) -> &str {
        &self.secret_name
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The private directory holding the file.
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(&self.path)
    }

    /// Writes a rotation of the file back to the binding (nothing when the
    /// file is unchanged). A file being written is read again a few times;
    /// one that never reads whole and valid is a transient
    /// [`CredentialError::Unavailable`].
    pub async fn flush(&self) -> Result<(), CredentialError> {
        let mut st = self.state.lock().await;
        self.refresh_authorization(&mut st);
        if let Some(e) = &st.error {
            return Err(e.clone());
        }
        let value = self.read_stable(3).await.ok_or_else(unreadable)?;
        let result = self.sync_value(&mut st, &value).await;
        if let Err(e) = &result
            && e.is_permanent()
        {
            st.error = Some(e.clone());
        }
        result
    }

    /// The final flush, then the directory is removed (also when the flush
    /// failed: the credential never stays on disk after its conversation).
    pub async fn close(mut self) -> Result<(), CredentialError> {
        let result = self.flush().await;
        match &result {
            Ok(()) => {
                tracing::info!(credential = %self.secret_name, outcome = "success", "credential_binding_final_flush")
            }
            Err(e) => {
                tracing::warn!(credential = %self.secret_name, outcome = "failure", error = %e, "credential_binding_final_flush")
            }
        }
        self.remove_dir().await;
        result
    }

    /// Removes the directory without syncing.
    pub async fn discard(mut self) {
        self.remove_dir().await;
    }

    async fn remove_dir(&mut self) {
        if let Some(dir) = self.dir.take() {
            let _ = tokio::task::spawn_blocking(move || dir.close()).await;
        }
    }

    /// A rejected authorization is tried again once the binding has been
    /// re-authorized.
    fn refresh_authorization(&self, st: &mut SyncState) {
        let revision = self.binding.authorization_revision();
        if revision.is_some() && revision != st.revision {
            st.revision = revision;
            if matches!(st.error, Some(CredentialError::AuthorizationRejected(_))) {
                st.error = None;
            }
        }
    }

    /// The file's contents once two reads a moment apart agree and the
    /// value is valid; up to `attempts` tries.
    async fn read_stable(&self, attempts: usize) -> Option<String> {
        for attempt in 0..attempts {
            if let Ok(first) = tokio::fs::read(&self.path).await {
                tokio::time::sleep(STABLE_READ_DELAY).await;
                if let Ok(second) = tokio::fs::read(&self.path).await
                    && first == second
                    && let Ok(text) = String::from_utf8(second)
                    && is_valid_credential(&self.secret_name, &text)
                {
                    return Some(text);
                }
            }
            if attempt + 1 < attempts {
                let delay = READ_RETRY_DELAYS[attempt.min(READ_RETRY_DELAYS.len() - 1)];
                tokio::time::sleep(delay).await;
            }
        }
        None
    }

    async fn sync_value(&self, st: &mut SyncState, value: &str) -> Result<(), CredentialError> {
        let new_digest = digest(value);
        if new_digest == st.local_digest {
            return Ok(());
        }
        self.track(value);
        tracing::info!(credential = %self.secret_name, "credential_binding_rotation_detected");
        match self.binding.replace(&st.expected_version, value).await {
            Ok(version) => {
                st.expected_version = version;
                st.local_digest = new_digest;
                tracing::info!(credential = %self.secret_name, outcome = "success", "credential_binding_replace");
                Ok(())
            }
            Err(CredentialError::Conflict(msg)) => {
                // Converged when the other runtime wrote the same value.
                let current = self.load_after_write(true).await?;
                match current {
                    Some(c) if c.value == value => {
                        st.expected_version = c.version;
                        st.local_digest = new_digest;
                        tracing::info!(credential = %self.secret_name, outcome = "converged", "credential_binding_replace");
                        Ok(())
                    }
                    _ => {
                        tracing::warn!(credential = %self.secret_name, outcome = "conflict", "credential_binding_replace");
                        Err(CredentialError::Conflict(msg))
                    }
                }
            }
            Err(CredentialError::Unavailable(msg)) => {
                // The write may have happened: converged if the source now
                // holds this value.
                match self.load_after_write(false).await? {
                    Some(c) if c.value == value => {
                        st.expected_version = c.version;
                        st.local_digest = new_digest;
                        tracing::info!(credential = %self.secret_name, outcome = "converged", "credential_binding_replace");
                        Ok(())
                    }
                    _ => Err(CredentialError::Unavailable(msg)),
                }
            }
            Err(e) => {
                tracing::warn!(credential = %self.secret_name, outcome = "rejected", "credential_binding_replace");
                Err(e)
            }
        }
    }

    /// The source's value after a write that conflicted (`conflict`) or
    /// whose outcome is unknown: a deleted credential is a conflict; an
    /// unreachable source is `None` after an unknown outcome and an error
    /// after a conflict.
    async fn load_after_write(
        &self,
        conflict: bool,
    ) -> Result<Option<super::ResolvedCredential>, CredentialError> {
        match self.binding.load().await {
            Ok(c) => Ok(Some(c)),
            Err(CredentialError::NeedsReauthentication(_)) => Err(CredentialError::Conflict(
                "The canonical credential was deleted during synchronization.".into(),
            )),
            Err(e @ CredentialError::AuthorizationRejected(_)) => Err(e),
            Err(_) if conflict => Err(CredentialError::Unavailable(
                "Credential conflict could not be resolved.".into(),
            )),
            Err(_) => Ok(None),
        }
    }

    /// Masks `value` and its JSON `tokens` in the conversation's output.
    fn track(&self, value: &str) {
        let mut values = vec![value.to_string()];
        if let Ok(Value::Object(doc)) = serde_json::from_str::<Value>(value)
            && let Some(Value::Object(tokens)) = doc.get("tokens")
        {
            values.extend(
                tokens
                    .values()
                    .filter_map(Value::as_str)
                    .filter(|t| !t.is_empty())
                    .map(str::to_string),
            );
        }
        self.registry.mask_also(values);
    }
}

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
