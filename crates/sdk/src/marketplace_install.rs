//! `install_skills_from_marketplace` (the reference's): every standalone
//! skill a marketplace lists and every `skills/<name>/SKILL.md` of the
//! plugins it lists, installed into the installed-skills directory
//! (`~/.openhands/skills/installed` by default). Local sources are read
//! against the marketplace directory; `github`, `url` and git sources are
//! fetched with git into the plugin cache. An entry that cannot be fetched
//! or installed is reported and skipped, as the reference skips it.

use std::path::{Path, PathBuf};

use crate::installed::{InstallError, InstallationInfo, Installed, Kind};
use crate::plugin::marketplace::Marketplace;
use crate::plugin::source::{self, FetchSettings, PluginSource};
use crate::plugin::types::PluginError;

/// What an installation from a marketplace did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MarketplaceInstall {
    /// The skills installed (or re-installed with `force`).
    pub installed: Vec<InstallationInfo>,
    /// Skills left alone because they are installed already (without `force`).
    pub already_installed: Vec<String>,
    /// Entries that could not be fetched or installed, and why.
    pub problems: Vec<String>,
}

/// Installs every skill of the marketplace in `marketplace_dir` (the
/// directory holding `.plugin/marketplace.json`) into `installed_dir`.
/// Blocking: may run git. Fails only when the marketplace cannot be read.
pub fn install_skills_from_marketplace(
    marketplace_dir: &Path,
    installed_dir: &Path,
    force: bool,
    settings: &FetchSettings,
) -> Result<MarketplaceInstall, PluginError> {
    let name = marketplace_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "marketplace".into());
    let market = Marketplace::load(marketplace_dir, &name)?;
    let mut out = MarketplaceInstall::default();
    let mut dirs: Vec<(String, PathBuf)> = Vec::new();
    for entry in &market.skills {
        match market.skill_dir(entry, settings) {
            Ok(d) if d.is_dir() => dirs.push((entry.name.clone(), d)),
            Ok(d) => out.problems.push(format!(
                "Failed to resolve skill '{}': {} is not a directory",
                entry.name,
                d.display()
            )),
            Err(e) => out
                .problems
                .push(format!("Failed to resolve skill '{}': {e}", entry.name)),
        }
    }
    for entry in &market.plugins {
        let fetched = market
            .plugin_source(entry)
            .and_then(|spec| source::fetch_blocking(&spec, settings));
        let dir = match fetched {
            Ok((d, _)) => d,
            Err(e) => {
                out.problems
                    .push(format!("Failed to resolve plugin '{}': {e}", entry.name));
                continue;
            }
        };
        let mut subs: Vec<PathBuf> = std::fs::read_dir(dir.join("skills"))
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        subs.sort();
        for sub in subs.into_iter().filter(|s| s.join("SKILL.md").is_file()) {
            let n = sub
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            dirs.push((n, sub));
        }
    }
    let installed = Installed::new(installed_dir.to_path_buf(), Kind::Skill);
    for (name, dir) in dirs {
        let spec = PluginSource::new(dir.to_string_lossy().into_owned());
        match installed.install(&spec, force, settings) {
            Ok(info) => out.installed.push(info),
            Err(InstallError::Exists(n)) => out.already_installed.push(n),
            Err(e) => out
                .problems
                .push(format!("Failed to install skill '{name}': {e}")),
        }
    }
    for p in &out.problems {
        tracing::warn!(marketplace = %name, problem = %p, "marketplace skill not installed");
    }
    Ok(out)
}

#[cfg(test)]
#[path = "marketplace_install_tests.rs"]
mod tests;
