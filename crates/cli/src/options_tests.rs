use super::*;
use crate::error::as_usage;
use serde_json::json;

fn settings(v: serde_json::Value) -> Settings {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("settings.json");
    std::fs::write(&path, v.to_string()).unwrap();
    Settings::load(&path).unwrap()
}

fn args() -> AgentArgs {
    AgentArgs {
        model: Some("openai/m".into()),
        api_key: Some("k".into()),
        ..AgentArgs::default()
    }
}

#[test]
fn flags_win_over_settings_which_win_over_defaults() {
    let ws = tempfile::tempdir().unwrap();
    let s = settings(json!({
        "agent_settings": {"llm": {"model": "anthropic/x", "api_key": "sk-settings", "base_url": "http://h/v1"},
                           "tools": [{"name": "grep"}]},
        "conversation_settings": {"max_iterations": 3, "confirmation_mode": true}
    }));
    let from_settings = resolve(&AgentArgs::default(), &s, ws.path(), false).unwrap();
    assert_eq!(from_settings.spec.llm.model, "anthropic/x");
    assert_eq!(
        from_settings.spec.llm.api_key.as_ref().unwrap().expose(),
        "sk-settings"
    );
    assert_eq!(
        from_settings.spec.llm.base_url.as_deref(),
        Some("http://h/v1")
    );
    assert_eq!(from_settings.spec.tools.len(), 1);
    assert_eq!(from_settings.max_iterations, 3);
    assert!(from_settings.max_iterations_explicit);
    assert_eq!(from_settings.confirm, ConfirmMode::Risky);
    assert!(
        !from_settings.spec.llm.stream,
        "run does not stream by default"
    );

    let flags = AgentArgs {
        model: Some("openai/flag".into()),
        tools: Some(vec!["glob".into(), "terminal".into()]),
        confirm: Some(ConfirmMode::Never),
        max_iterations: Some(8),
        no_stream: true,
        ..AgentArgs::default()
    };
    let c = resolve(&flags, &s, ws.path(), true).unwrap();
    assert_eq!(c.spec.llm.model, "openai/flag");
    assert_eq!(c.spec.llm.api_key.as_ref().unwrap().expose(), "sk-settings");
    let names: Vec<&str> = c.spec.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["glob", "terminal"]);
    assert_eq!((c.confirm, c.max_iterations), (ConfirmMode::Never, 8));
    assert!(!c.spec.llm.stream);

    let defaults = resolve(&args(), &settings(json!({})), ws.path(), true).unwrap();
    let names: Vec<&str> = defaults
        .spec
        .tools
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(names, vec!["terminal", "file_editor", "task_tracker"]);
    assert_eq!(defaults.confirm, ConfirmMode::Never);
    assert!(!defaults.confirm_explicit);
    assert_eq!(defaults.max_iterations, DEFAULT_MAX_ITERATIONS);
    assert!(
        defaults.spec.llm.stream,
        "the interactive session streams by default"
    );
    assert!(defaults.spec.condenser.is_some());
    assert_eq!(defaults.spec.llm.usage_id, "agent");
}

#[test]
fn condenser_choices_and_limits() {
    let ws = tempfile::tempdir().unwrap();
    let none = AgentArgs {
        condenser: Some(CondenserChoice::None),
        ..args()
    };
    assert!(
        resolve(&none, &settings(json!({})), ws.path(), false)
            .unwrap()
            .spec
            .condenser
            .is_none()
    );
    let s = settings(json!({"agent_settings": {"condenser": {"max_size": 30, "keep_first": 3}}}));
    let c = resolve(&args(), &s, ws.path(), false).unwrap();
    let cond = c.spec.condenser.unwrap();
    assert_eq!(
        (cond["max_size"].as_u64(), cond["keep_first"].as_u64()),
        (Some(30), Some(3))
    );
    let s = settings(json!({"agent_settings": {"condenser": {"max_size": 20, "keep_first": 18}}}));
    let e = resolve(&args(), &s, ws.path(), false).unwrap_err();
    assert!(as_usage(&e).unwrap().0.contains("less than max_size // 2"));
    let off = settings(json!({"agent_settings": {"condenser": {"enabled": false}}}));
    assert!(
        resolve(&args(), &off, ws.path(), false)
            .unwrap()
            .spec
            .condenser
            .is_none()
    );
}

