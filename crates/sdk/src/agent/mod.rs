//! The agent: an immutable configuration (LLM, tools, prompt settings) and
//! the logic that turns model replies into actions.
//!
//! [`Agent`] is shared by conversations; per conversation it is
//! *materialised* into an [`AgentRuntime`] holding that conversation's tool
//! instances (a terminal session belongs to one conversation), the rendered
//! system prompt and the tool schemas sent to the model.

pub mod prompt;
pub mod schema;

use crate::builtins::builtin_by_class;
use crate::condenser::Condenser;
use crate::skills::invoke::InvokeSkillTool;
use crate::tool::{Tool, ToolEnv, ToolError, ToolRegistry};
use openhands_llm::{Llm, LlmError, ToolSchema};
use openhands_wire::agent::AgentSpec;
use openhands_wire::tool::ToolDefinition;
use regex::Regex;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Class name of the `invoke_skill` tool in `include_default_tools`; added
/// automatically when an AgentSkills skill may be invoked.
pub const INVOKE_SKILL_CLASS: &str = "InvokeSkillTool";

/// Errors while setting up an agent.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// A tool could not be created.
    #[error("tool setup failed: {0}")]
    Tool(#[from] ToolError),
    /// The LLM configuration is unusable.
    #[error(transparent)]
    Llm(#[from] LlmError),
    /// The system prompt could not be rendered.
    #[error(transparent)]
    Prompt(#[from] prompt::PromptError),
    /// The condenser configuration is invalid.
    #[error(transparent)]
    Condenser(#[from] crate::condenser::CondenserError),
    /// `filter_tools_regex` is not a valid regex.
    #[error("invalid filter_tools_regex: {0}")]
    Filter(String),
    /// Two tools share a name.
    #[error("duplicate tool name '{0}'")]
    DuplicateTool(String),
}

/// An agent: configuration plus the LLM client and the tool registry used to
/// build per-conversation tools.
#[derive(Clone)]
pub struct Agent {
    spec: AgentSpec,
    llm: Llm,
    registry: ToolRegistry,
    extra_tools: Vec<Arc<dyn Tool>>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("model", &self.spec.llm.model)
            .field("tools", &self.spec.tools)
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// An agent for `spec`, creating the LLM client from `spec.llm`.
    pub fn new(spec: AgentSpec, registry: ToolRegistry) -> Result<Self, AgentError> {
        let llm = Llm::new(spec.llm.clone())?;
        Ok(Self::with_llm(spec, llm, registry))
    }

    /// An agent using an existing LLM client (e.g. one with a scripted backend).
    pub fn with_llm(spec: AgentSpec, llm: Llm, registry: ToolRegistry) -> Self {
        Self {
            spec,
            llm,
            registry,
            extra_tools: Vec::new(),
        }
    }

    /// Adds a tool instance offered in addition to the spec's tools.
    pub fn with_tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.extra_tools.push(tool);
        self
    }

    /// The configuration.
    pub fn spec(&self) -> &AgentSpec {
        &self.spec
    }

    /// The LLM client.
    pub fn llm(&self) -> &Llm {
        &self.llm
    }

    /// The tool registry.
    pub fn registry(&self) -> &ToolRegistry {
        &self.registry
    }

    /// A copy of this agent with another agent context (skills resolved for
    /// a conversation); same LLM and tools.
    pub fn with_agent_context(&self, agent_context: Option<serde_json::Value>) -> Self {
        let mut a = self.clone();
        a.spec.agent_context = agent_context;
        a
    }

    /// A copy of this agent using another LLM (same tools and settings).
    pub fn with_swapped_llm(&self, llm: Llm) -> Self {
        let mut spec = self.spec.clone();
        spec.llm = llm.config().clone();
        Self {
            spec,
            llm,
            registry: self.registry.clone(),
            extra_tools: self.extra_tools.clone(),
        }
    }

    /// Builds the per-conversation runtime: tools (spec tools in order, extra
    /// instances, then default built-ins), filtered by `filter_tools_regex`.
    pub fn materialize(&self, env: &ToolEnv) -> Result<AgentRuntime, AgentError> {
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        for spec in &self.spec.tools {
            tools.extend(self.registry.resolve(&spec.name, &spec.params, env)?);
        }
        tools.extend(self.extra_tools.iter().cloned());
        let skills = crate::skills::skills_of(self.spec.agent_context.as_ref());
        let mut defaults = self.spec.include_default_tools.clone();
        if skills
            .iter()
            .any(|s| s.is_agentskills_format && !s.disable_model_invocation)
            && !defaults.iter().any(|d| d == INVOKE_SKILL_CLASS)
        {
            defaults.push(INVOKE_SKILL_CLASS.to_string());
        }
        for class in &defaults {
            if class == INVOKE_SKILL_CLASS || class == "invoke_skill" {
                tools.push(Arc::new(
                    InvokeSkillTool::new(skills.clone(), env.working_dir.clone())
                        .with_exec(env.exec.clone()),
                ));
                continue;
            }
            match builtin_by_class(class) {
                Some(t) => tools.push(t),
                None => tracing::warn!(tool = %class, "unknown default tool ignored"),
            }
        }
        if let Some(re) = &self.spec.filter_tools_regex {
            let re = Regex::new(re).map_err(|e| AgentError::Filter(e.to_string()))?;
            tools.retain(|t| re.is_match(t.name()));
        }
        let mut by_name = BTreeMap::new();
        for t in &tools {
            if by_name.insert(t.name().to_string(), t.clone()).is_some() {
                return Err(AgentError::DuplicateTool(t.name().to_string()));
            }
        }
        let with_risk = prompt::wants_security_risk(&self.spec);
        let schemas = tools
            .iter()
            .map(|t| ToolSchema {
                name: t.name().to_string(),
                description: t.description(),
                parameters: schema::augment_parameters(
                    t.parameters_schema(),
                    with_risk && !t.annotations().read_only_hint,
                ),
            })
            .collect();
        let definitions = tools.iter().map(|t| t.definition()).collect();
        let system_prompt = prompt::render_system_prompt(&self.spec)?;
        let condenser = match &self.spec.condenser {
            Some(c) if !c.is_null() => Some(Condenser::from_json(c, &self.llm)?),
            _ => None,
        };
        Ok(AgentRuntime {
            condenser,
            order: tools.iter().map(|t| t.name().to_string()).collect(),
            tools: by_name,
            schemas,
            definitions,
            system_prompt,
        })
    }
}

/// The tools and prompt of an agent inside one conversation.
#[derive(Clone)]
pub struct AgentRuntime {
    condenser: Option<Condenser>,
    order: Vec<String>,
    tools: BTreeMap<String, Arc<dyn Tool>>,
    schemas: Vec<ToolSchema>,
    definitions: Vec<ToolDefinition>,
    system_prompt: String,
}

impl AgentRuntime {
    /// A tool by name.
    pub fn tool(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// Tool names in the order offered.
    pub fn tool_names(&self) -> &[String] {
        &self.order
    }

    /// Schemas sent to the model.
    pub fn schemas(&self) -> &[ToolSchema] {
        &self.schemas
    }

    /// Definitions recorded in the `SystemPromptEvent`.
    pub fn definitions(&self) -> &[ToolDefinition] {
        &self.definitions
    }

    /// The static system prompt.
    pub fn system_prompt(&self) -> &str {
        &self.system_prompt
    }

    /// The condenser, when the agent has one.
    pub fn condenser(&self) -> Option<&Condenser> {
        self.condenser.as_ref()
    }

    /// Closes every tool (kills sessions).
    pub async fn close(&self) {
        for t in self.tools.values() {
            t.close().await;
        }
    }
}
