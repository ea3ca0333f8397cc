//! Ready-made tool registries and agent configurations: the default preset
//! (terminal, file editor, task tracker), the GPT-5 preset (terminal,
//! apply_patch, task tracker), the Gemini preset (terminal, the Gemini-style
//! file tools, task tracker) and the planning preset (glob, grep, planning
//! file editor); each of the first three adds `browser_tool_set` when
//! `enable_browser` is set, as the reference does.

use crate::apply_patch::{APPLY_PATCH_NAME, ApplyPatchTool};
use crate::ask_oracle::{ASK_ORACLE_NAME, AskOracleTool};
use crate::delegation::{DELEGATE_NAME, DelegateTool, TASK_NAME, TASK_TOOL_SET_NAME};
use crate::file_editor::{FILE_EDITOR_NAME, FileEditorTool};
use crate::gemini::{
    EDIT_NAME, EditTool, LIST_DIRECTORY_NAME, ListDirectoryTool, READ_FILE_NAME, ReadFileTool,
    WRITE_FILE_NAME, WriteFileTool,
};
use crate::glob::{GLOB_NAME, GlobTool};
use crate::grep::{GREP_NAME, GrepTool};
use crate::planning_file_editor::{
    PLAN_SECTIONS, PLANNING_FILE_EDITOR_NAME, PlanningFileEditorTool,
};
use crate::task_tracker::{TASK_TRACKER_NAME, TaskTrackerTool};
use crate::terminal::TerminalTool;
use crate::tom::{SLEEPTIME_COMPUTE_NAME, SleeptimeComputeTool, TOM_CONSULT_NAME, TomConsultTool};
use crate::workflow::{WORKFLOW_NAME, WORKFLOW_TOOL_SET_NAME, WorkflowTool};
use openhands_browser::{BROWSER_TOOL_SET_NAME, browser_tool_set};
use openhands_sdk::tool::ToolRegistry;
use openhands_wire::LlmConfig;
use openhands_wire::agent::AgentSpec;
use openhands_wire::tool::ToolSpec;
use serde_json::{Map, Value, json};

/// Registered name of the terminal tool.
pub const TERMINAL_NAME: &str = "terminal";

/// Registers factories for every built-in tool: `terminal`, `file_editor`,
/// `task_tracker`, `grep`, `glob`, `apply_patch`, `read_file`, `write_file`,
/// `edit`, `list_directory`, `planning_file_editor`, the delegation tools
/// `task_tool_set` (alias `task`) and `delegate`, `ask_oracle`,
/// `workflow_tool_set` (alias `workflow`), the Theory-of-Mind tools
/// `tom_consult` and `sleeptime_compute`, and `browser_tool_set`
/// (the browser tools, one lazily started Chromium per conversation). Each conversation gets
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
    registry.register_fn(READ_FILE_NAME, ReadFileTool::new);
    registry.register_fn(WRITE_FILE_NAME, WriteFileTool::new);
    registry.register_fn(EDIT_NAME, EditTool::new);
    registry.register_fn(LIST_DIRECTORY_NAME, ListDirectoryTool::new);
    for name in [TASK_TOOL_SET_NAME, TASK_NAME] {
        // `sub_agent_scope` keeps the sub-agents within this agent's tools.
        registry.register_factory(name, crate::delegation::task::factory(None));
    }
    registry.register_fn(DELEGATE_NAME, DelegateTool::new);
    registry.register_fn(ASK_ORACLE_NAME, AskOracleTool::new);
    // `workflow_tool_set` (and `workflow`) take `sub_agent_scope`.
    for name in [WORKFLOW_TOOL_SET_NAME, WORKFLOW_NAME] {
        registry.register_factory(
            name,
            std::sync::Arc::new(|params, env| {
                let tool = WorkflowTool::from_params(params, env)?;
                Ok(vec![
                    std::sync::Arc::new(tool) as std::sync::Arc<dyn openhands_sdk::tool::Tool>
                ])
            }),
        );
    }
    // Both take `enable_rag`, `llm_model`, `api_key`, `api_base` (and our `persistence_dir`).
    registry.register_factory(
        TOM_CONSULT_NAME,
        std::sync::Arc::new(|params, env| {
            let tool = TomConsultTool::from_params(params, env)?;
            Ok(vec![
                std::sync::Arc::new(tool) as std::sync::Arc<dyn openhands_sdk::tool::Tool>
            ])
        }),
    );
    registry.register_factory(
        SLEEPTIME_COMPUTE_NAME,
        std::sync::Arc::new(|params, env| {
            let tool = SleeptimeComputeTool::from_params(params, env)?;
            Ok(vec![
                std::sync::Arc::new(tool) as std::sync::Arc<dyn openhands_sdk::tool::Tool>
            ])
        }),
    );
    registry.register_factory(BROWSER_TOOL_SET_NAME, std::sync::Arc::new(browser_tool_set));
    // `plan_path` (absolute) may be given in the tool spec's params.
    registry.register_factory(
        PLANNING_FILE_EDITOR_NAME,
        std::sync::Arc::new(|params, env| {
            let tool = PlanningFileEditorTool::from_params(params, env)?;
            Ok(vec![
                std::sync::Arc::new(tool) as std::sync::Arc<dyn openhands_sdk::tool::Tool>
            ])
        }),
    );
}

/// A registry holding every built-in tool (see [`register_default_tools`]).
pub fn default_registry() -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    register_default_tools(&mut registry);
    registry
}