#[test]
fn skills_inline_disabled_and_repository_notice() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("AGENTS.md"), "be nice").unwrap();
    let s = settings(json!({"agent_settings": {"agent_context": {
        "skills": [{"name": "a", "content": "A"}, {"name": "b", "content": "B"}],
        "disabled_skills": ["b"],
        "system_message_suffix": "suffix"
    }}}));
    let c = resolve(&args(), &s, ws.path(), false).unwrap();
    let ctx = c.spec.agent_context.unwrap();
    assert_eq!(ctx["skills"], json!([{"name": "a", "content": "A"}]));
    assert_eq!(ctx["system_message_suffix"], "suffix");
    assert_eq!(
        ctx["load_project_skills"], true,
        "repository skills are loaded"
    );
    let none = AgentArgs {
        no_skills: true,
        ..args()
    };
    let c = resolve(&none, &s, ws.path(), false).unwrap();
    let ctx = c.spec.agent_context.unwrap();
    assert!(ctx.get("skills").is_none());
    assert!(ctx.get("load_project_skills").is_none());
}

#[test]
fn missing_model_or_key_are_usage_errors() {
    let ws = tempfile::tempdir().unwrap();
    let e = resolve(
        &AgentArgs::default(),
        &settings(json!({})),
        ws.path(),
        false,
    )
    .unwrap_err();
    assert!(as_usage(&e).unwrap().0.starts_with("no model configured"));
    let no_key = AgentArgs {
        model: Some("openai/m".into()),
        ..AgentArgs::default()
    };
    let e = resolve(&no_key, &settings(json!({})), ws.path(), false).unwrap_err();
    assert!(
        as_usage(&e)
            .unwrap()
            .0
            .starts_with("no API key for openai/m")
    );
    let local = AgentArgs {
        base_url: Some("http://localhost:8000/v1".into()),
        ..no_key
    };
    assert!(resolve(&local, &settings(json!({})), ws.path(), false).is_ok());
}

#[test]
fn verification_settings_give_the_agent_the_references_critic() {
    let ws = tempfile::tempdir().unwrap();
    let s = settings(json!({
        "agent_settings": {"verification": {"critic_enabled": true, "critic_mode": "all_actions",
            "enable_iterative_refinement": true, "max_refinement_iterations": 2,
            "critic_server_url": "http://127.0.0.1:9/vllm"}}
    }));
    let c = resolve(&args(), &s, ws.path(), false).unwrap();
    let critic = c.spec.critic.unwrap();
    assert_eq!(critic["kind"], "APIBasedCritic");
    assert_eq!(
        critic["api_key"], "k",
        "the LLM's key when the critic has none"
    );
    assert_eq!(critic["mode"], "all_actions");
    assert_eq!(critic["iterative_refinement"]["max_iterations"], 2);
    assert_eq!(critic["server_url"], "http://127.0.0.1:9/vllm");

    let off = settings(json!({"agent_settings": {"verification": {"critic_enabled": false}}}));
    assert!(
        resolve(&args(), &off, ws.path(), false)
            .unwrap()
            .spec
            .critic
            .is_none()
    );
    let bad = settings(
        json!({"agent_settings": {"verification": {"critic_enabled": true,
        "critic_mode": "sometimes"}}}),
    );
    let e = resolve(&args(), &bad, ws.path(), false).unwrap_err();
    assert!(as_usage(&e).is_some(), "{e}");
    assert!(e.to_string().contains("agent_settings.verification"), "{e}");
}
