//! Ready-made tool registries and agent configurations: the default preset
//! (terminal, file editor, task tracker) and the GPT-5 preset (terminal,
//! apply_patch, task tracker).

use crate::apply_patch::{APPLY_PATCH_NAME, ApplyPatchTool};
use crate::file_editor::{FILE_EDITOR_NAME, FileEditorTool};
use crate::glob::{GLOB_NAME, GlobTool};
use crate::grep::{GREP_NAME, GrepTool};
use crate::task_tracker::{TASK_TRACKER_NAME, TaskTrackerTool};
use crate::terminal::TerminalTool;
use openhands_sdk::tool::ToolRegistry;
use openhands_wire::LlmConfig;
use openhands_wire::agent::AgentSpec;
use openhands_wire::tool::ToolSpec;
use serde_json::{Map, Value, json};

/// Registered name of the terminal tool.
pub const TERMINAL_NAME: &str = "terminal";

/// Registers factories for every built-in tool: `terminal`, `file_editor`,
/// `task_tracker`, `grep`, `glob` and `apply_patch`. Each conversation gets
/// its own instances, built from its [`ToolEnv`](openhands_sdk::tool::ToolEnv).
pub fn register_default_tools(registry: &mut ToolRegistry) {
    // The terminal honours the reference's parameters (`no_change_timeout_seconds`,
    // `shell_path`, `env`) given in the agent's tool spec.
    registry.register_factory(
        TERMINAL_NAME,
        std::sync::Arc::new(|params, env| {
            let tool = TerminalTool::from_params(params, env)?;
            Ok(vec![
                std::sync::Arc::new(tool) as std::sync::Arc<dyn openhands_sdk::tool::Tool>
            ])
        }),
    );
    registry.register_fn(FILE_EDITOR_NAME, FileEditorTool::new);
    registry.register_fn(TASK_TRACKER_NAME, TaskTrackerTool::new);
    registry.register_fn(GREP_NAME, GrepTool::new);
    registry.register_fn(GLOB_NAME, GlobTool::new);
    registry.register_fn(APPLY_PATCH_NAME, ApplyPatchTool::new);
}

/// A registry holding every built-in tool (see [`register_default_tools`]).
pub fn default_registry() -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    register_default_tools(&mut registry);
    registry
}

/// The default tool specs: `terminal`, `file_editor`, `task_tracker`.
///
/// `enable_browser` is accepted for parity with the reference preset; this
/// implementation has no browser tool, so it adds nothing.
pub fn get_default_tools(enable_browser: bool) -> Vec<ToolSpec> {
    let _ = enable_browser;
    vec![
        ToolSpec::named(TERMINAL_NAME),
        ToolSpec::named(FILE_EDITOR_NAME),
        ToolSpec::named(TASK_TRACKER_NAME),
    ]
}

/// The GPT-5 preset's tool specs: `terminal`, `apply_patch`, `task_tracker`
/// (`enable_browser` as in [`get_default_tools`]).
pub fn get_gpt5_tools(enable_browser: bool) -> Vec<ToolSpec> {
    let _ = enable_browser;
    vec![
        ToolSpec::named(TERMINAL_NAME),
        ToolSpec::named(APPLY_PATCH_NAME),
        ToolSpec::named(TASK_TRACKER_NAME),
    ]
}

/// The condenser both presets use: an `LLMSummarizingCondenser` over a copy
/// of `llm` with `usage_id` `"condenser"`, keeping at most 80 events and
/// always the first 4.
///
/// The copy carries the API key in clear (like the in-memory reference
/// object) so the condenser can call the model; whoever persists the agent
/// must protect it like the agent's own key.
pub fn default_condenser(llm: &LlmConfig) -> Value {
    let mut condenser_llm = llm.clone();
    condenser_llm.usage_id = "condenser".to_string();
    let llm_json = condenser_llm
        .to_value_exposing_secrets()
        .unwrap_or_else(|_| Value::Object(Map::new()));
    json!({
        "llm": llm_json,
        "max_size": 80,
        "keep_first": 4,
        "minimum_progress": 0.1,
        "hard_context_reset_max_retries": 5,
        "hard_context_reset_context_scaling": 0.8,
        "kind": "LLMSummarizingCondenser",
    })
}

fn preset_agent(llm: LlmConfig, tools: Vec<ToolSpec>, cli_mode: bool) -> AgentSpec {
    let condenser = default_condenser(&llm);
    let mut agent = AgentSpec::new(llm, tools);
    agent
        .system_prompt_kwargs
        .insert("cli_mode".to_string(), Value::Bool(cli_mode));
    agent.condenser = Some(condenser);
    agent
}

/// The default agent: [`get_default_tools`], `system_prompt_kwargs
/// {"cli_mode": cli_mode}` and [`default_condenser`].
pub fn get_default_agent(llm: LlmConfig, cli_mode: bool) -> AgentSpec {
    preset_agent(llm, get_default_tools(!cli_mode), cli_mode)
}

/// The GPT-5 agent: like [`get_default_agent`] (outside CLI mode) but editing
/// files with `apply_patch` instead of `file_editor`.
pub fn get_gpt5_agent(llm: LlmConfig) -> AgentSpec {
    preset_agent(llm, get_gpt5_tools(true), false)
}
