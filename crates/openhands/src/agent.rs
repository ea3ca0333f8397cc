//! [`AgentBuilder`]: an [`Agent`] from an LLM and tool names, the
//! counterpart of the reference's `Agent(llm=..., tools=[Tool(name=...)])`.

use openhands_llm::Llm;
use openhands_sdk::Agent;
use openhands_sdk::tool::{Tool, ToolEnv, ToolRegistry};
use openhands_tools::presets;
use openhands_wire::agent::AgentSpec;
use openhands_wire::tool::ToolSpec;
use serde_json::{Map, Value};
use std::sync::Arc;

/// Why an agent could not be built.
///
/// ```
/// use openhands::{AgentBuildError, AgentBuilder, LlmBuilder};
///
/// let llm = LlmBuilder::new("openai/gpt-5-mini").build().unwrap();
/// let err = AgentBuilder::new(llm).tool("terminal").tool("terminal").build().unwrap_err();
/// assert!(matches!(err, AgentBuildError::DuplicateTool(name) if name == "terminal"));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum AgentBuildError {
    /// A setting that must be a JSON object was something else.
    #[error("agent setting '{field}' must be a JSON object")]
    NotAnObject {
        /// The setting.
        field: &'static str,
    },
    /// A tool name was given twice.
    #[error("tool '{0}' is listed twice")]
    DuplicateTool(String),
}

/// Builds an [`Agent`]. Every built-in tool (`terminal`, `file_editor`,
/// `task_tracker`, `grep`, `glob`, `apply_patch`, the Gemini-style file tools,
/// `planning_file_editor`) can be named; [`AgentBuilder::custom_tool`] adds
/// your own.
///
/// ```
/// use openhands::{AgentBuilder, LlmBuilder, TypedTool};
/// use openhands::tools::{FileEditorTool, TaskTrackerTool, TerminalTool};
///
/// let llm = LlmBuilder::new("openai/gpt-5-mini").build().unwrap();
/// let agent = AgentBuilder::new(llm)
///     .tool(TerminalTool::NAME)
///     .tool(FileEditorTool::NAME)
///     .tool(TaskTrackerTool::NAME)
///     .build()
///     .unwrap();
/// assert_eq!(agent.spec().tools.len(), 3);
/// ```
#[must_use]
pub struct AgentBuilder {
    llm: Llm,
    spec: AgentSpec,
    registry: ToolRegistry,
    instances: Vec<Arc<dyn Tool>>,
    mcp_config: Option<Value>,
    errors: Vec<AgentBuildError>,
}

impl AgentBuilder {
    /// An agent for `llm` without tools (besides the always present
    /// `finish` and `think`).
    pub fn new(llm: Llm) -> Self {
        let spec = AgentSpec::new(llm.config().clone(), Vec::new());
        Self {
            llm,
            spec,
            registry: presets::default_registry(),
            instances: Vec::new(),
            mcp_config: None,
            errors: Vec::new(),
        }
    }

    /// The reference's default agent: `terminal`, `file_editor`,
    /// `task_tracker` and its default condenser.
    pub fn default_agent(llm: Llm) -> Self {
        let mut builder = Self::new(llm);
        builder.spec = presets::get_default_agent(builder.llm.config().clone(), false);
        builder
    }

    /// Offers the registered tool `name` (built-in or added with
    /// [`AgentBuilder::custom_tool`]).
    pub fn tool(self, name: impl Into<String>) -> Self {
        self.tool_with_params(name, Map::new())
    }

    /// Offers the tool `name` with parameters for its factory (e.g. the
    /// terminal's `shell_path`).
    pub fn tool_with_params(mut self, name: impl Into<String>, params: Map<String, Value>) -> Self {
        let name = name.into();
        if self.spec.tools.iter().any(|t| t.name == name) {
            self.errors.push(AgentBuildError::DuplicateTool(name));
            return self;
        }
        let mut spec = ToolSpec::named(name);
        spec.params = params;
        self.spec.tools.push(spec);
        self
    }

