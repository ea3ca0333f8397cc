//! The tool system.
//!
//! A [`Tool`] turns model-provided JSON arguments into a typed action (a JSON
//! object with its own `kind`, e.g. `TerminalAction`), executes it, and
//! returns an observation (a JSON object with its own `kind`). Tools are
//! created per conversation by factories in a [`ToolRegistry`], so stateful
//! tools (a terminal session) belong to one conversation.
//!
//! [`Tool`] is the object-safe, JSON-level interface the agent loop calls
//! (`Arc<dyn Tool>`). Tools with Rust action and observation types implement
//! [`TypedTool`] instead and get [`Tool`] from one blanket implementation that
//! does all the JSON work.

use async_trait::async_trait;
use openhands_wire::content::Content;
use openhands_wire::tool::{ToolAnnotations, ToolDefinition};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::future::Future;
use std::marker::PhantomData;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Access to the conversation's secrets for tools: which secrets a command
/// names (to export them as environment variables) and masking of values in
/// any output.
pub trait SecretAccess: Send + Sync {
    /// `(NAME, value)` for every registered secret whose name occurs in `text`.
    fn secrets_named_in(&self, text: &str) -> Vec<(String, String)>;
    /// `text` with every known secret value replaced by `<secret-hidden>`.
    fn mask(&self, text: &str) -> String;
    /// The value of the secret `name`, when there is one.
    fn secret_value(&self, _name: &str) -> Option<String> {
        None
    }
}

/// A [`SecretAccess`] with no secrets.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoSecrets;

impl SecretAccess for NoSecrets {
    fn secrets_named_in(&self, _text: &str) -> Vec<(String, String)> {
        Vec::new()
    }
    fn mask(&self, text: &str) -> String {
        text.to_string()
    }
}

/// What a tool knows about the conversation it serves.
#[derive(Clone)]
pub struct ToolEnv {
    /// The workspace directory commands run in and relative paths resolve to.
    pub working_dir: PathBuf,
    /// The conversation's persistence directory, when it has one (tools keep
    /// state or spill large outputs there).
    pub conversation_dir: Option<PathBuf>,
    /// Secrets of the conversation.
    pub secrets: Arc<dyn SecretAccess>,
    /// How processes for the agent are started: the environment policy
    /// (which variables are withheld) and whether terminal sessions start
    /// from a shell snapshot.
    pub exec: openhands_workspace::exec::ExecPolicy,
    /// Delegation to sub-agents (the conversation's agent registry and a
    /// link to it as their parent); `None` outside a conversation.
    pub delegation: Option<Arc<dyn crate::subagent::host::SubAgentHost>>,
    /// Where MCP servers using OAuth find their tokens and put refreshed
    /// ones (`None`: each server's own `auth.state`, kept in memory).
    pub mcp_oauth_states: Option<Arc<dyn openhands_mcp::oauth::OAuthStateStore>>,
    /// Authorizes OAuth servers without tokens when the MCP servers start
    /// (`None`: stored tokens only).
    pub mcp_oauth_consent: Option<openhands_mcp::oauth::Consent>,
    /// The id of the conversation the tools belong to (`None` outside one).
    pub conversation_id: Option<uuid::Uuid>,
    /// Starts child conversations of this one, when its host can (the
    /// agent server); `None` otherwise.
    pub child_launcher: Option<Arc<dyn crate::subagent::launch::ChildLauncher>>,
    /// The conversation's LLM switch (saved profiles), for the `switch_llm`
    /// tool; `None` outside a conversation.
    pub llm_switch: Option<Arc<dyn crate::llm_switch::LlmSwitch>>,
    /// Saved LLM profiles for tools that consult another model (the
    /// oracle, the vision inspector); `None` outside a conversation.
    pub profile_llms: Option<Arc<dyn crate::profile_llm::ProfileLlms>>,
    /// The stored meta-profiles the `route_task_to_model` tool resolves
    /// names in; `None` outside a conversation.
    pub meta_profiles: Option<Arc<dyn crate::meta_profile::MetaProfileSource>>,
}

