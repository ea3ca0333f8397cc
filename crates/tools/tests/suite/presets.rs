//! Presets: the registry builds working per-conversation tools, and the
//! agent configurations have the reference's shape.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_sdk::tool::{ToolCallContext, ToolEnv};
use openhands_tools::presets::{
    default_registry, format_plan_structure, get_default_agent, get_default_tools,
    get_gemini_agent, get_gemini_tools, get_gpt5_agent, get_gpt5_tools, get_planning_agent,
    get_planning_tools,
};
use openhands_wire::LlmConfig;
use serde_json::{Map, Value, json};

fn llm() -> LlmConfig {
    let mut l: LlmConfig = serde_json::from_value(json!({
        "model": "openai/gpt-4o", "api_key": "sk-test", "usage_id": "agent"
    }))
    .unwrap();
    l.usage_id = "agent".into();
    l
}

#[tokio::test]
async fn registry_has_every_builtin_tool() {
    let reg = default_registry();
    for name in [
        "terminal",
        "file_editor",
        "task_tracker",
        "grep",
        "glob",
        "apply_patch",
        "read_file",
        "write_file",
        "edit",
        "list_directory",
        "planning_file_editor",
        "task_tool_set",
        "task",
        "delegate",
        "browser_tool_set",
    ] {
        assert!(reg.contains(name), "{name} missing");
    }
    let dir = tempfile::tempdir().unwrap();
    let env = ToolEnv::new(dir.path());
    for name in reg.names() {
        let tools = reg.resolve(&name, &Map::new(), &env).unwrap();
        if name == "browser_tool_set" {
            // Fourteen tools on one browser, which starts only when used.
            let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
            assert_eq!(names.len(), 14);
            assert!(names.contains(&"browser_start_recording"), "{names:?}");
            assert!(names.contains(&"browser_stop_recording"), "{names:?}");
            assert!(names.iter().all(|n| n.starts_with("browser_")), "{names:?}");
            for t in &tools {
                t.close().await;
            }
            continue;
        }
        assert_eq!(tools.len(), 1);
        // The task and workflow tool sets offer one tool each.
        let expected = match name.as_str() {
            "task_tool_set" => "task",
            "workflow_tool_set" => "workflow",
            other => other,
        };
        assert_eq!(tools[0].name(), expected);
        tools[0].close().await;
    }
}

#[tokio::test]
async fn instances_are_per_conversation() {
    let reg = default_registry();
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let ta = reg
        .resolve("task_tracker", &Map::new(), &ToolEnv::new(a.path()))
        .unwrap();
    let tb = reg
        .resolve("task_tracker", &Map::new(), &ToolEnv::new(b.path()))
        .unwrap();
    let Value::Object(args) = json!({"command":"plan","task_list":[{"title":"only in a"}]}) else {
        unreachable!()
    };
    let action = ta[0].parse_action(args).unwrap();
    ta[0]
        .execute(action, &ToolCallContext::default())
        .await
        .unwrap();
    let Value::Object(view) = json!({"command":"view"}) else {
        unreachable!()
    };
    let obs = tb[0]
        .execute(
            tb[0].parse_action(view).unwrap(),
            &ToolCallContext::default(),
        )
        .await
        .unwrap();
    assert_eq!(obs["task_list"], json!([]));
}

#[test]
fn default_tools_and_gpt5_tools() {
    let names = |v: Vec<openhands_wire::tool::ToolSpec>| -> Vec<String> {
        v.into_iter().map(|t| t.name).collect()
    };
    assert_eq!(
        names(get_default_tools(false)),
        ["terminal", "file_editor", "task_tracker"]
    );
    assert_eq!(
        names(get_default_tools(true)),
        [
            "terminal",
            "file_editor",
            "task_tracker",
            "browser_tool_set"
        ]
    );
    assert_eq!(
        names(get_gpt5_tools(false)),
        ["terminal", "apply_patch", "task_tracker"]
    );
    assert_eq!(
        names(get_gpt5_tools(true)),
        [
            "terminal",
            "apply_patch",
            "task_tracker",
            "browser_tool_set"
        ]
    );
}

