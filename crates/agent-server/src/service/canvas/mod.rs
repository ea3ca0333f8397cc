//! Canvas extensions (installable UI bundles with optional backend
//! processes) and the browser sessions of their backends, as the
//! reference's `canvas_extensions` package: `manifest` (format and
//! validation), `installed` (install/list/enable/uninstall, bundle and
//! icon files), `artifact` + `backend` (+ `logbuf`) (backend processes),
//! `sessions` (app-backend session tokens). No HTTP types here.

pub mod artifact;
pub mod backend;
pub mod installed;
pub mod logbuf;
pub mod manifest;
pub mod orphans;
pub mod sessions;

use backend::{BackendError, BackendLogs, BackendManager, BackendStatus};
use installed::{CanvasInstalled, InstallFailure};
use manifest::{CanvasExtensionManifest, MANIFEST_FILENAME};
use openhands_sdk::installed::InstallationInfo;
use serde::Serialize;
use sessions::AppSessions;
use std::path::PathBuf;
use utoipa::ToSchema;

/// Why a canvas operation failed (the HTTP layer maps the variants to
/// 400/404/409/422/500).
#[derive(Debug, thiserror::Error)]
pub enum CanvasError {
    /// The source could not be read (400).
    #[error("{0}")]
    BadSource(String),
    /// Not installed / not found (404).
    #[error("{0}")]
    NotFound(String),
    /// Conflicts with the current state (409).
    #[error("{0}")]
    Conflict(String),
    /// The package is not a valid canvas extension (422).
    #[error("{0}")]
    Invalid(String),
    /// The disk or a task failed (500).
    #[error("{0}")]
    Internal(String),
}

impl From<BackendError> for CanvasError {
    fn from(e: BackendError) -> Self {
        match e {
            BackendError::Conflict(m) => CanvasError::Conflict(m),
            BackendError::Internal(m) => CanvasError::Internal(m),
        }
    }
}

/// An installed extension with its manifest (the reference's
/// `InstalledCanvasExtensionResponse`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct InstalledCanvasExtension {
    /// Canvas extension name.
    pub name: String,
    /// Version.
    pub version: String,
    /// Description.
    pub description: String,
    /// Whether it is enabled.
    pub enabled: bool,
    /// Original source.
    pub source: String,
    /// Ref requested at install time.
    pub requested_ref: Option<String>,
    /// Resolved git commit.
    pub resolved_ref: Option<String>,
    /// Subdirectory within the repository.
    pub repo_path: Option<String>,
    /// ISO 8601 install time.
    pub installed_at: String,
    /// Where it is installed.
    pub install_path: String,
    /// The validated manifest (`null` when it no longer validates).
    pub manifest: Option<CanvasExtensionManifest>,
}

/// Installed canvas extensions, their backends and backend sessions.
#[derive(Debug, Clone)]
pub struct CanvasService {
    installed: CanvasInstalled,
    backends: BackendManager,
    sessions: AppSessions,
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, CanvasError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| CanvasError::Internal(e.to_string()))
}

fn not_installed(name: &str) -> CanvasError {
    CanvasError::NotFound(format!("Canvas extension '{name}' is not installed"))
}

impl CanvasService {
    /// The service for the persistence directory `root` (`~/.openhands`):
    /// `canvas-extensions/installed`, `canvas-extensions/backends`,
    /// clones in `cache/extensions`.
    pub fn new(root: PathBuf) -> Self {
        let installed = CanvasInstalled::new(
            root.join("canvas-extensions").join("installed"),
            root.join("cache").join("extensions"),
        );
        let backends = BackendManager::new(
            installed.clone(),
            root.join("canvas-extensions").join("backends"),
        );
        Self {
            installed,
            backends,
            sessions: AppSessions::default(),
        }
    }

    /// The backend processes.
    pub fn backends(&self) -> &BackendManager {
        &self.backends
    }

    /// The app-backend sessions.
    pub fn sessions(&self) -> &AppSessions {
        &self.sessions
    }

    fn describe(&self, info: InstallationInfo) -> InstalledCanvasExtension {
        let manifest = self.installed.manifest(&info.name);
        InstalledCanvasExtension {
            name: info.name,
            version: info.version,
            description: info.description,
            enabled: info.enabled,
            source: info.source,
            requested_ref: info.requested_ref,
            resolved_ref: info.resolved_ref,
            repo_path: info.repo_path,
            installed_at: info.installed_at,
            install_path: info.install_path,
            manifest,
        }
    }

