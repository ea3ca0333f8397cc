//! Merging plugins into what a conversation runs with, in the reference's
//! order: the auto-loaded marketplace skills (lowest), then the plugins of
//! the auto-loading marketplaces and the explicit plugins in order. Skills
//! are replaced by name (the later plugin wins), MCP servers by name,
//! hooks and agent definitions are concatenated. A source that cannot be
//! fetched or loaded is reported and left out; the others still apply.

use super::load;
use super::marketplace::{Marketplace, MarketplaceRegistration};
use super::source::{self, FetchSettings, PluginSource, ResolvedPluginSource};
use super::types::Plugin;
use crate::hooks::HookConfig;
use crate::skills::{Skill, skills_of};
use crate::subagent::AgentDefinition;
use serde_json::{Map, Value};

/// What loading the plugins gave.
#[derive(Debug, Default)]
pub struct Applied {
    /// The agent context with the plugins' skills (`None` when unchanged).
    pub agent_context: Option<Value>,
    /// The MCP servers with the plugins' (`None` when unchanged).
    pub mcp_config: Option<Map<String, Value>>,
    /// The plugins' hooks, concatenated.
    pub hooks: Option<HookConfig>,
    /// The plugins' agent definitions.
    pub agents: Vec<AgentDefinition>,
    /// The explicit sources with the commits they resolved to.
    pub resolved: Vec<ResolvedPluginSource>,
    /// The plugins loaded.
    pub plugins: Vec<Plugin>,
    /// What was left out, each naming its source or file.
    pub problems: Vec<String>,
}

/// The agent's MCP servers as a flat name → server map.
fn servers_of(mcp: &Map<String, Value>) -> Map<String, Value> {
    match mcp.get("mcpServers") {
        Some(Value::Object(inner)) => inner.clone(),
        Some(_) => Map::new(),
        None => mcp.clone(),
    }
}

fn put_skill(skills: &mut Vec<Skill>, s: Skill) {
    match skills.iter_mut().find(|x| x.name == s.name) {
        Some(slot) => {
            tracing::warn!(skill = %s.name, "plugin skill overrides an existing skill");
            *slot = s;
        }
        None => skills.push(s),
    }
}

/// Fetches and loads one source (blocking: git runs on the hooks' runtime).
pub fn fetch_and_load(
    spec: &PluginSource,
    settings: &FetchSettings,
) -> Result<(load::LoadedPlugin, Option<String>), super::types::PluginError> {
    let (path, resolved) = source::fetch_blocking(spec, settings)?;
    let loaded = load::load(&path)?;
    Ok((loaded, resolved))
}

