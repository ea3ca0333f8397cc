//! The suites, one module per former test target.

mod agent_e2e;
mod apply_patch;
mod consult;
mod delegation;
mod delegation_scope;
mod file_editor;
mod presets;
mod schemas;
mod search;
mod task_tracker;
mod terminal;
mod terminal_snapshot;
mod tom;
mod workflow;
