//! The registry of agents a conversation can delegate to: programmatic
//! registrations (`register_agent`, never overwritten), definitions given
//! by the client, project and user files, then built-ins — each registered
//! only when its name is still free, so the first source wins.

use super::definition::{AgentDefinition, INHERIT_MODEL};
use super::error::SubAgentError;
use crate::agent::Agent;
use crate::tool::ToolRegistry;
use openhands_llm::Llm;
use openhands_wire::agent::AgentSpec;
use openhands_wire::tool::ToolSpec;
use parking_lot::RwLock;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Name used when a delegation names no agent type.
pub const DEFAULT_AGENT: &str = "general-purpose";

/// Old names still accepted, as the reference maps them.
const DEPRECATED_NAMES: &[(&str, &str)] = &[
    ("default", DEFAULT_AGENT),
    ("default cli mode", DEFAULT_AGENT),
    ("explore", "code-explorer"),
    ("bash", "bash-runner"),
];

/// What a factory gets to build a sub-agent.
#[derive(Clone)]
pub struct FactoryInput {
    /// The delegating agent's LLM (same backend, fresh metrics).
    pub llm: Llm,
    /// The delegating agent's tool registry.
    pub tools: ToolRegistry,
    /// The workspace (for resolving project skills).
    pub work_dir: PathBuf,
    /// The user's home (for user skills and profiles).
    pub home: Option<PathBuf>,
}

/// Builds the agent of one sub-agent.
pub type AgentFactory = Arc<dyn Fn(&FactoryInput) -> Result<Agent, SubAgentError> + Send + Sync>;

/// One registered agent: its definition (what the model is told) and its factory.
#[derive(Clone)]
pub struct RegisteredAgent {
    /// The definition.
    pub definition: AgentDefinition,
    /// The factory.
    pub factory: AgentFactory,
}

#[derive(Default)]
struct State {
    agents: BTreeMap<String, RegisteredAgent>,
    builtins: Vec<AgentDefinition>,
}

/// Agents available for delegation. Cheap to clone (shared).
#[derive(Clone, Default)]
pub struct AgentRegistry {
    state: Arc<RwLock<State>>,
    discovered: Arc<AtomicBool>,
}

impl std::fmt::Debug for AgentRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.state.read().agents.keys())
            .finish()
    }
}

