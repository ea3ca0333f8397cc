//! Marketplaces (`agent_context.registered_marketplaces`): a directory (or
//! repository) with `.plugin/marketplace.json` or
//! `.claude-plugin/marketplace.json` listing plugins and standalone skills;
//! one without a manifest is read as a folder of `<name>/SKILL.md` skills.
//! A registration's `auto_load` (`true`, or a list of names) says which of
//! them a conversation loads when it starts.

use super::source::PluginSource;
use super::types::{PluginError, RepoPathError};
use crate::skills::Skill;
use crate::skills::parse::load_skill_file_with;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Component, Path, PathBuf};

/// Directories holding `marketplace.json`, in the order they are looked at.
pub const MANIFEST_DIRS: [&str; 2] = [".plugin", ".claude-plugin"];

/// `auto_load`: everything, nothing, or the listed names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AutoLoad {
    /// All (`true`) or none (`false`).
    All(bool),
    /// Only these plugin/skill names.
    Names(Vec<String>),
}

impl Default for AutoLoad {
    fn default() -> Self {
        Self::All(false)
    }
}

impl AutoLoad {
    /// Whether `name` is loaded.
    pub fn includes(&self, name: &str) -> bool {
        match self {
            Self::All(b) => *b,
            Self::Names(n) => n.iter().any(|x| x == name),
        }
    }

    fn any(&self) -> bool {
        match self {
            Self::All(b) => *b,
            Self::Names(n) => !n.is_empty(),
        }
    }
}

/// One registration (the reference's `MarketplaceRegistration`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarketplaceRegistration {
    /// Identifier.
    pub name: String,
    /// `github:owner/repo`, a git URL or a local path.
    pub source: String,
    /// Branch, tag or commit.
    #[serde(default, rename = "ref")]
    pub git_ref: Option<String>,
    /// Sub-directory holding the marketplace.
    #[serde(default)]
    pub repo_path: Option<String>,
    /// What to load when a conversation starts.
    #[serde(default)]
    pub auto_load: AutoLoad,
}

impl MarketplaceRegistration {
    /// Checks `repo_path` (the reference's messages).
    pub fn validate(&self) -> Result<(), RepoPathError> {
        let Some(p) = &self.repo_path else {
            return Ok(());
        };
        if p.is_empty() {
            return Err(RepoPathError::Empty);
        }
        if p.contains('\\') {
            return Err(RepoPathError::Backslash);
        }
        if p.starts_with('/') {
            return Err(RepoPathError::Absolute);
        }
        if Path::new(p)
            .components()
            .any(|c| matches!(c, Component::ParentDir))
        {
            return Err(RepoPathError::Traversal);
        }
        Ok(())
    }

    /// The source to fetch the marketplace from.
    pub fn plugin_source(&self) -> PluginSource {
        PluginSource {
            source: self.source.clone(),
            git_ref: self.git_ref.clone(),
            repo_path: self.repo_path.clone(),
        }
    }
}

/// Parses `registered_marketplaces` (duplicate names refused).
pub fn registrations(value: &Value) -> Result<Vec<MarketplaceRegistration>, RegistrationError> {
    let list: Vec<MarketplaceRegistration> = match value {
        Value::Null => Vec::new(),
        v => serde_json::from_value(v.clone())?,
    };
    let mut seen = std::collections::HashSet::new();
    for r in &list {
        r.validate()?;
        if !seen.insert(r.name.clone()) {
            return Err(RegistrationError::Duplicate(r.name.clone()));
        }
    }
    Ok(list)
}