impl ToolEnv {
    /// An environment for `working_dir` without persistence or secrets,
    /// with the default execution policy.
    pub fn new(working_dir: impl Into<PathBuf>) -> Self {
        Self {
            working_dir: working_dir.into(),
            conversation_dir: None,
            secrets: Arc::new(NoSecrets),
            exec: openhands_workspace::exec::ExecPolicy::default(),
            delegation: None,
            mcp_oauth_states: None,
            mcp_oauth_consent: None,
            conversation_id: None,
            child_launcher: None,
            llm_switch: None,
            profile_llms: None,
            meta_profiles: None,
        }
    }
}

impl std::fmt::Debug for ToolEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolEnv")
            .field("working_dir", &self.working_dir)
            .field("conversation_dir", &self.conversation_dir)
            .field("exec", &self.exec)
            .finish_non_exhaustive()
    }
}

/// Context of one execution.
#[derive(Clone, Debug)]
pub struct ToolCallContext {
    /// Cancelled when the run is interrupted; long-running tools must stop
    /// (and kill what they started) when it fires.
    pub cancel: CancellationToken,
}

impl Default for ToolCallContext {
    fn default() -> Self {
        Self {
            cancel: CancellationToken::new(),
        }
    }
}

/// Why a tool call failed. Both variants are shown to the model as an
/// `AgentErrorEvent`; the run continues.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not validate against the tool's schema.
    #[error("{0}")]
    InvalidArguments(String),
    /// Execution failed in a way the model should hear about.
    #[error("{0}")]
    Execution(String),
}

/// A tool the agent can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name the model calls (`terminal`).
    fn name(&self) -> &str;
    /// Tool class name in definitions (`TerminalTool`).
    fn kind(&self) -> &str;
    /// `kind` of actions (`TerminalAction`).
    fn action_kind(&self) -> &str;
    /// `kind` of observations (`TerminalObservation`).
    fn observation_kind(&self) -> &str;
    /// Description shown to the model.
    fn description(&self) -> String;
    /// JSON schema of the arguments, without the `summary`/`security_risk`
    /// fields the agent adds.
    fn parameters_schema(&self) -> Value;
    /// Behaviour hints.
    fn annotations(&self) -> ToolAnnotations;

    /// Validates model arguments (with `summary`/`security_risk` already
    /// removed) and returns the action JSON including `kind`.
    fn parse_action(&self, args: Map<String, Value>) -> Result<Value, ToolError>;

    /// Executes an action produced by [`Tool::parse_action`] and returns the
    /// observation JSON including `kind`, `content` and `is_error`.
    async fn execute(&self, action: Value, ctx: &ToolCallContext) -> Result<Value, ToolError>;

    /// Renders one of this tool's observations as the text the model sees.
    /// The default shows the observation's `content` parts.
    fn observation_to_llm(&self, observation: &Value) -> Vec<Content> {
        default_observation_content(observation)
    }

    /// Releases resources (kills sessions). Called when the conversation closes.
    async fn close(&self) {}

    /// Usage guidance this tool adds to the system prompt (the reference's
    /// `prompt_guidance`, e.g. a `<BROWSER_TOOLS>` block); each distinct
    /// text appears once, in tool order. `None` by default.
    fn prompt_guidance(&self) -> Option<&str> {
        None
    }

    /// The definition recorded in `SystemPromptEvent.tools`.
    fn definition(&self) -> ToolDefinition {
        let annotations = self.annotations();
        ToolDefinition {
            description: self.description(),
            action_type: self.action_kind().to_string(),
            observation_type: Some(self.observation_kind().to_string()),
            annotations: Some(annotations),
            kind: self.kind().to_string(),
            title: self.name().to_string(),
            extra: Map::new(),
        }
    }
}

/// The `content` parts of an observation JSON (empty when absent).
pub fn default_observation_content(observation: &Value) -> Vec<Content> {
    observation
        .get("content")
        .and_then(|c| serde_json::from_value::<Vec<Content>>(c.clone()).ok())
        .unwrap_or_default()
}