impl AgentRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Built-in definitions, registered after the files by
    /// [`AgentRegistry::discover`] (lowest precedence).
    pub fn with_builtins(self, builtins: Vec<AgentDefinition>) -> Self {
        self.state.write().builtins = builtins;
        self
    }

    /// Registers an agent; fails when the name is taken.
    pub fn register_agent(
        &self,
        name: &str,
        factory: AgentFactory,
        definition: AgentDefinition,
    ) -> Result<(), SubAgentError> {
        if self.register_agent_if_absent(name, factory, definition) {
            Ok(())
        } else {
            Err(SubAgentError::Invalid(format!(
                "Agent '{name}' already registered"
            )))
        }
    }

    /// Registers an agent unless the name is taken; returns whether it was.
    pub fn register_agent_if_absent(
        &self,
        name: &str,
        factory: AgentFactory,
        definition: AgentDefinition,
    ) -> bool {
        let mut s = self.state.write();
        if s.agents.contains_key(name) {
            return false;
        }
        s.agents.insert(
            name.to_string(),
            RegisteredAgent {
                definition,
                factory,
            },
        );
        true
    }

    /// Registers a definition (its factory built by [`definition_factory`])
    /// unless its name is taken.
    pub fn register_definition(&self, definition: AgentDefinition) -> bool {
        let name = definition.name.clone();
        let factory = definition_factory(definition.clone());
        self.register_agent_if_absent(&name, factory, definition)
    }

    /// Registers a plugin's definition: it replaces a file-based or
    /// built-in definition of the same name (plugins rank above files,
    /// below programmatic and client registrations). Returns whether it
    /// was registered.
    pub fn register_plugin_definition(&self, mut definition: AgentDefinition) -> bool {
        let name = definition.name.clone();
        let mut s = self.state.write();
        let replaceable = s.agents.get(&name).is_none_or(|a| {
            matches!(
                a.definition.level.as_deref(),
                Some("project" | "user" | "builtin")
            )
        });
        if !replaceable {
            return false;
        }
        definition.level = Some("plugin".into());
        s.agents.insert(
            name,
            RegisteredAgent {
                factory: definition_factory(definition.clone()),
                definition,
            },
        );
        true
    }

    /// Once per registry: registers the project's and the user's file
    /// definitions, then the built-ins, each only where the name is free.
    pub fn discover(&self, work_dir: &Path, home: Option<&Path>) {
        if self.discovered.swap(true, Ordering::SeqCst) {
            return;
        }
        for def in super::load::discover_agents(Some(work_dir), home, true, true) {
            self.register_definition(def);
        }
        let builtins = self.state.read().builtins.clone();
        for mut def in builtins {
            def.level = Some("builtin".into());
            self.register_definition(def);
        }
    }

    /// The agent registered as `name` (empty → `general-purpose`; the
    /// reference's deprecated names are mapped).
    pub fn get(&self, name: Option<&str>) -> Result<RegisteredAgent, SubAgentError> {
        let requested = name.map(str::trim).filter(|n| !n.is_empty());
        let key = match requested {
            None => DEFAULT_AGENT,
            Some(n) => DEPRECATED_NAMES
                .iter()
                .find(|(old, _)| *old == n)
                .map_or(n, |(_, new)| *new),
        };
        let s = self.state.read();
        if let Some(a) = s.agents.get(key) {
            return Ok(a.clone());
        }
        let available = if s.agents.is_empty() {
            "none registered".to_string()
        } else {
            s.agents.keys().cloned().collect::<Vec<_>>().join(", ")
        };
        Err(SubAgentError::UnknownAgent(format!(
            "Unknown agent '{}'. Available types: {available}. \
             Use register_agent() to add custom agent types.",
            requested.unwrap_or(DEFAULT_AGENT)
        )))
    }

    /// Definitions of every registered agent, by name.
    pub fn definitions(&self) -> Vec<AgentDefinition> {
        self.state
            .read()
            .agents
            .values()
            .map(|a| a.definition.clone())
            .collect()
    }

    /// One line per agent (`- **name**: description (tools: ...)`), for
    /// tool descriptions.
    pub fn factory_info(&self) -> String {
        self.factory_info_where(|_| true)
            .unwrap_or_else(|| "- No agents registered yet.".into())
    }

    /// [`AgentRegistry::factory_info`] of the agents whose definitions
    /// `include` accepts; `None` when it accepts none.
    pub fn factory_info_where(&self, include: impl Fn(&AgentDefinition) -> bool) -> Option<String> {
        let s = self.state.read();
        let lines: Vec<String> = s
            .agents
            .iter()
            .filter(|(_, a)| include(&a.definition))
            .map(|(name, a)| {
                let tools = if a.definition.tools.is_empty() {
                    String::new()
                } else {
                    format!(" (tools: {})", a.definition.tools.join(", "))
                };
                format!("- **{name}**: {}{tools}", a.definition.description)
            })
            .collect();
        (!lines.is_empty()).then(|| lines.join("\n"))
    }
}

/// The factory of a definition: the parent's LLM for `model: inherit`
/// (else the named LLM profile), the definition's tools (each must be
/// registered), its body as the system-prompt suffix with its skills, its
/// condenser.
pub fn definition_factory(def: AgentDefinition) -> AgentFactory {
    Arc::new(move |input: &FactoryInput| build_agent(&def, input))
}

