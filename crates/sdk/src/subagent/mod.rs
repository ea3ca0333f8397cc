//! Sub-agents: agent definitions (Markdown files with YAML frontmatter or
//! JSON), the [`AgentRegistry`] of agents a conversation may delegate to,
//! and the runner ([`Delegation`]) that starts a child [`LocalConversation`]
//! for one of them, runs it to the end and returns its final answer, with
//! the child's LLM cost recorded in the parent's statistics. Tools reach it
//! through the [`SubAgentHost`] in their `ToolEnv`. A host that can start
//! independent child conversations offers a [`ChildLauncher`] there too.
//!
//! [`LocalConversation`]: crate::LocalConversation

pub mod definition;
pub mod error;
pub mod host;
pub mod launch;
pub mod load;
pub mod parent;
pub mod registry;
pub mod run;
pub mod scope;

pub use definition::{AgentDefinition, DefinitionError};
pub use error::SubAgentError;
pub use host::{ConfirmationHandler, SubAgentHandle, SubAgentHost, SubAgentOutcome};
pub use launch::{ChildLauncher, LaunchError};
pub use registry::{AgentFactory, AgentRegistry, DEFAULT_AGENT, FactoryInput, RegisteredAgent};
pub use run::{Delegation, SubAgent};
pub use scope::SubAgentScope;
