//! The credential file of a bound credential, as an ACP server reads it:
//! loaded from its binding when the server starts, written to a fresh
//! private directory (0700, file 0600) that the spec's variable points at
//! (`CODEX_HOME` for Codex's `auth.json`), and written back with a
//! compare-and-swap on the loaded version whenever the server has rotated
//! it: while a turn runs (a monitor task reads the file every 100 ms, as
//! the reference's monitor thread does, backing off to 5 s while the
//! source is unreachable), after each turn, after each `ask_agent` fork and
//! when the conversation closes. A rotation another runtime made first is a
//! [`CredentialError::Conflict`] unless both wrote the same value. Every
//! new value (and its JSON `tokens`) is masked in the conversation's
//! output, also before it is synced ([`FileCredential::track_current`]).
//! Errors that retrying cannot fix stick until the binding is re-authorized
//! (a rejected authorization) or never clear; the monitor stops at a
//! conflict, an invalid answer or a credential that needs a new sign-in.

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
/// How often the monitor looks at the file (the reference's interval).
pub const MONITOR_INTERVAL: Duration = Duration::from_millis(100);
/// The longest pause of the monitor while the source fails.
const MONITOR_MAX_INTERVAL: Duration = Duration::from_secs(5);
/// How long closing waits for a sync the monitor is in the middle of.
const MONITOR_JOIN_TIMEOUT: Duration = Duration::from_secs(2);

struct SyncState {
    expected_version: String,
    local_digest: String,
    error: Option<CredentialError>,
    revision: Option<u64>,
}

/// What the file, its monitor and its syncs share.
struct Inner {
    secret_name: String,
    binding: Arc<dyn VersionedCredentialBinding>,
    path: PathBuf,
    registry: SecretsRegistry,
    state: tokio::sync::Mutex<SyncState>,
    /// Digests of the values already masked.
    tracked: parking_lot::Mutex<std::collections::HashSet<String>>,
}

/// The monitor task and what stops it.
struct Monitor {
    stop: tokio_util::sync::CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

/// A bound credential written to disk for an ACP server.
pub struct FileCredential {
    inner: Arc<Inner>,
    dir: Option<tempfile::TempDir>,
    monitor: Option<Monitor>,
}

impl std::fmt::Debug for FileCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileCredential")
            .field("secret_name", &self.inner.secret_name)
            .field("path", &self.inner.path)
            .field("monitored", &self.monitor.is_some())
            .finish_non_exhaustive()
    }
}