#[test]
fn default_agent_matches_reference_shape() {
    let agent = get_default_agent(llm(), true);
    let v = serde_json::to_value(&agent).unwrap();
    assert_eq!(v["kind"], "Agent");
    assert_eq!(
        v["tools"],
        json!([{"name":"terminal","params":{}},{"name":"file_editor","params":{}},{"name":"task_tracker","params":{}}])
    );
    assert_eq!(v["system_prompt_kwargs"], json!({"cli_mode": true}));
    assert_eq!(
        v["include_default_tools"],
        json!(["FinishTool", "ThinkTool"])
    );
    assert_eq!(v["llm"]["usage_id"], "agent");
    let c = &v["condenser"];
    assert_eq!(c["kind"], "LLMSummarizingCondenser");
    assert_eq!(c["max_size"], 80);
    assert_eq!(c["keep_first"], 4);
    assert_eq!(c["minimum_progress"], 0.1);
    assert_eq!(c["hard_context_reset_max_retries"], 5);
    assert_eq!(c["hard_context_reset_context_scaling"], 0.8);
    assert_eq!(c["llm"]["usage_id"], "condenser");
    assert_eq!(c["llm"]["model"], "openai/gpt-4o");
    // The condenser can authenticate.
    assert_eq!(c["llm"]["api_key"], "sk-test");
    // The agent's own key stays redacted on output.
    assert_eq!(v["llm"]["api_key"], "**********");
    // The spec parses back.
    let back: openhands_wire::agent::AgentSpec = serde_json::from_value(v).unwrap();
    assert_eq!(back.tools.len(), 3);

    let non_cli = serde_json::to_value(get_default_agent(llm(), false)).unwrap();
    assert_eq!(non_cli["system_prompt_kwargs"], json!({"cli_mode": false}));
    // Outside CLI mode the default agent gets the browser.
    assert_eq!(non_cli["tools"][3]["name"], "browser_tool_set");
}

#[test]
fn gpt5_agent_uses_apply_patch() {
    let v = serde_json::to_value(get_gpt5_agent(llm())).unwrap();
    let tools: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    // Outside CLI mode the GPT-5 agent browses, as the reference's does.
    assert_eq!(
        tools,
        [
            "terminal",
            "apply_patch",
            "task_tracker",
            "browser_tool_set"
        ]
    );
    assert!(!tools.contains(&"file_editor"));
    assert_eq!(v["condenser"]["llm"]["usage_id"], "condenser");
}

#[test]
fn gemini_preset_swaps_the_file_editor_for_gemini_tools() {
    let names: Vec<String> = get_gemini_tools(false)
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(
        names,
        [
            "terminal",
            "read_file",
            "write_file",
            "edit",
            "list_directory",
            "task_tracker"
        ]
    );
    let v = serde_json::to_value(get_gemini_agent(llm(), true)).unwrap();
    assert_eq!(v["tools"].as_array().unwrap().len(), 6);
    assert_eq!(v["system_prompt_kwargs"], json!({"cli_mode": true}));
    assert_eq!(v["condenser"]["max_size"], 80);
    assert_eq!(v["condenser"]["keep_first"], 4);
    assert_eq!(v["condenser"]["llm"]["usage_id"], "condenser");
    // Every preset tool resolves in the default registry.
    let reg = default_registry();
    for t in get_gemini_tools(true) {
        assert!(reg.contains(&t.name), "{} not registered", t.name);
    }
}

#[test]
fn planning_preset_has_the_references_shape() {
    let tools = serde_json::to_value(get_planning_tools(Some("/abs/PLAN.md"))).unwrap();
    assert_eq!(
        tools,
        json!([
            {"name":"glob","params":{}},
            {"name":"grep","params":{}},
            {"name":"planning_file_editor","params":{"plan_path":"/abs/PLAN.md"}}
        ])
    );
    let v = serde_json::to_value(get_planning_agent(llm())).unwrap();
    assert_eq!(
        v["tools"][2],
        json!({"name":"planning_file_editor","params":{}})
    );
    assert_eq!(v["system_prompt_filename"], "system_prompt_planning.j2");
    let structure = v["system_prompt_kwargs"]["plan_structure"]
        .as_str()
        .unwrap();
    assert_eq!(structure, format_plan_structure());
    assert!(
        structure
            .starts_with("The plan must follow this structure exactly:\n\n1. OBJECTIVE\n   * ")
    );
    for (i, title) in [
        "CONTEXT SUMMARY",
        "APPROACH OVERVIEW",
        "IMPLEMENTATION STEPS",
        "TESTING AND VALIDATION",
    ]
    .iter()
    .enumerate()
    {
        assert!(
            structure.contains(&format!("\n\n{}. {title}\n   * ", i + 2)),
            "{title}"
        );
    }
    let c = &v["condenser"];
    assert_eq!(
        (c["max_size"].as_i64(), c["keep_first"].as_i64()),
        (Some(100), Some(6))
    );
    assert_eq!(c["llm"]["usage_id"], "planning_condenser");
}
