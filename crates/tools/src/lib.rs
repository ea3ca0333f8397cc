//! Built-in tools: terminal, file editor, task tracker, grep, glob, apply_patch, the Gemini-style
//! file tools, the planning file editor, `ask_oracle`, `workflow` and the Theory-of-Mind tools; the delegation tools (`task_tool_set`,
//! `delegate`) and built-in sub-agents; presets.
//!
//! # Map of the crate
//!
//! What lives where (moved from ARCHITECTURE.md, which keeps the one-page map): terminal (PTY
//! session), file_editor, task_tracker, grep/glob (ripgrep crates, in-process), apply_patch,
//! `gemini/` (read_file, write_file, edit, list_directory; `paths` confines them to the workspace),
//! planning_file_editor (file_editor restricted to PLAN.md); `ask_oracle` (the `oracle` profile
//! through `ToolEnv::profile_llms`); `workflow/` (`harness.py` runs the model's Python script in a
//! `python3` child through `exec`; `host` serves its `wf` requests with sub-agents over a line
//! protocol, `protocol`); `delegation/` (`task_tool_set`/`task` (`task::factory(handler)` installs
//! a sub-agent confirmation handler), `delegate`, `start_child_conversation` through the
//! `subagent::ChildLauncher` in `ToolEnv` — the agent server's launcher calls its conversation
//! service, registered by the server only —, built-in sub-agent definitions); presets (default,
//! GPT-5, Gemini, planning)
//!
//! `tom/`: the Theory-of-Mind tools `tom_consult` and `sleeptime_compute` (a profile of the
//! user under `usermodeling/` of the user persistence directory, built from the stored
//! conversations; `params`, `store`, `retrieval` (BM25), `engine` (the model call), one module
//! per tool).
//!
//! Tools reach a model through the SDK: the Theory-of-Mind tools through
//! `ToolEnv::profile_llms` (the named model, else the agent's own), `ask_oracle` loads the `oracle` profile with
//! `sdk::profile_llm`, and `delegation` runs sub-agents through the launcher in `ToolEnv`.

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
pub mod tom;
pub mod workflow;

pub use apply_patch::ApplyPatchTool;
pub use ask_oracle::AskOracleTool;
pub use file_editor::FileEditorTool;
pub use gemini::{EditTool, ListDirectoryTool, ReadFileTool, WriteFileTool};
pub use glob::GlobTool;
pub use grep::GrepTool;
pub use planning_file_editor::PlanningFileEditorTool;
pub use task_tracker::TaskTrackerTool;
pub use tom::{SleeptimeComputeTool, TomConsultTool};
pub use workflow::WorkflowTool;
