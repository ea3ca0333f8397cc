//! Discovery of file-based agent definitions, in the reference's locations
//! and order: `{project}/.agents/agents`, `{project}/.openhands/agents`,
//! `~/.agents/agents`, `~/.openhands/agents`; the first definition of a
//! name wins. Only top-level `.md` files are read (`README.md` skipped);
//! a file that cannot be read or parsed is skipped with a warning.

use super::definition::AgentDefinition;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Directories under a project or home holding definitions, in priority order.
pub const AGENT_DIRS: &[&str] = &[".agents/agents", ".openhands/agents"];

/// Definitions in one directory, sorted by file name.
pub fn load_agents_from_dir(dir: &Path) -> Vec<AgentDefinition> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .is_some_and(|e| e.to_string_lossy().eq_ignore_ascii_case("md"))
                && !p
                    .file_name()
                    .is_some_and(|n| n == "README.md" || n == "readme.md")
        })
        .collect();
    files.sort();
    files
        .into_iter()
        .filter_map(|p| match AgentDefinition::load(&p) {
            Ok(d) => Some(d),
            Err(e) => {
                tracing::warn!(file = %p.display(), error = %e, "skipping agent definition");
                None
            }
        })
        .collect()
}

fn load_dirs(dirs: &[PathBuf], level: &str) -> Vec<AgentDefinition> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for dir in dirs {
        for mut def in load_agents_from_dir(dir) {
            if seen.insert(def.name.clone()) {
                def.level = Some(level.to_string());
                out.push(def);
            }
        }
    }
    out
}

/// Project-level definitions (`level` = `project`).
pub fn load_project_agents(project_dir: &Path) -> Vec<AgentDefinition> {
    let dirs: Vec<PathBuf> = AGENT_DIRS.iter().map(|d| project_dir.join(d)).collect();
    load_dirs(&dirs, "project")
}

/// User-level definitions under `home` (`level` = `user`).
pub fn load_user_agents(home: &Path) -> Vec<AgentDefinition> {
    let dirs: Vec<PathBuf> = AGENT_DIRS.iter().map(|d| home.join(d)).collect();
    load_dirs(&dirs, "user")
}

/// Project and user definitions, project first, de-duplicated by name.
pub fn discover_agents(
    project_dir: Option<&Path>,
    home: Option<&Path>,
    include_project: bool,
    include_user: bool,
) -> Vec<AgentDefinition> {
    let mut all = Vec::new();
    if include_project && let Some(p) = project_dir {
        all.extend(load_project_agents(p));
    }
    if include_user && let Some(h) = home {
        all.extend(load_user_agents(h));
    }
    let mut seen = HashSet::new();
    all.retain(|d| seen.insert(d.name.clone()));
    all
}