fn build_agent(def: &AgentDefinition, input: &FactoryInput) -> Result<Agent, SubAgentError> {
    let llm = if def.model.is_empty() || def.model == INHERIT_MODEL {
        input.llm.clone()
    } else {
        profile_llm(def, input)?
    };
    let mut tools = Vec::new();
    for name in &def.tools {
        if !input.tools.contains(name) {
            return Err(SubAgentError::Invalid(format!(
                "Tool '{name}' not registered but was given to agent {}.",
                def.name
            )));
        }
        tools.push(ToolSpec::named(name.clone()));
    }
    let skills = resolve_skills(def, input)?;
    let mut spec = AgentSpec::new(llm.config().clone(), tools);
    if !def.system_prompt.is_empty() || !skills.is_empty() {
        let suffix = if def.system_prompt.is_empty() {
            Value::Null
        } else {
            json!(def.system_prompt)
        };
        spec.agent_context = Some(json!({
            "system_message_suffix": suffix,
            "skills": skills,
        }));
    }
    spec.condenser = sub_agent_condenser(def.condenser.as_ref(), &llm);
    Ok(Agent::with_llm(spec, llm, input.tools.clone()))
}

/// Usage id of a sub-agent's condenser LLM when it would otherwise share
/// the agent's (its tokens would then be counted as the agent's).
pub const CONDENSER_USAGE_ID: &str = "condenser";

/// Events a sub-agent's default condenser keeps before summarising (the
/// reference's standard summarizing condenser).
const DEFAULT_MAX_SIZE: usize = 80;

/// Leading events the default condenser never summarises.
const DEFAULT_KEEP_FIRST: usize = 4;

/// The condenser of a sub-agent, as the reference builds it: the
/// definition's own (an `LLMSummarizingCondenser` whose LLM has the agent's
/// usage id gets [`CONDENSER_USAGE_ID`] instead), else the standard
/// summarizing condenser on the sub-agent's LLM, so deep sub-agent runs
/// compact instead of overflowing the context. `NoOpCondenser` turns it
/// off. The LLM's secrets stay redacted here; the condenser takes them
/// from the agent's LLM when it is built.
fn sub_agent_condenser(def: Option<&Value>, llm: &Llm) -> Option<Value> {
    match def.filter(|c| !c.is_null()) {
        Some(condenser) => {
            let mut condenser = condenser.clone();
            let summarizing =
                condenser.get("kind").and_then(Value::as_str) == Some("LLMSummarizingCondenser");
            if summarizing
                && let Some(cond_llm) = condenser.get_mut("llm").and_then(Value::as_object_mut)
                && cond_llm.get("usage_id").and_then(Value::as_str) == Some(llm.usage_id())
            {
                cond_llm.insert("usage_id".into(), json!(CONDENSER_USAGE_ID));
            }
            Some(condenser)
        }
        None => {
            let mut config = serde_json::to_value(llm.config()).ok()?;
            if let Some(m) = config.as_object_mut() {
                m.insert("usage_id".into(), json!(CONDENSER_USAGE_ID));
            }
            Some(json!({
                "kind": "LLMSummarizingCondenser",
                "llm": config,
                "max_size": DEFAULT_MAX_SIZE,
                "keep_first": DEFAULT_KEEP_FIRST,
            }))
        }
    }
}

fn profile_llm(def: &AgentDefinition, input: &FactoryInput) -> Result<Llm, SubAgentError> {
    let dir = match (&def.profile_store_dir, &input.home) {
        (Some(d), _) => PathBuf::from(d),
        (None, Some(h)) => crate::profiles::LlmProfileStore::default_dir(h),
        (None, None) => {
            return Err(SubAgentError::Invalid(format!(
                "Profile {} not found: no profile store directory",
                def.model
            )));
        }
    };
    let store = crate::profiles::LlmProfileStore::new(dir, None);
    let name = def.model.trim_end_matches(".json");
    let config = store.load(name).map_err(|e| {
        SubAgentError::Invalid(format!(
            "Profile {} not found in profile store: {e}",
            def.model
        ))
    })?;
    Llm::new(config).map_err(|e| SubAgentError::Invalid(e.to_string()))
}

