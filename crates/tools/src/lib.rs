//! Built-in tools: terminal, file editor, task tracker, grep, glob, apply_patch; default presets.

pub mod common;
pub mod file_editor;

pub use file_editor::FileEditorTool;
