use super::*;
use crate::error::as_usage;

fn settings(v: Value) -> Settings {
    Settings {
        path: PathBuf::from("/s/settings.json"),
        raw: v.as_object().cloned().unwrap(),
    }
}

#[test]
fn missing_file_is_empty_and_broken_file_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("settings.json");
    let s = Settings::load(&path).unwrap();
    assert!(s.raw().is_empty());
    assert_eq!(s.model().unwrap(), None);
    std::fs::write(&path, "[1]").unwrap();
    let e = Settings::load(&path).unwrap_err();
    assert!(as_usage(&e).unwrap().0.contains("not a JSON object"));
}

#[test]
fn set_keeps_unknown_fields_and_writes_schema_versions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub").join("settings.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, r#"{"misc_settings": {"theme": "dark"}, "agent_settings": {"llm": {"model": "a/b", "temperature": 0.2}}}"#).unwrap();
    Settings::edit(&path, None, |s| {
        s.set_key(Setting::Model, "openai/gpt-5", None)?;
        s.set_key(Setting::MaxIterations, "9", None)
    })
    .unwrap();
    let back = Settings::load(&path).unwrap();
    assert_eq!(back.raw()["misc_settings"]["theme"], "dark");
    assert_eq!(back.raw()["schema_version"], 6);
    assert_eq!(back.raw()["conversation_settings"]["schema_version"], 1);
    assert_eq!(back.model().unwrap().as_deref(), Some("openai/gpt-5"));
    assert_eq!(back.max_iterations().unwrap(), Some(9));
    // Stored LLM fields other than the model apply.
    let llm = back.llm_config("openai/gpt-5").unwrap();
    assert_eq!(llm.temperature, Some(0.2));
}

