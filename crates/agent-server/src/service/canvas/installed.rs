//! Installed canvas extensions under `<persistence>/canvas-extensions/installed`,
//! tracked in its `.installed.json` like plugins and skills (the SDK's
//! [`Installed`]), with the reference's canvas rules: a newly tracked entry
//! (installed, or a directory discovered by listing) always lands disabled;
//! a forced re-install keeps the enabled state; manifests and the files they
//! name are re-validated on every read. Blocking (disk, maybe git).

use super::manifest::ManifestError;
use super::manifest::{self, CanvasExtensionManifest, MANIFEST_FILENAME};
use openhands_sdk::installed::{
    IdentityError, InstallError, InstallationInfo, Installed, METADATA_FILE,
};
use openhands_sdk::plugin::{FetchSettings, PluginSource};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Why an install failed.
#[derive(Debug, thiserror::Error)]
pub enum InstallFailure {
    /// Already installed and not forced.
    #[error("already installed")]
    Exists,
    /// The source could not be read (the reason).
    #[error("{0}")]
    Fetch(String),
    /// No manifest at the resolved location.
    #[error("{MANIFEST_FILENAME} not found")]
    NoManifest,
    /// The manifest or the package is invalid (the reason, for the log).
    #[error("{0}")]
    Invalid(#[source] InstallError),
    /// The disk failed.
    #[error("{0}")]
    Io(String),
}

fn identity(dir: &Path) -> Result<(String, String, String), IdentityError> {
    match manifest::load_from_dir(dir) {
        Ok(Some(m)) => Ok((m.name, m.version, m.description)),
        Ok(None) => Err(IdentityError::Other(Box::new(ManifestError::Missing))),
        Err(e) => Err(IdentityError::Other(Box::new(e))),
    }
}

/// Whether the SDK's loader refused the package for having no manifest.
fn no_manifest(e: &IdentityError) -> bool {
    matches!(e, IdentityError::Other(inner)
        if matches!(inner.downcast_ref::<ManifestError>(), Some(ManifestError::Missing)))
}

/// The installed canvas extensions of one directory.
#[derive(Debug, Clone)]
pub struct CanvasInstalled {
    dir: PathBuf,
    fetch: FetchSettings,
}

impl CanvasInstalled {
    /// Extensions installed in `dir`; remote sources are cloned into `cache_dir`.
    pub fn new(dir: PathBuf, cache_dir: PathBuf) -> Self {
        Self {
            dir,
            fetch: FetchSettings {
                cache_dir,
                env: Default::default(),
            },
        }
    }

    /// The installed directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn manager(&self) -> Installed {
        Installed::with_loader(self.dir.clone(), identity)
    }

    /// Names with a tracked entry whose directory exists.
    fn tracked_names(&self) -> BTreeSet<String> {
        let Ok(text) = std::fs::read_to_string(self.dir.join(METADATA_FILE)) else {
            return BTreeSet::new();
        };
        let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        ["extensions", "plugins", "skills"]
            .iter()
            .filter_map(|k| v.get(*k).and_then(|m| m.as_object()))
            .flat_map(|m| m.keys().cloned())
            .filter(|n| openhands_sdk::installed::valid_name(n) && self.dir.join(n).exists())
            .collect()
    }

    fn force_disable_new(
        &self,
        mut info: InstallationInfo,
        before: &BTreeSet<String>,
    ) -> InstallationInfo {
        if before.contains(&info.name) || !info.enabled {
            return info;
        }
        if let Err(e) = self.manager().set_enabled(&info.name, false) {
            tracing::warn!(name = %info.name, error = %e, "could not disable a new canvas extension");
        }
        info.enabled = false;
        info
    }

    /// Installs from `source` (a local directory or a git source).
    pub fn install(
        &self,
        source: &str,
        git_ref: Option<String>,
        repo_path: Option<String>,
        force: bool,
    ) -> Result<InstallationInfo, InstallFailure> {
        let before = self.tracked_names();
        let spec = PluginSource {
            source: source.to_string(),
            git_ref,
            repo_path,
        };
        match self.manager().install(&spec, force, &self.fetch) {
            Ok(info) => Ok(self.force_disable_new(info, &before)),
            Err(InstallError::Exists(_)) => Err(InstallFailure::Exists),
            Err(InstallError::Fetch(e)) => Err(InstallFailure::Fetch(e.to_string())),
            Err(InstallError::Unrecognised(e)) if no_manifest(&e) => {
                Err(InstallFailure::NoManifest)
            }
            Err(e @ (InstallError::Invalid(_) | InstallError::Unrecognised(_))) => {
                Err(InstallFailure::Invalid(e))
            }
            Err(InstallError::Io(e)) => Err(InstallFailure::Io(e)),
        }
    }

    /// Every installed extension (directories copied in by hand are
    /// tracked, disabled).
    pub fn list(&self) -> Vec<InstallationInfo> {
        let before = self.tracked_names();
        self.manager()
            .list()
            .into_iter()
            .map(|i| self.force_disable_new(i, &before))
            .collect()
    }

    /// One installed extension.
    pub fn get(&self, name: &str) -> Option<InstallationInfo> {
        self.manager().get(name)
    }

    /// The validated manifest of an installed extension (`None` when it is
    /// not installed or no longer validates).
    pub fn manifest(&self, name: &str) -> Option<CanvasExtensionManifest> {
        self.get(name)?;
        manifest::load_from_dir(&self.dir.join(name)).ok().flatten()
    }

    /// Enables or disables; `false` when not installed.
    pub fn set_enabled(&self, name: &str, enabled: bool) -> Result<bool, InstallError> {
        if !self.dir.exists() {
            return Ok(false);
        }
        self.manager().set_enabled(name, enabled)
    }

    /// Uninstalls (and drops a staged update); `false` when not tracked.
    pub fn uninstall(&self, name: &str) -> Result<bool, InstallError> {
        let done = self.manager().uninstall(name)?;
        if done {
            let _ = std::fs::remove_dir_all(self.dir.join(".staging").join(name));
        }
        Ok(done)
    }

    /// The entrypoint file, containment re-checked now.
    pub fn bundle_path(&self, name: &str) -> Option<PathBuf> {
        let m = self.manifest(name)?;
        manifest::resolve_contained_file("entrypoint", &m.entrypoint, &self.dir.join(name)).ok()
    }

    /// The icon file, containment re-checked now.
    pub fn icon_path(&self, name: &str) -> Option<PathBuf> {
        let m = self.manifest(name)?;
        let icon = m.icon?;
        manifest::resolve_contained_file("icon", &icon, &self.dir.join(name)).ok()
    }
}
