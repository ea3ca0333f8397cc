//! The marketplace catalogs of the public extensions repository
//! (`GET /api/skills/marketplace`, `GET /api/plugins/marketplace`): its
//! marketplace is found as the reference finds it (a `marketplace.json` in
//! `.plugin/` or `.claude-plugin/`, else the marketplace file), then listed
//! as installable entries. Installation status is the caller's business.

use super::load::MANIFEST_DIRS;
use super::marketplace::{EntrySource, Marketplace, MarketplaceEntry};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// One installable skill (or plugin) of the skills catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillCatalogEntry {
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// A source `POST /api/skills/install` accepts
    /// (`<source>[@<ref>][/<path>]`).
    pub source: String,
}

/// One true plugin of the plugins catalog, with attach coordinates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginCatalogEntry {
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// Source (an absolute path for plugins inside the repository).
    pub source: String,
    /// Ref (structured sources).
    pub git_ref: Option<String>,
    /// Sub-directory (structured sources).
    pub repo_path: Option<String>,
    /// The plugin's directory when it lies in the local copy.
    pub local_dir: Option<PathBuf>,
}

#[derive(Deserialize)]
struct MarketplaceFile {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    plugins: Vec<MarketplaceEntry>,
    #[serde(default)]
    skills: Vec<MarketplaceEntry>,
}

fn read(file: &Path, repo: &Path) -> Option<Marketplace> {
    let text = std::fs::read_to_string(file).ok()?;
    let m: MarketplaceFile = match serde_json::from_str(&text) {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!(file = %file.display(), error = %e, "Failed to load marketplace");
            return None;
        }
    };
    Some(Marketplace {
        name: m.name.unwrap_or_default(),
        plugins: m.plugins,
        skills: m.skills,
        path: std::fs::canonicalize(repo).unwrap_or_else(|_| repo.to_path_buf()),
    })
}

/// The marketplace of the repository `repo`: its manifest, else the file
/// `marketplace_path` (relative to it).
pub fn load_catalog_marketplace(repo: &Path, marketplace_path: &str) -> Option<Marketplace> {
    MANIFEST_DIRS
        .iter()
        .map(|d| repo.join(d).join("marketplace.json"))
        .find(|p| p.is_file())
        .and_then(|p| read(&p, repo))
        .or_else(|| read(&repo.join(marketplace_path), repo))
}

/// The skills catalog: every plugin entry then every skill entry whose
/// name is not taken yet, with a source the install route accepts. Empty
/// when the marketplace file is missing (as the reference answers).
pub fn skill_catalog(repo: &Path, marketplace_path: &str) -> Vec<SkillCatalogEntry> {
    if !repo.join(marketplace_path).is_file() {
        tracing::warn!(file = %repo.join(marketplace_path).display(), "Marketplace file not found");
        return Vec::new();
    }
    let Some(m) = load_catalog_marketplace(repo, marketplace_path) else {
        return Vec::new();
    };
    let mut out: Vec<SkillCatalogEntry> = Vec::new();
    for p in &m.plugins {
        let Ok(src) = m.plugin_source(p) else {
            continue;
        };
        let mut source = src.source;
        if let Some(r) = src.git_ref {
            source = format!("{source}@{r}");
        }
        if let Some(sub) = src.repo_path {
            source = format!("{source}/{sub}");
        }
        if let Some(slot) = out.iter_mut().find(|e| e.name == p.name) {
            slot.description = p.description.clone();
            slot.source = source;
        } else {
            out.push(SkillCatalogEntry {
                name: p.name.clone(),
                description: p.description.clone(),
                source,
            });
        }
    }
    for s in &m.skills {
        if out.iter().any(|e| e.name == s.name) {
            continue;
        }
        let source = match &s.source {
            EntrySource::Text(t) => t.clone(),
            EntrySource::Object { .. } => serde_json::to_string(&s.source).unwrap_or_default(),
        };
        out.push(SkillCatalogEntry {
            name: s.name.clone(),
            description: s.description.clone(),
            source,
        });
    }
    out
}

/// Whether an entry's raw source names a true plugin (`./plugins/…`, or a
/// structured source whose path is under `plugins/`).
fn is_true_plugin(source: &EntrySource) -> bool {
    match source {
        EntrySource::Text(s) => s.starts_with("./plugins/"),
        EntrySource::Object { path, .. } => {
            path.as_deref().is_some_and(|p| p.starts_with("plugins/"))
        }
    }
}

/// The plugins catalog: the true plugins of the repository's marketplace.
pub fn plugin_catalog(repo: &Path, marketplace_path: &str) -> Vec<PluginCatalogEntry> {
    let Some(m) = load_catalog_marketplace(repo, marketplace_path) else {
        tracing::warn!(repo = %repo.display(), "no marketplace in the public extensions repository");
        return Vec::new();
    };
    let mut out = Vec::new();
    for p in m.plugins.iter().filter(|p| is_true_plugin(&p.source)) {
        let Ok(src) = m.plugin_source(p) else {
            continue;
        };
        let local_dir =
            (src.git_ref.is_none() && src.repo_path.is_none() && Path::new(&src.source).is_dir())
                .then(|| PathBuf::from(&src.source));
        out.push(PluginCatalogEntry {
            name: p.name.clone(),
            description: p.description.clone(),
            source: src.source,
            git_ref: src.git_ref,
            repo_path: src.repo_path,
            local_dir,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn catalogs_list_entries_as_the_reference_does() {
        let repo = tempfile::tempdir().unwrap();
        let r = repo.path();
        fs::create_dir_all(r.join("marketplaces")).unwrap();
        fs::create_dir_all(r.join("plugins/city")).unwrap();
        fs::write(
            r.join("marketplaces/default.json"),
            r#"{"name":"default","plugins":[
                {"name":"city","source":"./plugins/city","description":"Weather"},
                {"name":"gh","source":"./skills/gh","description":"GitHub"},
                {"name":"remote","source":{"source":"github","repo":"o/r","ref":"v1","path":"plugins/remote"}}
            ],"skills":[{"name":"gh","source":"./skills/other"},{"name":"solo","source":"./skills/solo"}]}"#,
        )
        .unwrap();
        let skills = skill_catalog(r, "marketplaces/default.json");
        let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["city", "gh", "remote", "solo"]);
        assert_eq!(skills[2].source, "github:o/r@v1/plugins/remote");
        assert_eq!(skills[3].source, "./skills/solo");
        assert!(skills[0].source.ends_with("/plugins/city"));

        let plugins = plugin_catalog(r, "marketplaces/default.json");
        let names: Vec<&str> = plugins.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["city", "remote"]);
        assert!(plugins[0].local_dir.is_some());
        assert_eq!(plugins[1].git_ref.as_deref(), Some("v1"));
        assert_eq!(plugins[1].local_dir, None);

        assert!(skill_catalog(r, "marketplaces/none.json").is_empty());
    }
}