#[test]
fn api_keys_are_encrypted_with_oh_secret_key_and_masked() {
    let cipher = Cipher::new("passphrase", &[]).unwrap();
    let mut s = Settings::empty("/s/settings.json");
    s.set_key(Setting::ApiKey, "sk-secret-value", Some(&cipher))
        .unwrap();
    let stored = s.raw()["agent_settings"]["llm"]["api_key"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(looks_encrypted(&stored));
    assert_eq!(
        s.api_key(Some(&cipher)).unwrap().as_deref(),
        Some("sk-secret-value")
    );
    let e = s.api_key(None).unwrap_err();
    assert!(e.to_string().contains("OH_SECRET_KEY"));
    assert_eq!(
        s.display(Setting::ApiKey).unwrap().as_deref(),
        Some("(encrypted)")
    );
    let mut plain = Settings::empty("/s/settings.json");
    plain
        .set_key(Setting::ApiKey, "sk-secret-value", None)
        .unwrap();
    assert_eq!(
        plain.display(Setting::ApiKey).unwrap().as_deref(),
        Some("sk-…ue")
    );
    plain.unset_key(Setting::ApiKey);
    assert_eq!(plain.api_key(None).unwrap(), None);
}

#[test]
fn values_are_validated() {
    let mut s = Settings::empty("/s/settings.json");
    for (key, bad) in [
        (Setting::Confirm, "sometimes"),
        (Setting::MaxIterations, "0"),
        (Setting::CondenserMaxSize, "5"),
        (Setting::Condenser, "maybe"),
        (Setting::Stream, "perhaps"),
        (Setting::Tools, "terminal,nope"),
        (Setting::Model, " "),
    ] {
        assert!(s.set_key(key, bad, None).is_err(), "{key:?} accepted {bad}");
    }
    s.set_key(Setting::Confirm, "always", None).unwrap();
    assert_eq!(s.confirm().unwrap(), Some(ConfirmMode::Always));
    assert_eq!(
        s.raw()["conversation_settings"]["security_analyzer"],
        "none"
    );
    s.set_key(Setting::Condenser, "none", None).unwrap();
    assert_eq!(s.condenser().unwrap().enabled, Some(false));
    s.unset_key(Setting::Condenser);
    assert_eq!(s.condenser().unwrap().enabled, None);
}

#[test]
fn keys_parse_by_name_and_location() {
    assert_eq!(Setting::parse("model"), Some(Setting::Model));
    assert_eq!(Setting::parse("llm.model"), Some(Setting::Model));
    assert_eq!(
        Setting::parse("agent_settings.llm.api_key"),
        Some(Setting::ApiKey)
    );
    assert_eq!(
        Setting::parse("max-iterations"),
        Some(Setting::MaxIterations)
    );
    assert_eq!(
        Setting::parse("conversation_settings.max_iterations"),
        Some(Setting::MaxIterations)
    );
    assert_eq!(Setting::parse("colour"), None);
}

#[test]
fn reads_the_reference_shape_and_reports_what_it_cannot_do() {
    let s = settings(json!({
        "schema_version": 6,
        "agent_settings": {
            "agent_kind": "openhands", "agent": "CodeActAgent",
            "llm": {"model": "openai/gpt-5", "api_key": "sk-x", "stream": false},
            "tools": null, "mcp_config": {},
            "condenser": {"condenser_kind": "llm_summarizing", "enabled": true, "max_size": 240, "max_tokens": null, "keep_first": 2},
            "verification": {"critic_enabled": false},
            "agent_context": {"skills": [], "load_user_skills": false, "load_memory": false, "secrets": null}
        },
        "conversation_settings": {"max_iterations": 500, "confirmation_mode": false, "security_analyzer": "llm", "default_runtime": "local"}
    }));
    assert_eq!(s.tools().unwrap(), None);
    assert_eq!(s.confirm().unwrap(), Some(ConfirmMode::Never));
    assert_eq!(s.stream().unwrap(), Some(false));
    assert_eq!(
        s.condenser().unwrap(),
        CondenserSettings {
            enabled: Some(true),
            max_size: Some(240),
            keep_first: Some(2),
            max_tokens: None,
        }
    );
    assert!(s.unsupported().is_empty(), "{:?}", s.unsupported());
    assert!(s.skill_loading().is_empty());
    assert!(s.mcp_servers().is_empty());

    let s = settings(json!({
        "agent_settings": {
            "agent_kind": "acp",
            "mcp_config": {"mcpServers": {"a": {"command": "x"}}},
            "verification": {"critic_enabled": true},
            "condenser": {"max_tokens": 1000},
            "agent_context": {"load_public_skills": true, "load_memory": true, "secrets": {"T": "v"}}
        },
        "conversation_settings": {"default_runtime": "docker"}
    }));
    let problems = s.unsupported().join("\n");
    assert!(s.is_acp());
    assert!(
        !problems.contains("acp") && !problems.contains("secrets"),
        "ACP agents and secrets are supported: {problems}"
    );
    assert!(
        problems.contains("default_runtime is 'docker'"),
        "{problems}"
    );
    assert!(
        !problems.contains("max_tokens")
            && !problems.contains("load_memory")
            && !problems.contains("critic"),
        "max_tokens, persistent memory and the critic are supported: {problems}"
    );
    assert_eq!(s.condenser().unwrap().max_tokens, Some(1000));
    assert_eq!(s.mcp_servers(), vec!["a"]);
    assert_eq!(s.skill_loading(), vec!["load_public_skills"]);
    let bad = settings(json!({"agent_settings": {"condenser": {"condenser_kind": "fancy"}}}));
    assert!(bad.condenser().is_err());
    let bad = settings(json!({"conversation_settings": {"max_iterations": "many"}}));
    assert!(
        bad.max_iterations()
            .unwrap_err()
            .to_string()
            .contains("conversation_settings.max_iterations")
    );
}

#[test]
fn tools_keep_their_parameters_under_the_registered_name() {
    let s = settings(json!({"agent_settings": {"tools": [
        {"name": "TerminalTool", "params": {"no_change_timeout_seconds": 5}},
        {"name": "glob"}
    ]}}));
    let tools = s.tools().unwrap().unwrap();
    assert_eq!(tools[0].name, "terminal");
    assert_eq!(tools[0].params["no_change_timeout_seconds"], 5);
    assert_eq!(tools[1].name, "glob");
}

#[test]
fn routing_settings_give_the_route_task_tool_its_parameters() {
    let off = settings(json!({"agent_settings": {"active_meta_profile": "route"}}));
    assert_eq!(off.routing_tool().unwrap(), None);
    let on = settings(json!({"agent_settings": {
        "enable_classify_and_switch_llm_tool": true,
        "active_meta_profile": "route",
        "meta_profile": null,
        "meta_profile_llms": {"judge": {"model": "openai/gpt-4o-mini"}}
    }}));
    assert!(on.unsupported().is_empty(), "{:?}", on.unsupported());
    let tool = on.routing_tool().unwrap().unwrap();
    assert_eq!(tool.name, "ClassifyAndSwitchLLMTool");
    assert_eq!(tool.params["active_meta_profile"], "route");
    assert!(!tool.params.contains_key("meta_profile"));
    assert_eq!(
        tool.params["meta_profile_llms"]["judge"]["model"],
        "openai/gpt-4o-mini"
    );
    let bad = settings(json!({"agent_settings": {
        "enable_classify_and_switch_llm_tool": true,
        "meta_profile": {"classifier_model": "c", "prompt_template": "no slot"}
    }}));
    let e = bad.routing_tool().unwrap_err().to_string();
    assert!(e.contains("agent_settings.meta_profile"), "{e}");
}
