//! Bodies and answers of `POST /api/plugins/fetch`, the marketplace
//! catalogs (`GET /api/plugins/marketplace`, `GET /api/skills/marketplace`),
//! `GET /api/skills/catalog` and `POST /api/skills/sync`.

use crate::extensions::SkillInfo;
use crate::installed::PluginSkillSummary;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

fn sixty() -> i64 {
    60
}

/// `FetchPluginRequest`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FetchPluginRequest {
    /// Plugin git source (local paths and `file://` are accepted too).
    pub source: String,
    /// Branch, tag, or commit.
    #[serde(default, rename = "ref")]
    pub git_ref: Option<String>,
    /// Subdirectory path within the repository.
    #[serde(default)]
    pub repo_path: Option<String>,
    /// Secrets (`SecretSource`s) filling `${VAR}` placeholders in source
    /// and ref.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub secrets: Map<String, Value>,
    /// Git timeout seconds (1..=600).
    #[serde(default = "sixty")]
    pub timeout: i64,
}

/// `FetchPluginResponse`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FetchPluginResponse {
    /// The plugin directory (in the pinned cache for git sources).
    pub path: String,
    /// The commit fetched.
    pub resolved_ref: Option<String>,
    /// The source as given (placeholders kept).
    pub source: String,
    /// Subdirectory path within the repository.
    pub repo_path: Option<String>,
    /// The raw `plugin.json`.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub manifest: Map<String, Value>,
    /// Skill names.
    pub skills: Vec<String>,
    /// Command names.
    pub commands: Vec<String>,
}

/// `MarketplacePluginInfo`: a true plugin of the marketplace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MarketplacePluginInfo {
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// Attachable source.
    pub source: String,
    /// Ref.
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
    /// Subdirectory.
    pub repo_path: Option<String>,
    /// Whether a plugin of that name is installed.
    pub installed: bool,
    /// The plugin directory in the local copy.
    pub path: Option<String>,
    /// Its skills (when it is in the local copy and loads).
    pub skills: Option<Vec<PluginSkillSummary>>,
    /// Its files (idem).
    pub files: Option<Vec<String>>,
}

/// The plugins `MarketplaceCatalogResponse`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PluginMarketplaceResponse {
    /// The plugins.
    pub plugins: Vec<MarketplacePluginInfo>,
}

/// `MarketplaceSkillInfo`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MarketplaceSkillInfo {
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// A source the install route accepts.
    pub source: String,
    /// Whether a skill of that name is installed.
    pub installed: bool,
}

/// The skills `MarketplaceCatalogResponse`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SkillMarketplaceResponse {
    /// The skills.
    pub skills: Vec<MarketplaceSkillInfo>,
}

/// `SkillCatalogEntry`: a skill an agent profile launch can load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SkillCatalogEntry {
    /// The skill.
    #[serde(flatten)]
    pub skill: SkillInfo,
    /// `public` or `user`.
    pub origin: String,
}

/// `SkillCatalogResponse`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SkillCatalogResponse {
    /// The skills.
    pub skills: Vec<SkillCatalogEntry>,
}

/// `SyncResponse`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SyncResponse {
    /// `success` or `error`.
    pub status: String,
    /// What happened.
    pub message: String,
}
