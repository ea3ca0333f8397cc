//! Built-in tools: terminal, file editor, task tracker, grep, glob, apply_patch; default presets.

pub mod apply_patch;
pub mod common;
pub mod file_editor;
pub mod glob;
pub mod grep;
pub mod presets;
pub mod search;
pub mod task_tracker;
pub mod terminal;

pub use apply_patch::ApplyPatchTool;
pub use file_editor::FileEditorTool;
pub use glob::GlobTool;
pub use grep::GrepTool;
pub use task_tracker::TaskTrackerTool;
