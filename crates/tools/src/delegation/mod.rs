//! Delegation tools: `task` (registered as `task_tool_set`, the model starts
//! one sub-agent task and receives its result) and `delegate` (the model
//! spawns named sub-agents and runs tasks on several of them in parallel),
//! `start_child_conversation` (the host starts an independent child
//! conversation; registered by the agent server),
//! plus the built-in sub-agent definitions. The sub-agents themselves are
//! run by `openhands_sdk::subagent`.

pub mod builtins;
pub mod child_conversation;
pub mod delegate;
pub mod scope;
pub mod task;

pub use builtins::builtin_agent_definitions;
pub use child_conversation::{START_CHILD_CONVERSATION_NAME, StartChildConversationTool};
pub use delegate::{DELEGATE_NAME, DelegateTool};
pub use scope::{SUB_AGENT_SCOPE_PARAM, SubAgentScope, check_sub_agent_scope};
pub use task::{TASK_NAME, TASK_TOOL_SET_NAME, TaskTool};
