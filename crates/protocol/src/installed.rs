//! `/api/plugins*` and `/api/skills/installed*` bodies and answers
//! (installed extensions and locally available plugins).

use serde::{Deserialize, Serialize};

fn yes() -> bool {
    true
}

/// `InstallPluginRequest` / `InstallSkillRequest`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InstallRequest {
    /// Git URL, `github:owner/repo[/path]` or local path.
    pub source: String,
    /// Branch, tag or commit.
    #[serde(default, rename = "ref")]
    pub git_ref: Option<String>,
    /// Sub-directory of the repository.
    #[serde(default)]
    pub repo_path: Option<String>,
    /// Overwrite an existing installation.
    #[serde(default)]
    pub force: bool,
}

/// A skill bundled in a plugin (`PluginSkillSummary`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PluginSkillSummary {
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
}

/// `InstalledPluginResponse` / `InstalledSkillResponse`: one installed
/// extension (plugins add `skills` and `files`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InstalledResponse {
    /// Name.
    pub name: String,
    /// Version.
    pub version: String,
    /// Description.
    pub description: String,
    /// Whether conversations load it.
    pub enabled: bool,
    /// Original source.
    pub source: String,
    /// Commit installed.
    pub resolved_ref: Option<String>,
    /// Sub-directory of the repository.
    pub repo_path: Option<String>,
    /// When (ISO 8601).
    pub installed_at: String,
    /// Where.
    pub install_path: String,
    /// Bundled skills (plugins only; `null` when it does not load).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skills: Option<Option<Vec<PluginSkillSummary>>>,
    /// Files relative to `install_path` (plugins only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Option<Vec<String>>>,
}

/// `PATCH .../installed/{name}` body.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SetEnabledRequest {
    /// Enable or disable.
    pub enabled: bool,
}

/// `PATCH .../installed/{name}` answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SetEnabledResponse {
    /// Name.
    pub name: String,
    /// New state.
    pub enabled: bool,
}

/// Answer with a message (`DELETE`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MessageResponse {
    /// What happened.
    pub message: String,
}

/// `POST .../installed/{name}/refresh` answer (`plugin` or `skill` key).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RefreshResponse {
    /// What happened.
    pub message: String,
    /// The plugin after the refresh.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<InstalledResponse>,
    /// The skill after the refresh.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skill: Option<InstalledResponse>,
}

/// `PluginsRequest`: which local plugins to list.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PluginsRequest {
    /// User plugins and enabled installed plugins.
    #[serde(default = "yes")]
    pub load_user: bool,
    /// Project plugins (`project_dir`).
    #[serde(default = "yes")]
    pub load_project: bool,
    /// Workspace directory.
    #[serde(default)]
    pub project_dir: Option<String>,
}

/// `PluginInfo`: an available plugin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PluginInfo {
    /// Name.
    pub name: String,
    /// Version.
    pub version: String,
    /// Description.
    pub description: String,
    /// Directory.
    pub path: String,
    /// Bundled skills (commands included).
    pub skills: Vec<PluginSkillSummary>,
    /// Files relative to `path`.
    pub files: Vec<String>,
}

/// `PluginsResponse`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PluginsResponse {
    /// The plugins.
    pub plugins: Vec<PluginInfo>,
}

/// `InstalledPluginsListResponse`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InstalledPluginsResponse {
    /// The installed plugins.
    pub plugins: Vec<InstalledResponse>,
}

/// `InstalledSkillsListResponse`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InstalledSkillsResponse {
    /// The installed skills.
    pub skills: Vec<InstalledResponse>,
}