/// `tools`, followed by `browser_tool_set` when `enable_browser` is set.
fn with_browser(mut tools: Vec<ToolSpec>, enable_browser: bool) -> Vec<ToolSpec> {
    if enable_browser {
        tools.push(ToolSpec::named(BROWSER_TOOL_SET_NAME));
    }
    tools
}

/// The default tool specs: `terminal`, `file_editor`, `task_tracker`, and
/// `browser_tool_set` when `enable_browser` is set.
pub fn get_default_tools(enable_browser: bool) -> Vec<ToolSpec> {
    with_browser(
        vec![
            ToolSpec::named(TERMINAL_NAME),
            ToolSpec::named(FILE_EDITOR_NAME),
            ToolSpec::named(TASK_TRACKER_NAME),
        ],
        enable_browser,
    )
}

/// The GPT-5 preset's tool specs: `terminal`, `apply_patch`, `task_tracker`
/// (`enable_browser` as in [`get_default_tools`]).
pub fn get_gpt5_tools(enable_browser: bool) -> Vec<ToolSpec> {
    with_browser(
        vec![
            ToolSpec::named(TERMINAL_NAME),
            ToolSpec::named(APPLY_PATCH_NAME),
            ToolSpec::named(TASK_TRACKER_NAME),
        ],
        enable_browser,
    )
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

/// The Gemini preset's tool specs: `terminal`, `read_file`, `write_file`,
/// `edit`, `list_directory`, `task_tracker` (`enable_browser` as in
/// [`get_default_tools`]).
pub fn get_gemini_tools(enable_browser: bool) -> Vec<ToolSpec> {
    with_browser(
        vec![
            ToolSpec::named(TERMINAL_NAME),
            ToolSpec::named(READ_FILE_NAME),
            ToolSpec::named(WRITE_FILE_NAME),
            ToolSpec::named(EDIT_NAME),
            ToolSpec::named(LIST_DIRECTORY_NAME),
            ToolSpec::named(TASK_TRACKER_NAME),
        ],
        enable_browser,
    )
}

/// The Gemini agent: like [`get_default_agent`] but editing files with the
/// Gemini-style tools ([`get_gemini_tools`]).
pub fn get_gemini_agent(llm: LlmConfig, cli_mode: bool) -> AgentSpec {
    preset_agent(llm, get_gemini_tools(!cli_mode), cli_mode)
}

/// What each plan section must say, in the order of [`PLAN_SECTIONS`].
const PLAN_SECTION_GUIDE: [&str; 5] = [
    "* State in one or two sentences what the work must achieve.\n* Phrase the problem so that success can be checked.",
    "* Name the parts of the system, files and data the work touches.\n* Note dependencies and constraints, technical or otherwise.",
    "* Describe the chosen approach at a high level.\n* If there were alternatives, say briefly why this one won.",
    "* List the steps in the order they will be done.\n* For each step give:\n  - its **goal** (what it achieves),\n  - its **method** (how, in short),\n  - and, where useful, a **reference** (the file, module or function it changes).",
    "* Explain how the result will be checked.\n* Describe what success looks like: outputs, behaviour or conditions that must hold.",
];

/// The plan structure put into the planning agent's system prompt
/// (`system_prompt_kwargs.plan_structure`): every section of
/// [`PLAN_SECTIONS`] numbered, with what it must contain.
pub fn format_plan_structure() -> String {
    let sections: Vec<String> = PLAN_SECTIONS
        .iter()
        .zip(PLAN_SECTION_GUIDE)
        .enumerate()
        .map(|(i, (title, guide))| {
            format!("{}. {title}\n   {}", i + 1, guide.replace('\n', "\n   "))
        })
        .collect();
    format!(
        "The plan must follow this structure exactly:\n\n{}",
        sections.join("\n\n")
    )
}

/// The planning preset's tool specs: `glob`, `grep` and
/// `planning_file_editor` (with `plan_path` in its params when given).
pub fn get_planning_tools(plan_path: Option<&str>) -> Vec<ToolSpec> {
    let mut editor = ToolSpec::named(PLANNING_FILE_EDITOR_NAME);
    if let Some(p) = plan_path {
        editor
            .params
            .insert("plan_path".to_string(), Value::String(p.to_string()));
    }
    vec![
        ToolSpec::named(GLOB_NAME),
        ToolSpec::named(GREP_NAME),
        editor,
    ]
}

/// The planning agent: [`get_planning_tools`], the planning system prompt
/// (`system_prompt_planning.j2` with `plan_structure`) and a condenser
/// keeping more context (`usage_id` `"planning_condenser"`, at most 100
/// events, always the first 6).
pub fn get_planning_agent(llm: LlmConfig) -> AgentSpec {
    let mut condenser = default_condenser(&llm);
    if let Some(c) = condenser.as_object_mut() {
        c.insert("max_size".into(), json!(100));
        c.insert("keep_first".into(), json!(6));
        if let Some(l) = c.get_mut("llm").and_then(Value::as_object_mut) {
            l.insert("usage_id".into(), json!("planning_condenser"));
        }
    }
    let mut agent = AgentSpec::new(llm, get_planning_tools(None));
    agent.system_prompt_filename = "system_prompt_planning.j2".to_string();
    agent.system_prompt_kwargs.insert(
        "plan_structure".to_string(),
        Value::String(format_plan_structure()),
    );
    agent.condenser = Some(condenser);
    agent
}