    /// Installs from `source` (new installs land disabled).
    pub async fn install(
        &self,
        source: String,
        git_ref: Option<String>,
        repo_path: Option<String>,
        force: bool,
    ) -> Result<InstalledCanvasExtension, CanvasError> {
        if force && self.backends.has_running_backends().await {
            return Err(CanvasError::Conflict(
                "Stop running Canvas App backends before a forced install".into(),
            ));
        }
        let this = self.clone();
        blocking(move || {
            let info = this
                .installed
                .install(&source, git_ref, repo_path, force)
                .map_err(|e| match e {
                    InstallFailure::Exists => CanvasError::Conflict(
                        "Canvas extension already installed. Use force=true to overwrite.".into(),
                    ),
                    InstallFailure::Fetch(m) => CanvasError::BadSource(format!(
                        "Could not read canvas extension source: {}",
                        redact(&m)
                    )),
                    InstallFailure::NoManifest => CanvasError::Invalid(format!(
                        "No {MANIFEST_FILENAME} found at the resolved location. Source plus Path must point at the extension's own directory, not the repository root."
                    )),
                    m @ (InstallFailure::Invalid(_) | InstallFailure::Io(_)) => {
                        tracing::warn!(error = %m, "canvas extension install refused");
                        CanvasError::Invalid(
                            "Invalid canvas extension. Ensure the manifest is well-formed.".into(),
                        )
                    }
                })?;
            this.backends.invalidate_approval(&info.name);
            Ok(this.describe(info))
        })
        .await?
    }

    /// Every installed extension.
    pub async fn list(&self) -> Result<Vec<InstalledCanvasExtension>, CanvasError> {
        let this = self.clone();
        blocking(move || {
            this.installed
                .list()
                .into_iter()
                .map(|i| this.describe(i))
                .collect()
        })
        .await
    }

    /// One installed extension.
    pub async fn get(&self, name: String) -> Result<InstalledCanvasExtension, CanvasError> {
        let this = self.clone();
        blocking(move || match this.installed.get(&name) {
            Some(i) => Ok(this.describe(i)),
            None => Err(not_installed(&name)),
        })
        .await?
    }

    /// Revokes the app's sessions and stops its backend.
    pub async fn revoke_and_stop(&self, name: &str) -> BackendStatus {
        self.sessions.revoke_app(name);
        self.backends.stop(name).await
    }

    /// Enables or disables (disabling stops the backend first).
    pub async fn set_enabled(&self, name: String, enabled: bool) -> Result<(), CanvasError> {
        if !enabled {
            self.revoke_and_stop(&name).await;
        }
        let this = self.clone();
        blocking(move || match this.installed.set_enabled(&name, enabled) {
            Ok(true) => Ok(()),
            Ok(false) => Err(not_installed(&name)),
            Err(e) => Err(CanvasError::Internal(e.to_string())),
        })
        .await?
    }

    /// Uninstalls (backend stopped, its data kept); the answer's message.
    pub async fn uninstall(&self, name: String) -> Result<String, CanvasError> {
        self.revoke_and_stop(&name).await;
        let this = self.clone();
        blocking(move || match this.installed.uninstall(&name) {
            Ok(true) => Ok(format!("Canvas extension '{name}' uninstalled")),
            Ok(false) => Err(not_installed(&name)),
            Err(e) => Err(CanvasError::Internal(e.to_string())),
        })
        .await?
    }

    /// The entrypoint bundle file.
    pub async fn bundle(&self, name: String) -> Result<PathBuf, CanvasError> {
        let this = self.clone();
        blocking(move || {
            this.installed.bundle_path(&name).ok_or_else(|| {
                CanvasError::NotFound(format!("Canvas extension '{name}' bundle not found"))
            })
        })
        .await?
    }

    /// The SVG icon file.
    pub async fn icon(&self, name: String) -> Result<PathBuf, CanvasError> {
        let this = self.clone();
        blocking(move || {
            this.installed.icon_path(&name).ok_or_else(|| {
                CanvasError::NotFound(format!("Canvas extension '{name}' icon not found"))
            })
        })
        .await?
    }

    /// Backend status.
    pub async fn backend_status(&self, name: &str) -> BackendStatus {
        self.backends.status(name).await
    }

    /// Prepares the approved revision.
    pub async fn prepare(&self, name: &str, revision: &str) -> Result<BackendStatus, CanvasError> {
        Ok(self.backends.prepare(name, revision).await?)
    }

    /// Starts the prepared revision.
    pub async fn start(&self, name: &str, revision: &str) -> Result<BackendStatus, CanvasError> {
        Ok(self.backends.start(name, revision).await?)
    }

    /// Backend logs.
    pub async fn logs(&self, name: &str, limit_bytes: usize) -> BackendLogs {
        self.backends.logs(name, limit_bytes).await
    }

    /// Deletes backend data.
    pub async fn delete_data(&self, name: &str) -> Result<BackendStatus, CanvasError> {
        Ok(self.backends.delete_data(name).await?)
    }

    /// Revokes every session and stops every backend (server shutdown).
    pub async fn shutdown(&self) {
        self.sessions.clear();
        self.backends.shutdown().await;
    }
}

/// `https://user:pass@host` → `https://****@host` anywhere in a message.
fn redact(message: &str) -> String {
    let re = regex::Regex::new(r"(?P<s>https?://)[^/@\s]+@")
        .map(|re| re.replace_all(message, "${s}****@").into_owned());
    re.unwrap_or_else(|_| message.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn credentials_in_urls_are_redacted() {
        assert_eq!(
            super::redact("clone https://tok:x@github.com/a/b failed"),
            "clone https://****@github.com/a/b failed"
        );
    }
}
