//! The suites, one module per former test target.

mod cli;
mod control;
mod flags;
mod provider_keys;
mod telemetry;
mod tui;
mod workflow_templates;
