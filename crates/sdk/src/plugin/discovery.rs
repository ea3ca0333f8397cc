//! Plugins found on this machine (the reference's ambient plugins, loaded
//! into every conversation): the user's `~/.agents/plugins` and
//! `~/.openhands/plugins` (the OpenHands directory's `plugins`) directories and the enabled installed plugins,
//! then the project's `.agents/plugins` and `.openhands/plugins` (in the
//! working directory, then its git root). Within a set the first of a name
//! wins; a project plugin replaces a user plugin of the same name.

use super::load::{LoadedPlugin, load};
use crate::installed::{Installed, Kind, installed_dir};
use std::path::{Path, PathBuf};

/// Project plugin directories, in precedence order.
pub const PROJECT_PLUGIN_DIRS: [&str; 2] = [".agents/plugins", ".openhands/plugins"];

fn subdirs(dir: &Path, skip: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    let skip = std::fs::canonicalize(skip).ok();
    v.into_iter()
        .filter(|p| p.is_dir() && std::fs::canonicalize(p).ok() != skip)
        .collect()
}

fn push_unique(out: &mut Vec<LoadedPlugin>, dirs: Vec<PathBuf>, problems: &mut Vec<String>) {
    for d in dirs {
        match load(&d) {
            Ok(l) if out.iter().any(|o| o.plugin.name() == l.plugin.name()) => {
                tracing::warn!(plugin = %l.plugin.name(), dir = %d.display(), "duplicate plugin skipped");
            }
            Ok(l) => out.push(l),
            Err(e) => problems.push(format!("Failed to load plugin from {}: {e}", d.display())),
        }
    }
}

/// The user's plugins: `<home>/.agents/plugins`, `<openhands dir>/plugins`,
/// then the enabled installed ones.
pub fn user_plugins(
    home: Option<&Path>,
    openhands_dir: Option<&Path>,
    problems: &mut Vec<String>,
) -> Vec<LoadedPlugin> {
    let installed = openhands_dir.map(|d| installed_dir(d, Kind::Plugin));
    let skip = installed.clone().unwrap_or_default();
    let mut out = Vec::new();
    let dirs = [
        home.map(|h| h.join(".agents").join("plugins")),
        openhands_dir.map(|d| d.join("plugins")),
    ];
    for d in dirs.into_iter().flatten() {
        push_unique(&mut out, subdirs(&d, &skip), problems);
    }
    if let Some(i) = installed {
        let enabled = Installed::new(i, Kind::Plugin).enabled_dirs();
        push_unique(&mut out, enabled, problems);
    }
    out
}

/// The project's plugins (working directory, then its git root).
pub fn project_plugins(work_dir: &Path, problems: &mut Vec<String>) -> Vec<LoadedPlugin> {
    let mut roots = vec![work_dir.to_path_buf()];
    if let Some(git_root) = work_dir.ancestors().find(|d| d.join(".git").exists())
        && git_root != work_dir
    {
        roots.push(git_root.to_path_buf());
    }
    let mut out = Vec::new();
    for root in roots {
        for d in PROJECT_PLUGIN_DIRS {
            push_unique(&mut out, subdirs(&root.join(d), Path::new("")), problems);
        }
    }
    out
}

/// The user's (with `user`) and the project's (with `work_dir`) plugins,
/// a project plugin replacing a user plugin of the same name.
pub fn available(
    user: Option<(Option<&Path>, Option<&Path>)>,
    work_dir: Option<&Path>,
    problems: &mut Vec<String>,
) -> Vec<LoadedPlugin> {
    let mut out = user
        .map(|(home, dir)| user_plugins(home, dir, problems))
        .unwrap_or_default();
    for p in work_dir
        .map(|w| project_plugins(w, problems))
        .unwrap_or_default()
    {
        match out.iter_mut().find(|o| o.plugin.name() == p.plugin.name()) {
            Some(slot) => *slot = p,
            None => out.push(p),
        }
    }
    out
}
