//! Reading a plugin directory (the Claude Code layout, the reference's
//! universal format). The manifest is required to parse when present (a
//! broken one refuses the plugin); each other component fails on its own:
//! a bad `hooks.json`, `.mcp.json`, skill, agent or command file is left
//! out and reported in [`LoadedPlugin::problems`], naming the file. Paths
//! that resolve outside the plugin directory (symlinks) are ignored.

use super::command::CommandDefinition;
use super::types::{Plugin, PluginAuthor, PluginError, PluginManifest};
use crate::hooks::HookConfig;
use crate::skills::Skill;
use crate::skills::parse::load_skill_file_with;
use crate::subagent::AgentDefinition;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Directories holding the manifest, in the order they are looked at.
pub const MANIFEST_DIRS: [&str; 2] = [".plugin", ".claude-plugin"];

/// A plugin and what of it could not be loaded.
#[derive(Debug, Clone)]
pub struct LoadedPlugin {
    /// The plugin (without the failed pieces).
    pub plugin: Plugin,
    /// One message per piece left out, naming its file.
    pub problems: Vec<String>,
}

/// Whether `path` (resolved) lies inside `root` (resolved).
fn within(path: &Path, root: &Path) -> bool {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    std::fs::canonicalize(path).is_ok_and(|p| p.starts_with(root))
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

fn is_readme(p: &Path) -> bool {
    p.file_name()
        .is_some_and(|n| n == "README.md" || n == "readme.md")
}

/// Loads the plugin in `dir`.
pub fn load(dir: &Path) -> Result<LoadedPlugin, PluginError> {
    let dir = std::fs::canonicalize(dir).map_err(|_| {
        PluginError::Invalid(format!("Plugin directory not found: {}", dir.display()))
    })?;
    if !dir.is_dir() {
        return Err(PluginError::Invalid(format!(
            "Plugin directory not found: {}",
            dir.display()
        )));
    }
    refuse_agent_plugins_format(&dir)?;
    let manifest = load_manifest(&dir)?;
    let mut problems = Vec::new();
    let skills = load_skills(&dir, &mut problems);
    let hooks = load_hooks(&dir, &mut problems);
    let mcp_config = load_mcp(&dir, &mut problems);
    let agents = load_agents(&dir, &mut problems);
    let commands = load_commands(&dir, &mut problems);
    for p in &problems {
        tracing::warn!(plugin = %manifest.name, problem = %p, "plugin component left out");
    }
    Ok(LoadedPlugin {
        plugin: Plugin {
            manifest,
            path: dir.to_string_lossy().into_owned(),
            skills,
            hooks,
            mcp_config,
            agents,
            commands,
        },
        problems,
    })
}

/// A root `plugin.json` declaring `$schema` (or unreadable) is the Agent
/// Plugins format, which is not implemented: refused by name rather than
/// loaded under another layout.
fn refuse_agent_plugins_format(dir: &Path) -> Result<(), PluginError> {
    let path = dir.join("plugin.json");
    if !path.is_file() {
        return Ok(());
    }
    let claimed = match std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(t.trim_start_matches('\u{feff}')).ok())
    {
        Some(Value::Object(m)) => m.contains_key("$schema"),
        _ => true,
    };
    if claimed {
        return Err(PluginError::Invalid(format!(
            "{}: the Agent Plugins format (root plugin.json with $schema) is not supported; \
             use the .plugin/plugin.json layout",
            path.display()
        )));
    }
    Ok(())
}

fn load_manifest(dir: &Path) -> Result<PluginManifest, PluginError> {
    let found = MANIFEST_DIRS
        .iter()
        .map(|d| dir.join(d).join("plugin.json"))
        .find(|p| p.symlink_metadata().is_ok());
    let Some(path) = found else {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        return Ok(PluginManifest {
            description: format!("Plugin loaded from {name}"),
            name,
            version: "1.0.0".into(),
            author: None,
            entry_command: None,
            extra: Map::new(),
        });
    };
    let shown = path.display();
    if !within(&path, dir) {
        return Err(PluginError::Invalid(format!(
            "Manifest {shown} resolves outside the plugin root"
        )));
    }
    let text = std::fs::read_to_string(&path)
        .map_err(|e| PluginError::Invalid(format!("Failed to parse manifest {shown}: {e}")))?;
    let mut data: Value = serde_json::from_str(&text)
        .map_err(|e| PluginError::Invalid(format!("Invalid JSON in {shown}: {e}")))?;
    if let Some(a) = data.get("author").and_then(Value::as_str) {
        let author = serde_json::to_value(PluginAuthor::from_string(a)).unwrap_or(Value::Null);
        data["author"] = author;
    }
    serde_json::from_value(data)
        .map_err(|e| PluginError::Invalid(format!("Failed to parse manifest {shown}: {e}")))
}

/// `skills/` (non-recursive: `<name>/SKILL.md` and `*.md` files), or a
/// root `SKILL.md` when there is no `skills/`; names are not held to the
/// AgentSkills rule.
fn load_skills(dir: &Path, problems: &mut Vec<String>) -> Vec<Skill> {
    let skills_dir = dir.join("skills");
    if skills_dir.symlink_metadata().is_ok() {
        if !within(&skills_dir, dir) || !skills_dir.is_dir() {
            return Vec::new();
        }
        let mut files = Vec::new();
        for entry in sorted_entries(&skills_dir) {
            if entry.is_dir() {
                if let Some(md) = find_skill_md(&entry) {
                    files.push(md);
                }
            } else if entry.extension().is_some_and(|e| e == "md") && !is_readme(&entry) {
                files.push(entry);
            }
        }
        let mut out: Vec<Skill> = Vec::new();
        for f in files.into_iter().filter(|f| within(f, dir)) {
            match load_skill_file_with(&f, Some(&skills_dir), false) {
                Ok(s) if out.iter().any(|o| o.name == s.name) => {
                    tracing::debug!(skill = %s.name, "duplicate plugin skill skipped");
                }
                Ok(s) => out.push(contained(s, dir)),
                Err(e) => problems.push(e.to_string()),
            }
        }
        return out;
    }
    match find_skill_md(dir).filter(|p| within(p, dir)) {
        Some(md) => match load_skill_file_with(&md, Some(dir), false) {
            Ok(mut s) => {
                // The plugin's own .mcp.json is its MCP configuration.
                s.mcp_tools = None;
                vec![contained(s, dir)]
            }
            Err(e) => {
                problems.push(e.to_string());
                Vec::new()
            }
        },
        None => Vec::new(),
    }
}