impl Drop for FileCredential {
    fn drop(&mut self) {
        if let Some(m) = &self.monitor {
            m.stop.cancel();
        }
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
    /// new private directory; its value is masked through `registry`. A
    /// monitor writes rotations back every [`MONITOR_INTERVAL`] until the
    /// file is closed.
    pub async fn materialize(
        secret_name: &str,
        filename: &str,
        binding: Arc<dyn VersionedCredentialBinding>,
        registry: &SecretsRegistry,
    ) -> Result<Self, CredentialError> {
        Self::materialize_monitored(
            secret_name,
            filename,
            binding,
            registry,
            Some(MONITOR_INTERVAL),
        )
        .await
    }

    /// [`FileCredential::materialize`] with the monitor looking every
    /// `monitor` (`None`: no monitor; rotations are synced by
    /// [`FileCredential::flush`] only).
    pub async fn materialize_monitored(
        secret_name: &str,
        filename: &str,
        binding: Arc<dyn VersionedCredentialBinding>,
        registry: &SecretsRegistry,
        monitor: Option<Duration>,
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
        let inner = Arc::new(Inner {
            secret_name: secret_name.to_string(),
            binding: binding.clone(),
            path,
            registry: registry.clone(),
            state: tokio::sync::Mutex::new(SyncState {
                expected_version: resolved.version,
                local_digest: digest(&resolved.value),
                error: None,
                revision: binding.authorization_revision(),
            }),
            tracked: Default::default(),
        });
        inner.track(&resolved.value);
        let monitor = monitor.map(|every| {
            let stop = tokio_util::sync::CancellationToken::new();
            let task = tokio::spawn(inner.clone().monitor(stop.clone(), every));
            Monitor { stop, task }
        });
        tracing::info!(credential = %secret_name, "credential_binding_materialized");
        Ok(Self {
            inner,
            dir: Some(dir),
            monitor,
        })
    }

    /// The secret this file holds.
    pub fn secret_name(&self) -> &str {
        &self.inner.secret_name
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The private directory holding the file.
    pub fn dir(&self) -> &Path {
        self.inner.path.parent().unwrap_or(&self.inner.path)
    }

    /// Writes a rotation of the file back to the binding (nothing when the
    /// file is unchanged). A file being written is read again a few times;
    /// one that never reads whole and valid is a transient
    /// [`CredentialError::Unavailable`].
    pub async fn flush(&self) -> Result<(), CredentialError> {
        self.inner.flush().await
    }

    /// Masks the file's current value when the server has rotated it, before
    /// the rotation is synced (the reference's `track_current`, run before
    /// output is masked). A file that cannot be read whole is left to the
    /// next sync.
    pub async fn track_current(&self) {
        if let Ok(bytes) = tokio::fs::read(&self.inner.path).await
            && let Ok(text) = String::from_utf8(bytes)
            && is_valid_credential(&self.inner.secret_name, &text)
        {
            self.inner.track(&text);
        }
    }

    /// The final flush, then the directory is removed (also when the flush
    /// failed: the credential never stays on disk after its conversation).
    pub async fn close(mut self) -> Result<(), CredentialError> {
        self.stop_monitor().await;
        let result = self.inner.flush().await;
        let name = &self.inner.secret_name;
        match &result {
            Ok(()) => {
                tracing::info!(credential = %name, outcome = "success", "credential_binding_final_flush")
            }
            Err(e) => {
                tracing::warn!(credential = %name, outcome = "failure", error = %e, "credential_binding_final_flush")
            }
        }
        self.remove_dir().await;
        result
    }

    /// Removes the directory without syncing.
    pub async fn discard(mut self) {
        self.stop_monitor().await;
        self.remove_dir().await;
    }

    /// Stops the monitor, letting a sync it is in the middle of finish
    /// (for [`MONITOR_JOIN_TIMEOUT`] at most).
    async fn stop_monitor(&mut self) {
        if let Some(Monitor { stop, task }) = self.monitor.take() {
            stop.cancel();
            let abort = task.abort_handle();
            if tokio::time::timeout(MONITOR_JOIN_TIMEOUT, task)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
    }

    async fn remove_dir(&mut self) {
        if let Some(dir) = self.dir.take() {
            let _ = tokio::task::spawn_blocking(move || dir.close()).await;
        }
    }
}

impl Inner {
    async fn flush(&self) -> Result<(), CredentialError> {
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

    /// Syncs every rotation of the file while the turn runs, until `stop`:
    /// one read a look, the pause doubling (up to
    /// [`MONITOR_MAX_INTERVAL`]) while the source fails; it ends at an
    /// error no retry can fix but a new authorization (which it waits
    /// for).
    async fn monitor(self: Arc<Self>, stop: tokio_util::sync::CancellationToken, every: Duration) {
        let mut pause = every;
        let mut failure_logged = false;
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(pause) => {}
            }
            let mut st = self.state.lock().await;
            self.refresh_authorization(&mut st);
            let result = match st.error.clone() {
                Some(e) => Err(e),
                None => match self.read_stable(1).await {
                    Some(value) => self.sync_value(&mut st, &value).await,
                    None => Ok(()),
                },
            };
            match result {
                Ok(()) => {
                    pause = every;
                    failure_logged = false;
                }
                Err(
                    e @ (CredentialError::NeedsReauthentication(_)
                    | CredentialError::Conflict(_)
                    | CredentialError::InvalidResponse(_)),
                ) => {
                    tracing::warn!(credential = %self.secret_name, error = %e, "credential_binding_monitor_stopped");
                    st.error.get_or_insert(e);
                    return;
                }
                Err(e) => {
                    if !failure_logged {
                        tracing::warn!(credential = %self.secret_name, error = %e, "credential_binding_monitor_failed");
                        failure_logged = true;
                    }
                    if e.is_permanent() {
                        st.error.get_or_insert(e);
                    }
                    pause = (pause * 2).min(MONITOR_MAX_INTERVAL);
                }
            }
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

    /// Masks `value` and its JSON `tokens` in the conversation's output
    /// (once per value).
    fn track(&self, value: &str) {
        if !self.tracked.lock().insert(digest(value)) {
            return;
        }
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
