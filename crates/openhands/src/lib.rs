//! # OpenHands for Rust
//!
//! Build AI agents that work with code: an [`Llm`], an [`Agent`] with tools,
//! and a [`Conversation`] that runs the agent's reasoning-action loop on an
//! append-only event log, in this process or on an OpenHands agent server.
//! Wire formats, tool names and persisted files are those of the Python
//! reference SDK, so conversations and servers are interchangeable with it.
//!
//! ## Hello world
//!
//! ```no_run
//! use openhands::prelude::*;
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // Model, key and endpoint from LLM_MODEL, LLM_API_KEY, LLM_BASE_URL.
//!     let llm = LlmBuilder::from_env().build()?;
//!     let agent = AgentBuilder::new(llm)
//!         .tool(TerminalTool::NAME)
//!         .tool(FileEditorTool::NAME)
//!         .tool(TaskTrackerTool::NAME)
//!         .build()?;
//!     let conversation = Conversation::new(agent, std::env::current_dir()?).await?;
//!     conversation
//!         .send_message("Write 3 facts about the current project into FACTS.txt.")
//!         .await?;
//!     conversation.run().await?;
//!     println!("All done!");
//!     Ok(())
//! }
//! ```
//!
//! ## Offline
//!
//! The same program runs without a model: the scripted LLM of
//! `openhands::testing` (feature `testing`) answers from a JSON script,
//! which is how every example runs in CI.
//!
//! ```
//! use openhands::prelude::*;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let llm = openhands::testing::scripted_llm(r#"[
//!     {"tool_calls": [{"name": "terminal", "arguments": {"command": "echo 42 > answer.txt"}}]},
//!     {"text": "Wrote answer.txt."}
//! ]"#)?;
//! let agent = AgentBuilder::new(llm).tool(TerminalTool::NAME).build()?;
//! let dir = tempfile::tempdir()?;
//! let conversation = Conversation::new(agent, dir.path()).await?;
//! conversation.send_message("Write the answer into answer.txt.").await?;
//! assert_eq!(conversation.run().await?, ExecutionStatus::Finished);
//! assert_eq!(std::fs::read_to_string(dir.path().join("answer.txt"))?, "42\n");
//! # Ok(()) }
//! ```
//!
//! ## From there
//!
//! * **Options** of a conversation (persistence, callbacks, confirmation,
//!   secrets, hooks, iteration limits): [`ConversationBuilder`].
//! * **Your own tools**: implement [`TypedTool`] with serde types for the
//!   action and observation; [`parameters_schema`] derives the JSON schema
//!   the model sees from the action type (see `examples/02_custom_tools.rs`).
//!   Register it with [`AgentBuilder::custom_tool`].
//! * **MCP servers**: [`AgentBuilder::mcp_config`] with the reference's
//!   `mcpServers` JSON; their tools join the agent's.
//! * **Skills and context**: [`AgentBuilder::agent_context`].
//! * **Events**: every step is an [`Event`](event::Event) (message, action,
//!   observation, state update...) persisted before callbacks see it;
//!   [`LocalConversation::events`] and [`ConversationBuilder::on_event`].
//! * **Remote**: a [`Workspace::Remote`] (see [`RemoteWorkspace`]) makes
//!   [`Conversation::new`] create the conversation on an agent server and
//!   stream its events over the WebSocket; the same calls drive it.
//!   [`DockerWorkspace`] starts that server in a container (the host
//!   directory mounted) and hands out its workspace.
//! * **The server itself** (feature `server`): `openhands::server` is the agent
//!   server library behind the `openhands-agent-server` binary.
//! * **Offline runs and tests** (feature `testing`): `openhands::testing` has the
//!   scripted LLM, which answers from a JSON script instead of a model.
//!
//! The crates underneath stay available for everything the facade does not
//! re-export: [`sdk`], [`llm`], [`tools`], [`wire`], [`workspace`].
//!
//! # Map of the crate
//!
//! What lives where (moved from ARCHITECTURE.md, which keeps the one-page map): what a Rust user
//! depends on: `LlmBuilder`, `AgentBuilder`, `ConversationBuilder` (the reference's keyword
//! arguments as builders), re-exports (`Conversation`, `Tool`/`TypedTool`, built-in tools, events,
//! `Workspace`), `parameters_schema` (schemars), `testing` (scripted LLM in process or over HTTP),
//! `local_server` (agent server in process); `examples/` (67, each run offline by
//! `tests/examples.rs`) and `examples/workflows/` (GitHub workflow templates on the CLI, run by
//! `cli/tests/workflow_templates.rs`)
//!
//! no logic of its own beyond builders; nothing below depends on it.

pub mod agent;
pub mod conversation;
pub mod llm_builder;
#[cfg(feature = "server")]
pub mod local_server;
pub mod schema;
#[cfg(feature = "testing")]
pub mod testing;

pub use agent::{AgentBuildError, AgentBuilder};
pub use conversation::ConversationBuilder;
pub use llm_builder::LlmBuilder;
pub use schema::parameters_schema;