fn resolve_skills(
    def: &AgentDefinition,
    input: &FactoryInput,
) -> Result<Vec<Value>, SubAgentError> {
    if def.skills.is_empty() {
        return Ok(Vec::new());
    }
    let mut available = crate::skills::discover::load_project_skills(&input.work_dir).skills;
    if let Some(h) = &input.home {
        available.extend(crate::skills::discover::load_user_skills(h).skills);
    }
    def.skills
        .iter()
        .map(|name| {
            available
                .iter()
                .find(|s| &s.name == name)
                .map(|s| serde_json::to_value(s).unwrap_or(Value::Null))
                .ok_or_else(|| {
                    SubAgentError::Invalid(format!(
                        "Skill '{name}' not found but was given to agent '{}'.",
                        def.name
                    ))
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llm() -> Llm {
        let mut config = openhands_wire::LlmConfig::new("openai/sub-model");
        config.usage_id = "agent".into();
        config.api_key = Some("sk-sub".into());
        Llm::new(config).unwrap()
    }

    #[test]
    fn a_sub_agent_without_a_condenser_gets_the_standard_summarizing_one() {
        let c = sub_agent_condenser(None, &llm()).unwrap();
        assert_eq!(c["kind"], "LLMSummarizingCondenser");
        assert_eq!(c["max_size"], 80);
        assert_eq!(c["keep_first"], 4);
        assert_eq!(c["llm"]["model"], "openai/sub-model");
        assert_eq!(c["llm"]["usage_id"], CONDENSER_USAGE_ID);
        assert!(
            !c.to_string().contains("sk-sub"),
            "secrets stay redacted: {c}"
        );
        // It builds into a summarizing condenser on the agent's LLM.
        let built = crate::condenser::Condenser::from_json(&c, &llm()).unwrap();
        assert_eq!(built.llm().unwrap().usage_id(), CONDENSER_USAGE_ID);
    }

    #[test]
    fn a_definitions_condenser_is_kept_with_a_usage_id_of_its_own() {
        let off = json!({"kind": "NoOpCondenser"});
        assert_eq!(sub_agent_condenser(Some(&off), &llm()), Some(off));
        let shared = json!({"kind": "LLMSummarizingCondenser", "max_size": 10,
                            "llm": {"model": "openai/x", "usage_id": "agent"}});
        let c = sub_agent_condenser(Some(&shared), &llm()).unwrap();
        assert_eq!(c["llm"]["usage_id"], CONDENSER_USAGE_ID);
        assert_eq!(c["max_size"], 10);
        let own = json!({"kind": "LLMSummarizingCondenser",
                         "llm": {"model": "openai/x", "usage_id": "summary"}});
        assert_eq!(sub_agent_condenser(Some(&own), &llm()), Some(own));
        assert_eq!(
            sub_agent_condenser(Some(&Value::Null), &llm()).unwrap()["kind"],
            "LLMSummarizingCondenser"
        );
    }

    #[test]
    fn plugin_definitions_rank_above_files_and_below_registrations() {
        let r = AgentRegistry::new();
        let mut file = AgentDefinition::named("reviewer", "from a file");
        file.level = Some("project".into());
        r.register_definition(file);
        r.register_definition(AgentDefinition::named("client", "from the client"));
        assert!(r.register_plugin_definition(AgentDefinition::named("reviewer", "from a plugin")));
        assert!(!r.register_plugin_definition(AgentDefinition::named("client", "from a plugin")));
        assert!(r.register_plugin_definition(AgentDefinition::named("new-one", "from a plugin")));
        let defs = r.definitions();
        let of = |n: &str| defs.iter().find(|d| d.name == n).unwrap().clone();
        assert_eq!(of("reviewer").description, "from a plugin");
        assert_eq!(of("reviewer").level.as_deref(), Some("plugin"));
        assert_eq!(of("client").description, "from the client");
        assert_eq!(of("new-one").level.as_deref(), Some("plugin"));
    }
}