/// Loads `registrations`' auto-loaded content, `plugins`, then the
/// `ambient` plugins whose names were not loaded explicitly, into `ctx` and
/// `mcp`. Blocking (reads files, may run git).
pub fn apply(
    plugins: &[PluginSource],
    registrations: &[MarketplaceRegistration],
    ambient: Vec<load::LoadedPlugin>,
    ctx: Option<&Value>,
    mcp: &Map<String, Value>,
    settings: &FetchSettings,
) -> Applied {
    let mut out = Applied::default();
    let mut skills = skills_of(ctx);
    let mut servers = servers_of(mcp);
    let mut hooks: Vec<HookConfig> = Vec::new();
    let mut skills_changed = false;
    let mut mcp_changed = false;
    let mut to_load: Vec<(PluginSource, bool)> = Vec::new();

    for reg in registrations
        .iter()
        .filter(|r| super::marketplace::any_auto_load(std::slice::from_ref(*r)))
    {
        let market = source::fetch_blocking(&reg.plugin_source(), settings)
            .and_then(|(dir, _)| Marketplace::load(&dir, &reg.name));
        let market = match market {
            Ok(m) => m,
            Err(e) => {
                out.problems.push(format!(
                    "Failed to load marketplace '{}'; continuing without it: {e}",
                    reg.name
                ));
                continue;
            }
        };
        for entry in market
            .plugins
            .iter()
            .filter(|e| reg.auto_load.includes(&e.name))
        {
            match market.plugin_source(entry) {
                Ok(s) => to_load.push((s, false)),
                Err(e) => out.problems.push(e.to_string()),
            }
        }
        // Standalone skills rank below plugins and the context's own skills.
        for s in market.auto_skills(&reg.auto_load, settings, &mut out.problems) {
            if !skills.iter().any(|x| x.name == s.name) {
                skills.push(s);
                skills_changed = true;
            }
        }
    }
    to_load.extend(plugins.iter().cloned().map(|p| (p, true)));

    let mut loaded_all: Vec<load::LoadedPlugin> = Vec::new();
    for (spec, explicit) in to_load {
        let (loaded, resolved) = match fetch_and_load(&spec, settings) {
            Ok(x) => x,
            Err(e) => {
                out.problems.push(format!(
                    "Plugin {} not loaded: {e}",
                    source::redact(&spec.source)
                ));
                continue;
            }
        };
        if explicit {
            out.resolved.push(ResolvedPluginSource {
                source: source::redact(&spec.source),
                resolved_ref: resolved,
                repo_path: spec.repo_path.clone(),
                original_ref: spec.git_ref.clone(),
            });
        }
        loaded_all.push(loaded);
    }
    // Explicitly attached plugins win over ambient ones of the same name.
    for a in ambient {
        if !loaded_all
            .iter()
            .any(|l| l.plugin.name() == a.plugin.name())
        {
            loaded_all.push(a);
        }
    }

    for loaded in loaded_all {
        out.problems.extend(loaded.problems);
        let plugin = loaded.plugin;
        for s in plugin.all_skills() {
            put_skill(&mut skills, s);
            skills_changed = true;
        }
        for (name, server) in &plugin.mcp_config {
            if servers.insert(name.clone(), server.clone()).is_some() {
                tracing::warn!(server = %name, "plugin MCP server overrides an existing server");
            }
            mcp_changed = true;
        }
        if let Some(h) = plugin.hooks.as_ref().filter(|h| !h.is_empty()) {
            hooks.push(h.clone());
        }
        out.agents.extend(plugin.agents.iter().cloned());
        tracing::info!(plugin = %plugin.name(), skills = plugin.skills.len(), "plugin loaded");
        out.plugins.push(plugin);
    }

    if skills_changed {
        let mut ctx = match ctx {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        ctx.insert(
            "skills".into(),
            Value::Array(
                skills
                    .iter()
                    .filter_map(|s| serde_json::to_value(s).ok())
                    .collect(),
            ),
        );
        out.agent_context = Some(Value::Object(ctx));
    }
    if mcp_changed {
        out.mcp_config = Some(servers);
    }
    out.hooks = HookConfig::merge(hooks);
    out
}

/// The skills the auto-loading `registrations` bring (the `/api/skills`
/// listing's `registered_marketplaces` tier): per marketplace its selected
/// standalone skills, then its selected plugins' skills (commands
/// included), a later skill replacing a same-named one. Blocking.
pub fn marketplace_skills(
    registrations: &[MarketplaceRegistration],
    settings: &FetchSettings,
    problems: &mut Vec<String>,
) -> Vec<Skill> {
    let mut out: Vec<Skill> = Vec::new();
    let put = |out: &mut Vec<Skill>, s: Skill| match out.iter_mut().find(|x| x.name == s.name) {
        Some(slot) => *slot = s,
        None => out.push(s),
    };
    for reg in registrations
        .iter()
        .filter(|r| super::marketplace::any_auto_load(std::slice::from_ref(*r)))
    {
        let market = source::fetch_blocking(&reg.plugin_source(), settings)
            .and_then(|(dir, _)| Marketplace::load(&dir, &reg.name));
        let market = match market {
            Ok(m) => m,
            Err(e) => {
                problems.push(format!("Failed to load marketplace '{}': {e}", reg.name));
                continue;
            }
        };
        for s in market.auto_skills(&reg.auto_load, settings, problems) {
            put(&mut out, s);
        }
        for entry in market
            .plugins
            .iter()
            .filter(|e| reg.auto_load.includes(&e.name))
        {
            let loaded = market
                .plugin_source(entry)
                .and_then(|spec| fetch_and_load(&spec, settings));
            match loaded {
                Ok((l, _)) => l
                    .plugin
                    .all_skills()
                    .into_iter()
                    .for_each(|s| put(&mut out, s)),
                Err(e) => problems.push(format!(
                    "Failed to load plugin '{}' from marketplace '{}': {e}",
                    entry.name, reg.name
                )),
            }
        }
    }
    out
}
