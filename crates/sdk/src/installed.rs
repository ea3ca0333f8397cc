//! Installed extensions (plugins under `~/.openhands/plugins/installed`,
//! skills under `~/.openhands/skills/installed`; `~/.openhands` is the
//! reference's persistence directory), as the reference manages
//! them: each in `<dir>/<kebab-case name>/`, tracked in `<dir>/.installed.json`
//! (`{"extensions": {name: info}}`; the legacy `plugins`/`skills` keys are
//! read too). Listing reconciles the file with the directory: entries whose
//! directory vanished are dropped, directories copied in by hand are added
//! with source `local`.

use crate::plugin::source::{self, FetchSettings, PluginSource};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// The metadata file.
pub const METADATA_FILE: &str = ".installed.json";

/// What is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Plugin directories.
    Plugin,
    /// AgentSkills directories (`SKILL.md`).
    Skill,
}

/// The installed directory of `kind` in the user's OpenHands directory
/// (`~/.openhands`).
pub fn installed_dir(openhands_dir: &Path, kind: Kind) -> PathBuf {
    let sub = match kind {
        Kind::Plugin => "plugins",
        Kind::Skill => "skills",
    };
    openhands_dir.join(sub).join("installed")
}

/// One installed extension (the reference's `InstallationInfo`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstallationInfo {
    /// Name (kebab-case).
    pub name: String,
    /// Version.
    #[serde(default)]
    pub version: String,
    /// Description.
    #[serde(default)]
    pub description: String,
    /// Whether conversations load it.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Where it was installed from.
    pub source: String,
    /// The ref asked for.
    #[serde(default)]
    pub requested_ref: Option<String>,
    /// The commit installed.
    #[serde(default)]
    pub resolved_ref: Option<String>,
    /// Sub-directory of the repository.
    #[serde(default)]
    pub repo_path: Option<String>,
    /// When (ISO 8601).
    pub installed_at: String,
    /// Its directory.
    pub install_path: String,
}

fn yes() -> bool {
    true
}