fn find_skill_md(dir: &Path) -> Option<PathBuf> {
    sorted_entries(dir).into_iter().find(|p| {
        p.is_file()
            && p.file_name()
                .is_some_and(|n| n.eq_ignore_ascii_case("skill.md"))
    })
}

/// Drops resource files that resolve outside the plugin.
fn contained(mut s: Skill, dir: &Path) -> Skill {
    if let Some(res) = s.resources.as_mut() {
        let root = PathBuf::from(&res.skill_root);
        for (kind, files) in [
            ("scripts", &mut res.scripts),
            ("references", &mut res.references),
            ("assets", &mut res.assets),
        ] {
            files.retain(|f| within(&root.join(kind).join(f), dir));
        }
        if res.scripts.is_empty() && res.references.is_empty() && res.assets.is_empty() {
            s.resources = None;
        }
    }
    s
}

fn load_hooks(dir: &Path, problems: &mut Vec<String>) -> Option<HookConfig> {
    let path = dir.join("hooks").join("hooks.json");
    if !path.exists() || !within(&path, dir) {
        return None;
    }
    let parsed = std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str::<Value>(&t).map_err(|e| e.to_string()))
        .and_then(|v| HookConfig::from_value(&v).map_err(|e| e.to_string()));
    match parsed {
        Ok(c) => Some(c),
        Err(e) => {
            problems.push(format!("Failed to load hooks from {}: {e}", path.display()));
            None
        }
    }
}

/// Replaces `${SKILL_ROOT}` in every string of `v`.
fn expand_root(v: &mut Value, root: &str) {
    match v {
        Value::String(s) if s.contains("${SKILL_ROOT}") => {
            *s = s.replace("${SKILL_ROOT}", root);
        }
        Value::Array(items) => items.iter_mut().for_each(|i| expand_root(i, root)),
        Value::Object(m) => m.values_mut().for_each(|i| expand_root(i, root)),
        _ => {}
    }
}

/// `.mcp.json`'s `mcpServers`, with `${SKILL_ROOT}` expanded (other
/// placeholders wait for the conversation's secrets).
fn load_mcp(dir: &Path, problems: &mut Vec<String>) -> Map<String, Value> {
    let path = dir.join(".mcp.json");
    if !path.exists() || !within(&path, dir) {
        return Map::new();
    }
    let fail = |e: String| format!("Failed to load MCP config from {}: {e}", path.display());
    let value = std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str::<Value>(&t).map_err(|e| e.to_string()));
    let mut servers = match value {
        Ok(Value::Object(mut m)) => match m.remove("mcpServers") {
            Some(Value::Object(s)) => s,
            Some(_) => {
                problems.push(fail("mcpServers must be an object".into()));
                return Map::new();
            }
            None => Map::new(),
        },
        Ok(_) => {
            problems.push(fail("expected a JSON object".into()));
            return Map::new();
        }
        Err(e) => {
            problems.push(fail(e));
            return Map::new();
        }
    };
    let root = dir.to_string_lossy().into_owned();
    servers.values_mut().for_each(|v| expand_root(v, &root));
    // A server the MCP layer would refuse is left out alone, so it cannot
    // stop the agent's other servers from starting.
    servers.retain(|name, server| {
        let mut one = Map::new();
        one.insert(name.clone(), server.clone());
        match openhands_mcp::McpConfig::from_agent_map(&one) {
            Ok(_) => true,
            Err(e) => {
                problems.push(fail(e.to_string()));
                false
            }
        }
    });
    servers
}

fn md_files(dir: &Path, root: &Path) -> Vec<PathBuf> {
    sorted_entries(dir)
        .into_iter()
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .is_some_and(|e| e.to_string_lossy().eq_ignore_ascii_case("md"))
                && !is_readme(p)
                && within(p, root)
        })
        .collect()
}

fn load_agents(dir: &Path, problems: &mut Vec<String>) -> Vec<AgentDefinition> {
    let agents_dir = dir.join("agents");
    if !agents_dir.is_dir() || !within(&agents_dir, dir) {
        return Vec::new();
    }
    md_files(&agents_dir, dir)
        .into_iter()
        .filter_map(|p| match AgentDefinition::load(&p) {
            Ok(d) => Some(d),
            Err(e) => {
                problems.push(format!("Failed to load agent from {}: {e}", p.display()));
                None
            }
        })
        .collect()
}

fn load_commands(dir: &Path, problems: &mut Vec<String>) -> Vec<CommandDefinition> {
    let commands_dir = dir.join("commands");
    if !commands_dir.is_dir() || !within(&commands_dir, dir) {
        return Vec::new();
    }
    md_files(&commands_dir, dir)
        .into_iter()
        .filter_map(|p| match CommandDefinition::load(&p) {
            Ok(c) => Some(c),
            Err(e) => {
                problems.push(format!("Failed to load command from {}: {e}", p.display()));
                None
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "load_tests.rs"]
mod tests;
