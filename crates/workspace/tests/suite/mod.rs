//! The suites, one module per former test target.

mod agent_sandbox;
mod sandbox;
mod workspaces;