/// Serializes a typed action/observation and adds its `kind`.
pub fn to_kinded_value<T: Serialize>(kind: &str, value: &T) -> Result<Value, ToolError> {
    match serde_json::to_value(value) {
        Ok(Value::Object(mut m)) => {
            m.insert("kind".into(), Value::String(kind.to_string()));
            Ok(Value::Object(m))
        }
        Ok(_) => Err(ToolError::Execution(format!("{kind} is not a JSON object"))),
        Err(e) => Err(ToolError::Execution(format!(
            "cannot serialize {kind}: {e}"
        ))),
    }
}

/// Parses a kinded JSON object into a typed value (ignoring `kind`).
pub fn from_kinded_value<T: DeserializeOwned>(value: &Value) -> Result<T, ToolError> {
    let mut v = value.clone();
    if let Value::Object(m) = &mut v {
        m.remove("kind");
    }
    serde_json::from_value(v).map_err(|e| ToolError::InvalidArguments(e.to_string()))
}

/// An observation carrying only text: `{"content":[text],"is_error":..,"kind":..}`.
pub fn text_observation(kind: &str, text: impl Into<String>, is_error: bool) -> Value {
    serde_json::json!({
        "content": [Content::text(text)],
        "is_error": is_error,
        "kind": kind,
    })
}

/// A typed observation carrying only text (`content` and `is_error`), for
/// tools whose observation has no other fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextObservation {
    /// What the model sees.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Whether the call failed.
    #[serde(default)]
    pub is_error: bool,
}

impl TextObservation {
    /// A successful observation showing `text`.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(text)],
            is_error: false,
        }
    }
}

/// A tool with Rust types for its action and observation. Implement this
/// instead of [`Tool`]: the blanket `impl<T: TypedTool> Tool for T` parses
/// the model's arguments into [`TypedTool::Action`] (an argument error names
/// the tool), calls [`TypedTool::validate`], adds the `kind`s when
/// serializing actions and observations, and parses stored actions back
/// before [`TypedTool::run`].
///
/// Implementations write `async fn run(..)` and `async fn close(..)`; the
/// returned futures must be `Send`.
pub trait TypedTool: Send + Sync {
    /// Arguments of one call, as the model sends them (without `summary` and
    /// `security_risk`) and as `ActionEvent.action` records them (plus `kind`).
    type Action: Serialize + DeserializeOwned + Send;
    /// Result of one call, as `ObservationEvent.observation` records it (plus
    /// `kind`); it carries `content` and `is_error`.
    type Observation: Serialize + DeserializeOwned + Send;

    /// Name the model calls (`terminal`).
    const NAME: &'static str;
    /// Tool class name in definitions (`TerminalTool`).
    const KIND: &'static str;
    /// `kind` of actions (`TerminalAction`).
    const ACTION_KIND: &'static str;
    /// `kind` of observations (`TerminalObservation`).
    const OBSERVATION_KIND: &'static str;

    /// Description shown to the model.
    fn description(&self) -> String;
    /// JSON schema of the arguments, without the `summary`/`security_risk`
    /// fields the agent adds.
    fn parameters_schema(&self) -> Value;
    /// Behaviour hints; none by default (not read-only, not destructive,
    /// not idempotent, closed world).
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::default()
    }

    /// Checks a parsed action beyond what its type expresses; an error is
    /// reported to the model like an argument error. Accepts everything by
    /// default.
    fn validate(&self, _action: &Self::Action) -> Result<(), ToolError> {
        Ok(())
    }

    /// Executes one action.
    fn run(
        &self,
        action: Self::Action,
        ctx: &ToolCallContext,
    ) -> impl Future<Output = Result<Self::Observation, ToolError>> + Send;

    /// Renders one of this tool's observations as the text the model sees.
    /// The default shows the observation's `content` parts without parsing
    /// the rest of it.
    fn observation_to_llm(
        &self,
        observation: StoredObservation<'_, Self::Observation>,
    ) -> Vec<Content> {
        observation.content()
    }

    /// Releases resources (kills sessions). Called when the conversation closes.
    fn close(&self) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// Usage guidance for the system prompt (see [`Tool::prompt_guidance`]).
    fn prompt_guidance(&self) -> Option<&str> {
        None
    }
}

/// An observation as the conversation stores it (JSON with its `kind`),
/// handed to [`TypedTool::observation_to_llm`] and parsed only on demand.
pub struct StoredObservation<'a, O> {
    json: &'a Value,
    typed: PhantomData<fn() -> O>,
}

