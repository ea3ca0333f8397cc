//! The suites, one module per former test target.

mod agent_sandbox;
mod cloud;
mod sandbox;
mod workspaces;