pub use openhands_llm::{Llm, LlmError, LlmRegistry};
/// The groups of [`ConversationOptions`], one per part of a conversation.
pub use openhands_sdk::conversation::{
    AgentOptions, ExtensionOptions, ListenerOptions, LlmOptions, TraceOptions,
};
pub use openhands_sdk::secrets::{SecretProvider, SecretSource};
pub use openhands_sdk::tool::{
    TextObservation, Tool, ToolCallContext, ToolEnv, ToolError, ToolRegistry, TypedTool,
};
pub use openhands_sdk::{
    Agent, AnyConversationError, Conversation, ConversationError, ConversationOptions,
    LocalConversation, RemoteConversation, RemoteError, RemoteOptions,
};
pub use openhands_wire::LlmConfig;
pub use openhands_wire::agent::AgentSpec;
pub use openhands_wire::event::SecurityRisk;
pub use openhands_wire::state::{ConfirmationPolicy, ExecutionStatus};
pub use openhands_wire::tool::ToolAnnotations;
pub use openhands_workspace::docker::{
    DockerDevWorkspace, DockerDevWorkspaceOptions, DockerWorkspace, DockerWorkspaceOptions,
};
pub use openhands_workspace::{
    APIRemoteWorkspace, APIRemoteWorkspaceOptions, ImagePullPolicy, LocalWorkspace,
    OpenHandsCloudWorkspace, OpenHandsCloudWorkspaceOptions, RemoteWorkspace, Workspace,
};

/// Events of a conversation and their parts (the reference's wire types).
///
/// ```
/// use openhands::event::{Event, EventBody, Message};
///
/// // Events are plain serde values in the reference's JSON.
/// let json = r#"{"id": "e1", "timestamp": "2025-01-01T00:00:00", "source": "user",
///     "kind": "MessageEvent", "llm_message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}}"#;
/// let event: Event = serde_json::from_str(json).unwrap();
/// match &event.body {
///     EventBody::Message(m) => assert_eq!(m.llm_message.text(), "hi"),
///     other => panic!("unexpected {}", other.kind()),
/// }
/// assert_eq!(Message::user("hi").text(), "hi");
/// ```
pub mod event {
    pub use openhands_wire::content::{Content, ImageContent, TextContent};
    pub use openhands_wire::event::*;
    pub use openhands_wire::message::{Message, MessageToolCall, Role};
}

/// The built-in tools and the reference's presets.
///
/// ```
/// use openhands::TypedTool;
/// use openhands::tools::{FileEditorTool, TerminalTool, presets};
///
/// assert_eq!(TerminalTool::NAME, "terminal");
/// assert_eq!(FileEditorTool::NAME, "file_editor");
/// // Every built-in tool is registered in the default registry.
/// assert!(presets::default_registry().names().iter().any(|n| n == "task_tracker"));
/// ```
pub mod tools {
    pub use openhands_tools::presets;
    pub use openhands_tools::terminal::TerminalTool;
    pub use openhands_tools::*;
}

/// The agent server as a library (feature `server`).
#[cfg(feature = "server")]
pub use openhands_agent_server as server;

pub use openhands_llm as llm;
pub use openhands_protocol as protocol;
pub use openhands_sdk as sdk;
pub use openhands_wire as wire;
pub use openhands_workspace as workspace;

/// What most programs use: `use openhands::prelude::*;`.
///
/// ```
/// use openhands::prelude::*;
///
/// let llm = LlmBuilder::new("openai/gpt-5-mini").build().unwrap();
/// let agent = AgentBuilder::new(llm).tool(TerminalTool::NAME).build().unwrap();
/// assert_eq!(agent.spec().tools[0].name, "terminal");
/// ```
pub mod prelude {
    pub use crate::event::{Event, EventBody};
    pub use crate::tools::{
        ApplyPatchTool, FileEditorTool, GlobTool, GrepTool, TaskTrackerTool, TerminalTool,
    };
    pub use crate::{
        Agent, AgentBuilder, ConfirmationPolicy, Conversation, ConversationBuilder,
        ConversationOptions, ExecutionStatus, Llm, LlmBuilder, LocalConversation, SecretProvider,
        SecretSource, TextObservation, Tool, ToolAnnotations, ToolCallContext, ToolError,
        TypedTool, Workspace, parameters_schema,
    };
}

/// The guide under `docs/src` (an mdBook): every chapter is included here
/// so that its Rust snippets compile and run as doc tests of this crate.
#[cfg(doctest)]
pub mod book {
    #[doc = include_str!("../../../docs/src/introduction.md")]
    pub struct Introduction;
    #[doc = include_str!("../../../docs/src/getting-started.md")]
    pub struct GettingStarted;
    #[doc = include_str!("../../../docs/src/sdk/README.md")]
    pub struct SdkGuides;
    #[doc = include_str!("../../../docs/src/sdk/rust-sdk.md")]
    pub struct RustSdk;
    #[doc = include_str!("../../../docs/src/sdk/conversations.md")]
    pub struct Conversations;
    #[doc = include_str!("../../../docs/src/sdk/tools.md")]
    pub struct Tools;
    #[doc = include_str!("../../../docs/src/sdk/llms.md")]
    pub struct Llms;
    #[doc = include_str!("../../../docs/src/sdk/skills-hooks-plugins.md")]
    pub struct SkillsHooksPlugins;
    #[doc = include_str!("../../../docs/src/sdk/agents.md")]
    pub struct Agents;
    #[doc = include_str!("../../../docs/src/sdk/safety.md")]
    pub struct Safety;
    #[doc = include_str!("../../../docs/src/sdk/observability.md")]
    pub struct Observability;
    #[doc = include_str!("../../../docs/src/sdk/workspaces.md")]
    pub struct Workspaces;
    #[doc = include_str!("../../../docs/src/agent-server.md")]
    pub struct AgentServer;
    #[doc = include_str!("../../../docs/src/gateway.md")]
    pub struct Gateway;
    #[doc = include_str!("../../../docs/src/task-control.md")]
    pub struct TaskControl;
    #[doc = include_str!("../../../docs/src/cli.md")]
    pub struct Cli;
    #[doc = include_str!("../../../docs/src/benchmarks.md")]
    pub struct Benchmarks;
}
