//! Built-in tools: terminal, file editor, task tracker, grep, glob, apply_patch, the Gemini-style
//! file tools, the planning file editor, `ask_oracle` and `workflow`; the delegation tools (`task_tool_set`,
//! `delegate`) and built-in sub-agents; presets.

pub mod apply_patch;
pub mod ask_oracle;
pub mod common;
pub mod delegation;
pub mod file_editor;
pub mod gemini;
pub mod glob;
pub mod grep;
pub mod planning_file_editor;
pub mod presets;
pub mod search;
pub mod task_tracker;
pub mod terminal;
pub mod workflow;

pub use apply_patch::ApplyPatchTool;
pub use ask_oracle::AskOracleTool;
pub use file_editor::FileEditorTool;
pub use gemini::{EditTool, ListDirectoryTool, ReadFileTool, WriteFileTool};
pub use glob::GlobTool;
pub use grep::GrepTool;
pub use planning_file_editor::PlanningFileEditorTool;
pub use task_tracker::TaskTrackerTool;
pub use workflow::WorkflowTool;
