//! The agent: an immutable configuration (LLM, tools, prompt settings) and
//! the logic that turns model replies into actions.
//!
//! [`Agent`] is shared by conversations; per conversation it is
//! *materialised* into an [`AgentRuntime`] holding that conversation's tool
//! instances (a terminal session belongs to one conversation), the rendered
//! system prompt and the tool schemas sent to the model.

pub mod prompt;
pub mod schema;
pub mod template_dirs;

use crate::builtins::builtin_by_class;
use crate::client_tool::{ClientTool, ClientToolError, ClientToolSpec, add_client_tools};
use crate::condenser::Condenser;
use crate::response_schema::{ResponseSchema, WithResponseSchema};
use crate::skills::invoke::InvokeSkillTool;
use crate::tool::{Tool, ToolEnv, ToolError, ToolRegistry};
use crate::vision_inspect::{VISION_INSPECT_CLASS, VISION_INSPECT_NAME, VisionInspectTool};
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
    /// A tool's `response_schema` is unusable.
    #[error("invalid response_schema: {0}")]
    ResponseSchema(String),
    /// Client tools cannot be registered.
    #[error(transparent)]
    ClientTool(#[from] ClientToolError),
    /// `mcp_config` is malformed.
    #[error(transparent)]
    Mcp(#[from] openhands_mcp::ConfigError),
}

/// The tools of one `ToolSpec` and the `response_schema` wrapped around
/// them, if any.
type ResolvedSpec = (Vec<Arc<dyn Tool>>, Option<ResponseSchema>);

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

    /// An agent using an existing LLM client (e.g. one with a scripted
    /// backend). A `fallback_strategy` in its configuration loads its
    /// profiles from the user's profile directory unless the LLM already
    /// has a loader.
    pub fn with_llm(spec: AgentSpec, llm: Llm, registry: ToolRegistry) -> Self {
        crate::profiles::fallback::install_default_loader(&llm);
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

    /// A copy of this `ACPAgent` selecting another model (`acp_model`, also
    /// the placeholder LLM's model name, as the reference records it).
    pub fn with_acp_model(mut self, model: &str) -> Self {
        self.spec
            .extra
            .insert("acp_model".into(), serde_json::Value::String(model.into()));
        self.spec.llm.model = model.into();
        self
    }

    /// A copy of this agent with another condenser configuration.
    pub fn with_condenser(mut self, condenser: Option<serde_json::Value>) -> Self {
        self.spec.condenser = condenser;
        self
    }

    /// A copy of this agent with other tool specs (a scoped sub-agent's
    /// delegation tools carry the scope on).
    pub fn with_tool_specs(mut self, tools: Vec<openhands_wire::tool::ToolSpec>) -> Self {
        self.spec.tools = tools;
        self
    }

    /// The names of the tools it uses, as a `sub_agent_scope` compares
    /// them: its tool specs, its default built-ins and its extra instances.
    pub fn scoped_tool_names(&self) -> std::collections::BTreeSet<String> {
        let mut names = crate::subagent::scope::agent_tool_names(&self.spec);
        names.extend(self.extra_tools.iter().map(|t| t.name().to_string()));
        names
    }

    /// A copy of this agent with another MCP server configuration (a
    /// sub-agent inherits its parent's).
    pub fn with_mcp_config(
        mut self,
        mcp_config: serde_json::Map<String, serde_json::Value>,
    ) -> Self {
        self.spec.mcp_config = mcp_config;
        self
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

    /// Builds the per-conversation runtime: tools (spec tools in order and
    /// extra instances, filtered by `filter_tools_regex`, then the default
    /// built-ins, then the MCP servers' tools, filtered too).
    /// The agent's MCP servers, if any, are started here, blocking the
    /// calling thread (see [`Agent::materialize_with`]).
    pub fn materialize(&self, env: &ToolEnv) -> Result<AgentRuntime, AgentError> {
        let mcp = crate::mcp::start_blocking(&self.spec.mcp_config, env)?;
        self.materialize_with(env, mcp)
    }

    /// [`Agent::materialize`] with the agent's MCP servers already started
    /// (`None`: no MCP tools). Their tools follow the built-ins, as in the
    /// reference, and are closed with the runtime.
    pub fn materialize_with(
        &self,
        env: &ToolEnv,
        mcp: Option<crate::mcp::McpStartup>,
    ) -> Result<AgentRuntime, AgentError> {
        let filter = self.tool_filter()?;
        let keep = |t: &Arc<dyn Tool>| filter.as_ref().is_none_or(|re| re.is_match(t.name()));
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        let mut response_schemas = BTreeMap::new();
        for spec in &self.spec.tools {
            let (resolved, schema) = self.resolve_spec(spec, env)?;
            if let (Some(schema), [tool]) = (schema, resolved.as_slice()) {
                response_schemas.insert(tool.name().to_string(), schema);
            }
            tools.extend(resolved);
        }
        tools.extend(self.extra_tools.iter().cloned());
        tools.retain(keep);
        let skills = crate::skills::skills_of(self.spec.agent_context.as_ref());
        let mut defaults = self.spec.include_default_tools.clone();
        if skills
            .iter()
            .any(|s| s.is_agentskills_format && !s.disable_model_invocation)
            && !defaults.iter().any(|d| d == INVOKE_SKILL_CLASS)
        {
            defaults.push(INVOKE_SKILL_CLASS.to_string());
        }
        // A model without vision gets the vision inspector when a saved
        // profile can see images (it offers nothing otherwise).
        if !self.llm.vision_is_active() && !defaults.iter().any(|d| d == VISION_INSPECT_CLASS) {
            defaults.push(VISION_INSPECT_CLASS.to_string());
        }
        for class in &defaults {
            if let Some(t) = crate::switch_llm::by_name(class, env) {
                tools.push(t);
                continue;
            }
            if let Some(t) = crate::route_task::by_spec(class, &serde_json::Map::new(), env) {
                tools.push(t?);
                continue;
            }
            if class == VISION_INSPECT_CLASS || class == VISION_INSPECT_NAME {
                if let Some(tool) = VisionInspectTool::create(env) {
                    tools.push(Arc::new(tool));
                }
                continue;
            }
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
        let mcp_generation = mcp.as_ref().map_or(0, |m| m.client.generation());
        if let Some(m) = &mcp {
            tools.extend(
                crate::mcp::tools_of(&m.client, env)
                    .into_iter()
                    .filter(keep),
            );
        }
        let guidance = prompt::tool_guidance(tools.iter().filter_map(|t| t.prompt_guidance()));
        let system_prompt = prompt::render_system_prompt_with(&self.spec, guidance.as_deref())?;
        let condenser = match &self.spec.condenser {
            Some(c) if !c.is_null() => Some(Condenser::from_json(c, &self.llm)?),
            _ => None,
        };
        let assembled = self
            .assemble(tools, mcp.clone(), mcp_generation, condenser, system_prompt)
            .map(|mut rt| {
                rt.response_schemas = response_schemas;
                rt
            });
        if assembled.is_err()
            && let Some(m) = &mcp
        {
            close_detached(m.client.clone());
        }
        assembled
    }

    /// The tools of one `ToolSpec`: a registered factory, else a client
    /// tool carried in `params.spec`, else a built-in named by class
    /// (`FinishTool`, which takes no parameters). A `response_schema`
    /// parameter wraps the one resulting tool for structured output.
    fn resolve_spec(
        &self,
        spec: &openhands_wire::tool::ToolSpec,
        env: &ToolEnv,
    ) -> Result<ResolvedSpec, AgentError> {
        let mut params = spec.params.clone();
        let response = params.remove(crate::response_schema::PARAM);
        let tools = if self.registry.contains(&spec.name) {
            self.registry.resolve(&spec.name, &params, env)?
        } else if let Some(client) = ClientToolSpec::from_tool_spec(spec) {
            let tool =
                ClientTool::new(client).map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
            vec![Arc::new(tool) as Arc<dyn Tool>]
        } else if let Some(tool) = crate::route_task::by_spec(&spec.name, &params, env) {
            vec![tool?]
        } else if let Some(tool) = crate::switch_llm::by_name(&spec.name, env) {
            if !params.is_empty() {
                return Err(ToolError::InvalidArguments(format!(
                    "Tool '{}' does not accept parameters",
                    spec.name
                ))
                .into());
            }
            vec![tool]
        } else if let Some(builtin) = builtin_by_class(&spec.name) {
            if !params.is_empty() {
                return Err(ToolError::InvalidArguments(format!(
                    "Tool '{}' does not accept parameters",
                    spec.name
                ))
                .into());
            }
            vec![builtin]
        } else {
            self.registry.resolve(&spec.name, &params, env)?
        };
        let Some(schema) = response.filter(|v| !v.is_null()) else {
            return Ok((tools, None));
        };
        let [tool] = <[Arc<dyn Tool>; 1]>::try_from(tools).map_err(|_| {
            AgentError::ResponseSchema(
                "response_schema requires a spec that resolves to exactly one tool".into(),
            )
        })?;
        let schema = ResponseSchema::new(schema).map_err(|e| AgentError::ResponseSchema(e.0))?;
        let wrapped = WithResponseSchema::new(tool, schema.clone())
            .map_err(|e| AgentError::ResponseSchema(e.0))?;
        Ok((vec![Arc::new(wrapped)], Some(schema)))
    }

    /// A copy of this agent offering `specs` as client tools (appended to
    /// its tool list; see [`crate::client_tool::add_client_tools`]).
    pub fn with_client_tools(&self, specs: &[ClientToolSpec]) -> Result<Self, ClientToolError> {
        let mut a = self.clone();
        add_client_tools(&mut a.spec.tools, specs, &self.registry)?;
        Ok(a)
    }

    /// `filter_tools_regex`, matching from the start of a name (Python's
    /// `re.match`). It keeps the spec's and the MCP servers' tools it
    /// matches; the default built-ins are exempt, as in the reference.
    fn tool_filter(&self) -> Result<Option<Regex>, AgentError> {
        match &self.spec.filter_tools_regex {
            Some(re) => Regex::new(&format!("^(?:{re})"))
                .map(Some)
                .map_err(|e| AgentError::Filter(e.to_string())),
            None => Ok(None),
        }
    }

    /// A runtime of `tools` in order, with their schemas and definitions.
    fn assemble(
        &self,
        tools: Vec<Arc<dyn Tool>>,
        mcp: Option<crate::mcp::McpStartup>,
        mcp_generation: u64,
        condenser: Option<Condenser>,
        system_prompt: String,
    ) -> Result<AgentRuntime, AgentError> {
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
        Ok(AgentRuntime {
            mcp,
            mcp_generation,
            condenser,
            order: tools.iter().map(|t| t.name().to_string()).collect(),
            tools: by_name,
            schemas,
            definitions,
            system_prompt,
            response_schemas: BTreeMap::new(),
        })
    }

    /// A runtime for this agent (after its context or MCP servers changed
    /// mid-conversation) that keeps `old`'s tool instances where the name
    /// is the same (a terminal session goes on); MCP tools come from `mcp`
    /// and `invoke_skill` knows the new skills. The static system prompt
    /// stays `old`'s (the log's system prompt is not rewritten). Returns the
    /// runtime and the fresh instances it did not use (to be closed).
    pub fn rebuild_keeping(
        &self,
        old: &AgentRuntime,
        env: &ToolEnv,
        mcp: Option<crate::mcp::McpStartup>,
    ) -> Result<(AgentRuntime, Vec<Arc<dyn Tool>>), AgentError> {
        let fresh = self.materialize_with(env, mcp)?;
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        let mut unused = Vec::new();
        for name in &fresh.order {
            let Some(t) = fresh.tools.get(name) else {
                continue;
            };
            let kept = old
                .tools
                .get(name)
                .filter(|o| o.kind() != crate::mcp::TOOL_KIND && name != "invoke_skill");
            match kept {
                Some(o) => {
                    tools.push(o.clone());
                    unused.push(t.clone());
                }
                None => tools.push(t.clone()),
            }
        }
        let mut rt = self.assemble(
            tools,
            fresh.mcp.clone(),
            fresh.mcp_generation,
            fresh.condenser.clone(),
            old.system_prompt.clone(),
        )?;
        rt.response_schemas = fresh.response_schemas.clone();
        Ok((rt, unused))
    }

    /// `runtime` with its MCP tools replaced by the MCP client's current
    /// ones (after `notifications/tools/list_changed`); every other tool
    /// instance (a terminal session) is kept.
    pub fn refresh_mcp_tools(
        &self,
        runtime: &AgentRuntime,
        env: &ToolEnv,
    ) -> Result<AgentRuntime, AgentError> {
        let Some(m) = &runtime.mcp else {
            return Ok(runtime.clone());
        };
        let filter = self.tool_filter()?;
        let generation = m.client.generation();
        let mut tools: Vec<Arc<dyn Tool>> = runtime
            .order
            .iter()
            .filter_map(|n| runtime.tools.get(n))
            .filter(|t| t.kind() != crate::mcp::TOOL_KIND)
            .cloned()
            .collect();
        tools.extend(
            crate::mcp::tools_of(&m.client, env)
                .into_iter()
                .filter(|t| filter.as_ref().is_none_or(|re| re.is_match(t.name()))),
        );
        let mut refreshed = self.assemble(
            tools,
            runtime.mcp.clone(),
            generation,
            runtime.condenser.clone(),
            runtime.system_prompt.clone(),
        )?;
        refreshed.response_schemas = runtime.response_schemas.clone();
        Ok(refreshed)
    }
}

/// The tools and prompt of an agent inside one conversation.
#[derive(Clone)]
pub struct AgentRuntime {
    mcp: Option<crate::mcp::McpStartup>,
    /// The MCP client's tool generation these tools were built from.
    mcp_generation: u64,
    condenser: Option<Condenser>,
    order: Vec<String>,
    tools: BTreeMap<String, Arc<dyn Tool>>,
    schemas: Vec<ToolSchema>,
    definitions: Vec<ToolDefinition>,
    system_prompt: String,
    /// Tool name → its `response_schema` (structured output).
    response_schemas: BTreeMap<String, ResponseSchema>,
}

impl AgentRuntime {
    /// Replaces the condenser (it follows a switched LLM).
    pub(crate) fn set_condenser(&mut self, condenser: Option<Condenser>) {
        self.condenser = condenser;
    }

    /// A tool by name.
    pub fn tool(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// The `response_schema` of the tool `name`, when it has one.
    pub fn response_schema(&self, name: &str) -> Option<&ResponseSchema> {
        self.response_schemas.get(name)
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

    /// Closes every tool (kills sessions) and stops the MCP servers.
    pub async fn close(&self) {
        for t in self.tools.values() {
            t.close().await;
        }
        if let Some(m) = &self.mcp {
            m.client.close().await;
        }
    }

    /// The MCP servers of this runtime (closed with it).
    pub fn mcp_client(&self) -> Option<&crate::mcp::McpStartup> {
        self.mcp.as_ref()
    }

    /// Whether the MCP servers' tools changed since this runtime was built.
    pub fn mcp_tools_changed(&self) -> bool {
        self.mcp
            .as_ref()
            .is_some_and(|m| m.client.generation() != self.mcp_generation)
    }

    /// The MCP servers that could not be started, for the model (`None`
    /// when all started or there are none).
    pub fn mcp_notice(&self) -> Option<String> {
        self.mcp
            .as_ref()
            .and_then(crate::mcp::McpStartup::failure_notice)
    }

    /// The MCP servers that could not be started.
    pub fn mcp_failures(&self) -> &[openhands_mcp::ServerFailure] {
        self.mcp
            .as_ref()
            .map(|m| m.failures.as_slice())
            .unwrap_or(&[])
    }
}

/// Closes an MCP client nobody will use (on the current runtime when there
/// is one; otherwise its children die with it when dropped).
fn close_detached(client: Arc<dyn openhands_mcp::McpClient>) {
    if let Ok(h) = tokio::runtime::Handle::try_current() {
        h.spawn(async move { client.close().await });
    }
}
