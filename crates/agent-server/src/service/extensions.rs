//! Installed plugins and skills (`~/.openhands/{plugins,skills}/installed`
//! of the server's home) and the plugins available on this machine, for
//! the `/api/plugins*` and `/api/skills/installed*` routes. Blocking work
//! runs on the blocking pool; no HTTP types here.

use openhands_protocol::installed::{InstalledResponse, PluginInfo, PluginSkillSummary};
use openhands_sdk::installed::{InstallError, InstallationInfo, Installed, Kind, installed_dir};
use openhands_sdk::plugin::{FetchSettings, Plugin, PluginSource};
use std::path::{Path, PathBuf};

/// Most files listed for one plugin.
const MAX_FILES: usize = 2000;

/// Why an operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ExtensionError {
    /// Not installed (404).
    #[error("{0}")]
    NotInstalled(String),
    /// Already installed (409).
    #[error("{0}")]
    Exists(String),
    /// The source could not be fetched (400).
    #[error("{0}")]
    Fetch(String),
    /// The source holds no valid extension (422).
    #[error("{0}")]
    Invalid(String),
    /// The server has no home directory, or the disk failed (500).
    #[error("{0}")]
    Internal(String),
}

/// The installed extensions of one kind.
#[derive(Debug, Clone)]
pub struct ExtensionService {
    home: Option<PathBuf>,
    openhands_dir: Option<PathBuf>,
    kind: Kind,
}

fn label(kind: Kind) -> (&'static str, &'static str) {
    match kind {
        Kind::Plugin => ("Plugin", "plugin"),
        Kind::Skill => ("Skill", "skill"),
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ExtensionError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ExtensionError::Internal(e.to_string()))
}

/// Sorted files of `root` relative to it (`.git` skipped, symlinked
/// directories not followed), at most [`MAX_FILES`].
pub fn plugin_files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                if e.file_name() != ".git" {
                    stack.push(p);
                }
            } else if let Ok(rel) = p.strip_prefix(root) {
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out.sort();
    out.truncate(MAX_FILES);
    out
}

/// The skills (commands included) and files of a loaded plugin.
pub fn plugin_contents(p: &Plugin) -> (Vec<PluginSkillSummary>, Vec<String>) {
    let skills = p
        .all_skills()
        .into_iter()
        .map(|s| PluginSkillSummary {
            name: s.name,
            description: s.description,
        })
        .collect();
    (skills, plugin_files(Path::new(&p.path)))
}

/// The summary of an available plugin.
pub fn plugin_info(p: &Plugin) -> PluginInfo {
    let (skills, files) = plugin_contents(p);
    PluginInfo {
        name: p.manifest.name.clone(),
        version: p.manifest.version.clone(),
        description: p.manifest.description.clone(),
        path: p.path.clone(),
        skills,
        files,
    }
}

impl ExtensionService {
    /// The installed `kind`s of the OpenHands directory `openhands_dir`
    /// (user plugins also under `home`).
    pub fn new(home: Option<PathBuf>, openhands_dir: Option<PathBuf>, kind: Kind) -> Self {
        Self {
            home,
            openhands_dir,
            kind,
        }
    }

    fn manager(&self) -> Result<Installed, ExtensionError> {
        let dir = self.openhands_dir.as_ref().ok_or_else(|| {
            ExtensionError::Internal("the server has no OpenHands directory (HOME is unset)".into())
        })?;
        Ok(Installed::new(installed_dir(dir, self.kind), self.kind))
    }

    fn settings(&self) -> FetchSettings {
        FetchSettings::for_dir(self.openhands_dir.as_deref(), Default::default())
    }

    fn not_installed(&self, name: &str) -> ExtensionError {
        ExtensionError::NotInstalled(format!("{} '{name}' is not installed", label(self.kind).0))
    }

    fn response(&self, info: InstallationInfo) -> InstalledResponse {
        let contents = (self.kind == Kind::Plugin).then(|| {
            openhands_sdk::plugin::load::load(Path::new(&info.install_path))
                .ok()
                .map(|l| plugin_contents(&l.plugin))
        });
        let (skills, files) = match contents {
            None => (None, None),
            Some(None) => (Some(None), Some(None)),
            Some(Some((s, f))) => (Some(Some(s)), Some(Some(f))),
        };
        InstalledResponse {
            name: info.name,
            version: info.version,
            description: info.description,
            enabled: info.enabled,
            source: info.source,
            resolved_ref: info.resolved_ref,
            repo_path: info.repo_path,
            installed_at: info.installed_at,
            install_path: info.install_path,
            skills,
            files,
        }
    }

