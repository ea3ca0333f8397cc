//! The suites, one module per former test target.

mod acp_stream;
mod client_tools;
mod condenser;
mod conversation;
mod conversation_costs;
mod credential_binding;
mod critic;
mod docker;
mod execute_tool;
mod goal;
mod hooks;
mod hooks_agent_async;
mod llm_switching;
mod mcp;
mod navigate;
mod persistence;
mod plugins;
mod plugins_runtime;
mod reference_fixture;
mod remote;
mod remote_llm_accounts;
mod remote_reference;
mod remote_tls;
mod route_task;
mod skills;
