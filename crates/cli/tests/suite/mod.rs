//! The suites, one module per former test target.

mod cli;
mod control;
mod first_minutes;
mod flags;
mod mcp_cmd;
mod provider_keys;
mod settings_agents;
mod settings_rotation;
mod telemetry;
mod tui;
mod workflow_templates;