    /// Offers several tools by name.
    pub fn tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        for name in names {
            self = self.tool(name);
        }
        self
    }

    /// Registers a tool of your own under `name` and offers it. `make` builds
    /// one instance per conversation from its environment (working
    /// directory, secrets, execution policy). A whole tool:
    /// `examples/02_custom_tools.rs`.
    ///
    /// ```
    /// use openhands::{AgentBuilder, LlmBuilder, TypedTool};
    /// use openhands::tools::TaskTrackerTool;
    ///
    /// let llm = LlmBuilder::new("openai/gpt-5-mini").build().unwrap();
    /// // A `Tool` type and its factory (here a built-in's).
    /// let agent = AgentBuilder::new(llm)
    ///     .custom_tool(TaskTrackerTool::NAME, TaskTrackerTool::new)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(agent.spec().tools[0].name, "task_tracker");
    /// ```
    pub fn custom_tool<T, F>(mut self, name: &str, make: F) -> Self
    where
        T: Tool + 'static,
        F: Fn(&ToolEnv) -> T + Send + Sync + 'static,
    {
        self.registry.register_fn(name, make);
        self.tool(name)
    }

    /// Offers one shared tool instance (every conversation of this agent
    /// uses the same one).
    pub fn tool_instance(mut self, tool: Arc<dyn Tool>) -> Self {
        self.instances.push(tool);
        self
    }

    /// MCP servers whose tools the agent gets (the reference's `mcp_config`:
    /// `{"mcpServers": {"name": {"command": ..., "args": [...]}}}`). The
    /// servers start with the first conversation (`examples/07_mcp_integration.rs`).
    ///
    /// ```
    /// use openhands::{AgentBuilder, LlmBuilder};
    /// use serde_json::json;
    ///
    /// let llm = LlmBuilder::new("openai/gpt-5-mini").build().unwrap();
    /// let agent = AgentBuilder::new(llm)
    ///     .mcp_config(json!({"mcpServers": {"fetch": {"command": "uvx", "args": ["mcp-server-fetch"]}}}))
    ///     .build()
    ///     .unwrap();
    /// assert!(agent.spec().mcp_config.contains_key("mcpServers"));
    /// ```
    pub fn mcp_config(mut self, config: Value) -> Self {
        self.mcp_config = Some(config);
        self
    }

    /// The agent context: skills, system and user message suffixes
    /// (the reference's `AgentContext` as JSON).
    pub fn agent_context(mut self, context: Value) -> Self {
        self.spec.agent_context = Some(context);
        self
    }

    /// A context condenser (e.g. `{"kind": "LLMSummarizingCondenser", ...}`).
    pub fn condenser(mut self, condenser: Value) -> Self {
        self.spec.condenser = Some(condenser);
        self
    }

    /// How many tool calls of one step run at once (default 1).
    pub fn tool_concurrency_limit(mut self, limit: usize) -> Self {
        self.spec.tool_concurrency_limit = limit;
        self
    }

    /// Only tools whose name matches this regex are offered.
    pub fn filter_tools_regex(mut self, regex: impl Into<String>) -> Self {
        self.spec.filter_tools_regex = Some(regex.into());
        self
    }

    /// Variables for the system prompt template (e.g. `cli_mode`).
    pub fn system_prompt_kwarg(mut self, name: impl Into<String>, value: Value) -> Self {
        self.spec.system_prompt_kwargs.insert(name.into(), value);
        self
    }

    /// Any other setting, on the specification itself.
    pub fn configure(mut self, edit: impl FnOnce(&mut AgentSpec)) -> Self {
        edit(&mut self.spec);
        self
    }

    /// The agent. Tools are created per conversation, so unknown tool names
    /// are reported when a conversation starts.
    pub fn build(mut self) -> Result<Agent, AgentBuildError> {
        if let Some(error) = self.errors.into_iter().next() {
            return Err(error);
        }
        if let Some(config) = self.mcp_config {
            match config {
                Value::Object(map) => self.spec.mcp_config = map,
                _ => {
                    return Err(AgentBuildError::NotAnObject {
                        field: "mcp_config",
                    });
                }
            }
        }
        if self
            .spec
            .agent_context
            .as_ref()
            .is_some_and(|c| !c.is_object())
        {
            return Err(AgentBuildError::NotAnObject {
                field: "agent_context",
            });
        }
        let mut agent = Agent::with_llm(self.spec, self.llm, self.registry);
        for tool in self.instances {
            agent = agent.with_tool(tool);
        }
        Ok(agent)
    }
}