/// Why an installation operation failed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The source could not be fetched.
    #[error("{0}")]
    Fetch(#[source] crate::plugin::types::PluginError),
    /// Already installed (without `force`).
    #[error("Extension '{0}' is already installed. Use force=true to overwrite.")]
    Exists(String),
    /// The source holds no valid extension, or the name is not kebab-case.
    #[error("{0}")]
    Invalid(String),
    /// The disk failed.
    #[error("{0}")]
    Io(String),
    /// The fetched directory is not an extension of its kind.
    #[error(transparent)]
    Unrecognised(#[from] IdentityError),
}

/// Why a directory is not an extension of its kind.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// The plugin does not load.
    #[error(transparent)]
    Plugin(#[from] crate::plugin::types::PluginError),
    /// A skill directory without its `SKILL.md`.
    #[error("Skill directory is missing SKILL.md: {}", .0.display())]
    NoSkillFile(PathBuf),
    /// The `SKILL.md` does not load.
    #[error(transparent)]
    Skill(#[from] crate::skills::parse::SkillFileError),
    /// Another kind's [`Loader`] refused it (its own error inside).
    #[error(transparent)]
    Other(Box<dyn std::error::Error + Send + Sync>),
}

/// Checks the kebab-case name rule.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('-').all(|w| {
            !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
}

/// Name, version and description of the extension in `dir`.
pub fn identity(dir: &Path, kind: Kind) -> Result<(String, String, String), IdentityError> {
    match kind {
        Kind::Plugin => {
            let p = crate::plugin::load::load(dir)?.plugin;
            Ok((p.manifest.name, p.manifest.version, p.manifest.description))
        }
        Kind::Skill => {
            let md = dir.join("SKILL.md");
            if !md.is_file() {
                return Err(IdentityError::NoSkillFile(dir.to_path_buf()));
            }
            let s = crate::skills::parse::load_skill_file(&md, None)?;
            Ok((s.name, s.version, s.description.unwrap_or_default()))
        }
    }
}

/// Reads name, version and description of the extension in a directory
/// (an error says why it is not one).
pub type Loader = fn(&Path) -> Result<(String, String, String), IdentityError>;

/// An installed directory of one kind.
#[derive(Debug, Clone)]
pub struct Installed {
    dir: PathBuf,
    kind: Kind,
    loader: Option<Loader>,
}

fn io(e: std::io::Error) -> InstallError {
    InstallError::Io(e.to_string())
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else if kind.is_symlink() {
            let link = std::fs::read_link(entry.path())?;
            std::os::unix::fs::symlink(link, target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

impl Installed {
    /// The installed `kind`s in `dir`.
    pub fn new(dir: PathBuf, kind: Kind) -> Self {
        Self {
            dir,
            kind,
            loader: None,
        }
    }

    /// Installed extensions of another kind in `dir`, recognised by
    /// `loader` (the agent server's canvas extensions).
    pub fn with_loader(dir: PathBuf, loader: Loader) -> Self {
        Self {
            dir,
            kind: Kind::Plugin,
            loader: Some(loader),
        }
    }

    fn identity(&self, dir: &Path) -> Result<(String, String, String), IdentityError> {
        match self.loader {
            Some(load) => load(dir),
            None => identity(dir, self.kind),
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn read(&self) -> Map<String, Value> {
        let v: Value = std::fs::read_to_string(self.dir.join(METADATA_FILE))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null);
        let mut out = Map::new();
        for key in ["plugins", "skills", "extensions"] {
            if let Some(Value::Object(m)) = v.get(key) {
                out.extend(m.clone());
            }
        }
        out
    }

    fn entries(&self) -> Vec<InstallationInfo> {
        self.read()
            .into_iter()
            .filter_map(|(_, v)| serde_json::from_value(v).ok())
            .collect()
    }

    fn write(&self, entries: &[InstallationInfo]) -> Result<(), InstallError> {
        let mut m = Map::new();
        for e in entries {
            m.insert(
                e.name.clone(),
                serde_json::to_value(e).map_err(|e| InstallError::Io(e.to_string()))?,
            );
        }
        let text = serde_json::to_string_pretty(&serde_json::json!({ "extensions": m }))
            .map_err(|e| InstallError::Io(e.to_string()))?;
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        crate::fsutil::write_atomic(
            &self.dir.join(METADATA_FILE),
            text.as_bytes(),
            crate::fsutil::Durability::Immediate,
        )
        .map_err(io)
    }

    /// Every installed extension, reconciled with the directory (and the
    /// file rewritten when that changed something).
    pub fn list(&self) -> Vec<InstallationInfo> {
        if !self.dir.is_dir() {
            return Vec::new();
        }
        let before = self.entries();
        let mut out: Vec<InstallationInfo> = before
            .iter()
            .filter(|e| valid_name(&e.name) && self.dir.join(&e.name).exists())
            .cloned()
            .collect();
        let mut subs: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        subs.sort();
        for sub in subs.into_iter().filter(|p| p.is_dir()) {
            let name = sub
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name.starts_with('.') || !valid_name(&name) || out.iter().any(|e| e.name == name) {
                continue;
            }
            match self.identity(&sub) {
                Ok((n, version, description)) if n == name => out.push(InstallationInfo {
                    name: n,
                    version,
                    description,
                    enabled: true,
                    source: "local".into(),
                    requested_ref: None,
                    resolved_ref: None,
                    repo_path: None,
                    installed_at: chrono::Utc::now().to_rfc3339(),
                    install_path: sub.to_string_lossy().into_owned(),
                }),
                _ => tracing::debug!(dir = %sub.display(), "not an installed extension"),
            }
        }
        if out != before
            && let Err(e) = self.write(&out)
        {
            tracing::warn!(error = %e, "installed metadata not updated");
        }
        out
    }

    /// The installed extension `name` (`None` when not installed).
    pub fn get(&self, name: &str) -> Option<InstallationInfo> {
        self.entries()
            .into_iter()
            .find(|e| e.name == name)
            .filter(|e| self.dir.join(&e.name).exists())
    }

    /// Installs from `spec` (blocking: may run git).
    pub fn install(
        &self,
        spec: &PluginSource,
        force: bool,
        settings: &FetchSettings,
    ) -> Result<InstallationInfo, InstallError> {
        self.install_named(spec, force, settings, None)
    }

    fn install_named(
        &self,
        spec: &PluginSource,
        force: bool,
        settings: &FetchSettings,
        root_name: Option<&str>,
    ) -> Result<InstallationInfo, InstallError> {
        let (fetched, resolved) =
            source::fetch_blocking(spec, settings).map_err(InstallError::Fetch)?;
        // A repository root is named after the repository, not its cache
        // directory, when it has no manifest.
        let staging = tempfile::tempdir().map_err(io)?;
        let is_root = spec.repo_path.is_none()
            && matches!(
                source::parse_source(&spec.source),
                Ok(source::SourceKind::Git { subpath: None, .. })
            );
        let load_from = if is_root {
            let name = root_name.map(String::from).unwrap_or_else(|| {
                source::cache_path(&spec.source, Path::new(""))
                    .to_string_lossy()
                    .rsplit_once('-')
                    .map(|(n, _)| n.to_string())
                    .unwrap_or_default()
            });
            let dest = staging.path().join(name);
            copy_dir(&fetched, &dest).map_err(io)?;
            let _ = std::fs::remove_dir_all(dest.join(".git"));
            dest
        } else {
            fetched.clone()
        };
        let (name, version, description) = self.identity(&load_from)?;
        if !valid_name(&name) {
            return Err(InstallError::Invalid(format!(
                "Invalid extension name. Expected kebab-case, got '{name}'."
            )));
        }
        let target = self.dir.join(&name);
        if target.exists() && !force {
            return Err(InstallError::Exists(name));
        }
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        if target.exists() {
            std::fs::remove_dir_all(&target).map_err(io)?;
        }
        copy_dir(&load_from, &target).map_err(io)?;
        let mut entries = self.entries();
        let enabled = entries
            .iter()
            .find(|e| e.name == name)
            .is_none_or(|e| e.enabled);
        entries.retain(|e| e.name != name);
        let info = InstallationInfo {
            name,
            version,
            description,
            enabled,
            source: spec.source.clone(),
            requested_ref: spec.git_ref.clone(),
            resolved_ref: resolved,
            repo_path: spec.repo_path.clone(),
            installed_at: chrono::Utc::now().to_rfc3339(),
            install_path: target.to_string_lossy().into_owned(),
        };
        entries.push(info.clone());
        self.write(&entries)?;
        Ok(info)
    }

    /// Removes `name`; `false` when it was not tracked.
    pub fn uninstall(&self, name: &str) -> Result<bool, InstallError> {
        let mut entries = self.entries();
        if !entries.iter().any(|e| e.name == name) {
            return Ok(false);
        }
        let path = self.dir.join(name);
        if path.exists() {
            std::fs::remove_dir_all(&path).map_err(io)?;
        }
        entries.retain(|e| e.name != name);
        self.write(&entries)?;
        Ok(true)
    }

    /// Enables or disables `name`; `false` when it is not installed.
    pub fn set_enabled(&self, name: &str, enabled: bool) -> Result<bool, InstallError> {
        let mut entries = self.list();
        let Some(e) = entries.iter_mut().find(|e| e.name == name) else {
            return Ok(false);
        };
        if e.enabled != enabled {
            e.enabled = enabled;
            self.write(&entries)?;
        }
        Ok(true)
    }

    /// Re-installs `name` from its source at the latest version (its
    /// enabled state kept); `None` when it is not installed.
    pub fn update(
        &self,
        name: &str,
        settings: &FetchSettings,
    ) -> Result<Option<InstallationInfo>, InstallError> {
        let Some(current) = self.get(name) else {
            return Ok(None);
        };
        let spec = PluginSource {
            source: current.source.clone(),
            git_ref: None,
            repo_path: current.repo_path.clone(),
        };
        self.install_named(&spec, true, settings, Some(name))
            .map(Some)
    }

    /// Directories of the enabled installed extensions.
    pub fn enabled_dirs(&self) -> Vec<PathBuf> {
        self.list()
            .into_iter()
            .filter(|e| e.enabled)
            .map(|e| self.dir.join(e.name))
            .filter(|p| p.exists())
            .collect()
    }
}

#[cfg(test)]
#[path = "installed_tests.rs"]
mod tests;