/// Why `registered_marketplaces` is refused.
#[derive(Debug, thiserror::Error)]
pub enum RegistrationError {
    /// Not a list of registrations.
    #[error("{0}")]
    Shape(#[from] serde_json::Error),
    /// A registration's `repo_path` is refused.
    #[error(transparent)]
    RepoPath(#[from] RepoPathError),
    /// Two registrations share a name.
    #[error("Duplicate marketplace registration: {0}")]
    Duplicate(String),
}

/// A plugin entry's source: a path/URL string or a `github`/`url` object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EntrySource {
    /// A path (relative to the marketplace) or URL.
    Text(String),
    /// `{"source": "github", "repo": ...}` or `{"source": "url", "url": ...}`.
    Object {
        /// `github` or `url`.
        source: String,
        /// `owner/repo`.
        #[serde(default)]
        repo: Option<String>,
        /// Git URL.
        #[serde(default)]
        url: Option<String>,
        /// Ref.
        #[serde(default, rename = "ref")]
        git_ref: Option<String>,
        /// Sub-directory.
        #[serde(default)]
        path: Option<String>,
    },
}

/// A plugin or skill listed by a marketplace (other fields kept).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MarketplaceEntry {
    /// Name.
    pub name: String,
    /// Where it is.
    pub source: EntrySource,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Value>,
}

/// A loaded marketplace.
#[derive(Debug, Clone, PartialEq)]
pub struct Marketplace {
    /// Its name.
    pub name: String,
    /// Plugins.
    pub plugins: Vec<MarketplaceEntry>,
    /// Standalone skills.
    pub skills: Vec<MarketplaceEntry>,
    /// Its directory.
    pub path: PathBuf,
}

#[derive(Deserialize)]
struct ManifestFile {
    name: String,
    #[serde(default)]
    plugins: Vec<MarketplaceEntry>,
    #[serde(default)]
    skills: Vec<MarketplaceEntry>,
}

impl Marketplace {
    /// Loads the marketplace in `dir` (named `name` when it has no manifest).
    pub fn load(dir: &Path, name: &str) -> Result<Self, PluginError> {
        let dir = std::fs::canonicalize(dir).map_err(|_| {
            PluginError::Invalid(format!(
                "Marketplace directory not found: {}",
                dir.display()
            ))
        })?;
        let manifest = MANIFEST_DIRS
            .iter()
            .map(|d| dir.join(d).join("marketplace.json"))
            .find(|p| p.exists());
        let Some(path) = manifest else {
            return Self::from_skills_dir(&dir, name);
        };
        let text = std::fs::read_to_string(&path)
            .map_err(|e| PluginError::Invalid(format!("{}: {e}", path.display())))?;
        let m: ManifestFile = serde_json::from_str(&text).map_err(|e| {
            PluginError::Invalid(format!("Invalid marketplace {}: {e}", path.display()))
        })?;
        Ok(Self {
            name: m.name,
            plugins: m.plugins,
            skills: m.skills,
            path: dir,
        })
    }

    fn from_skills_dir(dir: &Path, name: &str) -> Result<Self, PluginError> {
        let roots: Vec<PathBuf> = [dir.join("skills"), dir.join(".skills")]
            .into_iter()
            .filter(|p| p.is_dir())
            .collect();
        let roots = if roots.is_empty() {
            vec![dir.to_path_buf()]
        } else {
            roots
        };
        let mut skills: Vec<MarketplaceEntry> = Vec::new();
        for root in roots {
            let mut subs: Vec<PathBuf> = std::fs::read_dir(&root)
                .map(|rd| rd.flatten().map(|e| e.path()).collect())
                .unwrap_or_default();
            subs.sort();
            for sub in subs.into_iter().filter(|s| s.join("SKILL.md").is_file()) {
                let Ok(skill) = load_skill_file_with(&sub.join("SKILL.md"), None, false) else {
                    continue;
                };
                if skills.iter().any(|s| s.name == skill.name) {
                    continue;
                }
                let rel = sub.strip_prefix(dir).unwrap_or(&sub);
                skills.push(MarketplaceEntry {
                    name: skill.name,
                    source: EntrySource::Text(format!("./{}", rel.to_string_lossy())),
                    description: skill.description,
                    extra: serde_json::Map::new(),
                });
            }
        }
        if skills.is_empty() {
            return Err(PluginError::Invalid(format!(
                "Marketplace manifest not found. Expected marketplace.json in .plugin or \
                 .claude-plugin directory under {}, and no skill folders (<name>/SKILL.md) \
                 were found there",
                dir.display()
            )));
        }
        Ok(Self {
            name: name.to_string(),
            plugins: Vec::new(),
            skills,
            path: dir.to_path_buf(),
        })
    }