    /// Installs from `spec`.
    pub async fn install(
        &self,
        spec: PluginSource,
        force: bool,
    ) -> Result<InstalledResponse, ExtensionError> {
        let m = self.manager()?;
        let settings = self.settings();
        let (upper, lower) = label(self.kind);
        let this = self.clone();
        blocking(move || match m.install(&spec, force, &settings) {
            Ok(info) => Ok(this.response(info)),
            Err(InstallError::Exists(_)) => Err(ExtensionError::Exists(format!(
                "{upper} already installed. Use force=true to overwrite."
            ))),
            Err(InstallError::Fetch(e)) => {
                tracing::warn!(error = %e, "install: fetch failed");
                Err(ExtensionError::Fetch(format!(
                    "Failed to fetch {lower} source. Check that the source is valid."
                )))
            }
            Err(e @ (InstallError::Invalid(_) | InstallError::Unrecognised(_))) => {
                tracing::warn!(error = %e, "install: invalid extension");
                Err(ExtensionError::Invalid(match this.kind {
                    Kind::Plugin => "Invalid plugin. Ensure it has a valid kebab-case name.".into(),
                    Kind::Skill => {
                        "Invalid skill. Ensure the source contains a valid SKILL.md.".into()
                    }
                }))
            }
            Err(InstallError::Io(e)) => Err(ExtensionError::Internal(e)),
        })
        .await?
    }

    /// Every installed extension.
    pub async fn list(&self) -> Result<Vec<InstalledResponse>, ExtensionError> {
        let Ok(m) = self.manager() else {
            return Ok(Vec::new());
        };
        let this = self.clone();
        blocking(move || m.list().into_iter().map(|i| this.response(i)).collect()).await
    }

    /// One installed extension.
    pub async fn get(&self, name: String) -> Result<InstalledResponse, ExtensionError> {
        let m = self.manager()?;
        let this = self.clone();
        blocking(move || match m.get(&name) {
            Some(i) => Ok(this.response(i)),
            None => Err(this.not_installed(&name)),
        })
        .await?
    }

    /// Enables or disables one.
    pub async fn set_enabled(&self, name: String, enabled: bool) -> Result<(), ExtensionError> {
        let m = self.manager()?;
        let this = self.clone();
        blocking(move || match m.set_enabled(&name, enabled) {
            Ok(true) => Ok(()),
            Ok(false) => Err(this.not_installed(&name)),
            Err(e) => Err(ExtensionError::Internal(e.to_string())),
        })
        .await?
    }

    /// Uninstalls one; the answer's message.
    pub async fn uninstall(&self, name: String) -> Result<String, ExtensionError> {
        let m = self.manager()?;
        let this = self.clone();
        blocking(move || match m.uninstall(&name) {
            Ok(true) => Ok(format!("{} '{name}' uninstalled", label(this.kind).0)),
            Ok(false) => Err(this.not_installed(&name)),
            Err(e) => Err(ExtensionError::Internal(e.to_string())),
        })
        .await?
    }

    /// Re-installs one from its source; the message and the new state.
    pub async fn refresh(
        &self,
        name: String,
    ) -> Result<(String, InstalledResponse), ExtensionError> {
        let m = self.manager()?;
        let settings = self.settings();
        let this = self.clone();
        blocking(move || {
            let (upper, lower) = label(this.kind);
            match m.update(&name, &settings) {
                Ok(Some(info)) => Ok((format!("{upper} '{name}' updated"), this.response(info))),
                Ok(None) => Err(this.not_installed(&name)),
                Err(InstallError::Fetch(_)) => Err(ExtensionError::Fetch(format!(
                    "Failed to fetch the source of {lower} '{name}'. The installed copy was kept."
                ))),
                Err(
                    InstallError::Invalid(_)
                    | InstallError::Unrecognised(_)
                    | InstallError::Exists(_),
                ) => {
                    Err(ExtensionError::Invalid(format!(
                        "The source of {lower} '{name}' no longer holds a valid {lower}. The installed copy was kept."
                    )))
                }
                Err(InstallError::Io(e)) => Err(ExtensionError::Internal(e)),
            }
        })
        .await?
    }

    /// The plugins available locally (user directories and enabled
    /// installed plugins with `user`, the project's with `project_dir`).
    pub async fn available_plugins(
        &self,
        user: bool,
        project_dir: Option<PathBuf>,
    ) -> Result<Vec<PluginInfo>, ExtensionError> {
        let home = self.home.clone();
        let dir = self.openhands_dir.clone();
        blocking(move || {
            let mut problems = Vec::new();
            let found = openhands_sdk::plugin::discovery::available(
                user.then_some((home.as_deref(), dir.as_deref())),
                project_dir.as_deref(),
                &mut problems,
            );
            for p in problems {
                tracing::warn!(problem = %p, "plugin not listed");
            }
            found.iter().map(|l| plugin_info(&l.plugin)).collect()
        })
        .await
    }
}