impl<O: DeserializeOwned> StoredObservation<'_, O> {
    /// The typed observation; `None` when the JSON does not have its shape
    /// (an observation written by another version).
    pub fn parse(&self) -> Option<O> {
        from_kinded_value(self.json).ok()
    }

    /// The observation's `content` parts (empty when absent).
    pub fn content(&self) -> Vec<Content> {
        default_observation_content(self.json)
    }
}

#[async_trait]
impl<T: TypedTool> Tool for T {
    fn name(&self) -> &str {
        T::NAME
    }
    fn kind(&self) -> &str {
        T::KIND
    }
    fn action_kind(&self) -> &str {
        T::ACTION_KIND
    }
    fn observation_kind(&self) -> &str {
        T::OBSERVATION_KIND
    }
    fn description(&self) -> String {
        TypedTool::description(self)
    }
    fn parameters_schema(&self) -> Value {
        TypedTool::parameters_schema(self)
    }
    fn annotations(&self) -> ToolAnnotations {
        TypedTool::annotations(self)
    }

    fn parse_action(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        let action: T::Action = serde_json::from_value(Value::Object(args)).map_err(|e| {
            ToolError::InvalidArguments(format!("invalid arguments for `{}`: {e}", T::NAME))
        })?;
        self.validate(&action)?;
        to_kinded_value(T::ACTION_KIND, &action)
    }

    async fn execute(&self, action: Value, ctx: &ToolCallContext) -> Result<Value, ToolError> {
        let action: T::Action = from_kinded_value(&action)?;
        let observation = TypedTool::run(self, action, ctx).await?;
        to_kinded_value(T::OBSERVATION_KIND, &observation)
    }

    fn observation_to_llm(&self, observation: &Value) -> Vec<Content> {
        TypedTool::observation_to_llm(
            self,
            StoredObservation {
                json: observation,
                typed: PhantomData,
            },
        )
    }

    async fn close(&self) {
        TypedTool::close(self).await;
    }

    fn prompt_guidance(&self) -> Option<&str> {
        TypedTool::prompt_guidance(self)
    }
}

/// Creates the tools of one registered name for one conversation.
/// Parameters come from the agent's `ToolSpec.params`.
pub type ToolFactory = Arc<
    dyn Fn(&Map<String, Value>, &ToolEnv) -> Result<Vec<Arc<dyn Tool>>, ToolError> + Send + Sync,
>;

/// Name → factory. Register a tool instance, a factory, or (via a closure)
/// a tool type's constructor.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    factories: BTreeMap<String, ToolFactory>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.factories.keys()).finish()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a factory under `name` (replacing an earlier one).
    pub fn register_factory(&mut self, name: impl Into<String>, factory: ToolFactory) {
        self.factories.insert(name.into(), factory);
    }

    /// Registers one shared instance under its own name.
    pub fn register_instance(&mut self, tool: Arc<dyn Tool>) {
        let name = tool.name().to_string();
        self.factories
            .insert(name, Arc::new(move |_, _| Ok(vec![tool.clone()])));
    }

    /// Registers a constructor called per conversation with the tool env.
    pub fn register_fn<F, T>(&mut self, name: impl Into<String>, make: F)
    where
        F: Fn(&ToolEnv) -> T + Send + Sync + 'static,
        T: Tool + 'static,
    {
        self.factories.insert(
            name.into(),
            Arc::new(move |_, env| Ok(vec![Arc::new(make(env)) as Arc<dyn Tool>])),
        );
    }

    /// Whether `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.factories.contains_key(name)
    }

    /// Registered names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.factories.keys().cloned().collect()
    }

    /// Instantiates the tools registered as `name`.
    pub fn resolve(
        &self,
        name: &str,
        params: &Map<String, Value>,
        env: &ToolEnv,
    ) -> Result<Vec<Arc<dyn Tool>>, ToolError> {
        match self.factories.get(name) {
            Some(f) => f(params, env),
            None => Err(ToolError::Execution(format!(
                "ToolDefinition '{name}' is not registered"
            ))),
        }
    }
}

#[cfg(test)]
#[path = "tool_tests.rs"]
mod tests;