    /// The plugin `name`, if listed.
    pub fn plugin(&self, name: &str) -> Option<&MarketplaceEntry> {
        self.plugins.iter().find(|p| p.name == name)
    }

    /// Where a listed plugin is fetched from (relative paths against the
    /// marketplace directory).
    pub fn plugin_source(&self, entry: &MarketplaceEntry) -> Result<PluginSource, PluginError> {
        match &entry.source {
            EntrySource::Object {
                source,
                repo,
                url,
                git_ref,
                path,
            } => {
                let s = match (source.as_str(), repo, url) {
                    ("github", Some(r), _) => format!("github:{r}"),
                    ("url", _, Some(u)) => u.clone(),
                    _ => {
                        return Err(PluginError::Invalid(format!(
                            "Invalid plugin source for '{}': source type '{source}' is missing required field",
                            entry.name
                        )));
                    }
                };
                Ok(PluginSource {
                    source: s,
                    git_ref: git_ref.clone(),
                    repo_path: path.clone(),
                })
            }
            EntrySource::Text(s) => Ok(PluginSource::new(self.resolve_text(s))),
        }
    }

    fn resolve_text(&self, s: &str) -> String {
        if s.starts_with('/')
            || s.starts_with('~')
            || s.contains("://")
            || s.starts_with("github:")
            || s.starts_with("git@")
        {
            return s.to_string();
        }
        self.path
            .join(s.trim_start_matches(['.', '/']))
            .to_string_lossy()
            .into_owned()
    }

    /// The directory holding the standalone skill `entry`: a local path
    /// against the marketplace, or a `github`/`url`/git source fetched into
    /// the plugin cache (blocking: may run git).
    pub fn skill_dir(
        &self,
        entry: &MarketplaceEntry,
        settings: &super::source::FetchSettings,
    ) -> Result<PathBuf, PluginError> {
        match &entry.source {
            EntrySource::Text(s) if !s.contains("://") && !s.starts_with("github:") => {
                Ok(PathBuf::from(self.resolve_text(s)))
            }
            _ => {
                let spec = self.plugin_source(entry)?;
                super::source::fetch_blocking(&spec, settings).map(|(dir, _)| dir)
            }
        }
    }

    /// The standalone skills `auto_load` selects (git-sourced ones fetched
    /// through `settings`); an entry that does not load is reported and
    /// skipped.
    pub fn auto_skills(
        &self,
        auto_load: &AutoLoad,
        settings: &super::source::FetchSettings,
        problems: &mut Vec<String>,
    ) -> Vec<Skill> {
        let mut out = Vec::new();
        for entry in self.skills.iter().filter(|e| auto_load.includes(&e.name)) {
            let dir = match self.skill_dir(entry, settings) {
                Ok(d) => d,
                Err(e) => {
                    problems.push(format!(
                        "Skill '{}' from marketplace '{}' could not be resolved; skipping: {e}",
                        entry.name, self.name
                    ));
                    continue;
                }
            };
            match load_skill_file_with(&dir.join("SKILL.md"), None, false) {
                Ok(skill) => out.push(skill),
                Err(e) => problems.push(format!(
                    "Failed to load skill '{}' from marketplace '{}': {e}",
                    entry.name, self.name
                )),
            }
        }
        out
    }
}

/// Whether any registration loads something at start.
pub fn any_auto_load(regs: &[MarketplaceRegistration]) -> bool {
    regs.iter().any(|r| r.auto_load.any())
}
