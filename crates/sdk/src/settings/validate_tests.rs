use super::*;
use serde_json::json;

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

#[test]
fn empty_agent_settings_get_every_default() {
    let out = agent(&Map::new()).unwrap();
    assert_eq!(out, defaults::openhands_agent());
}

#[test]
fn lax_numbers_are_coerced_like_the_reference() {
    let out = agent(&obj(
        json!({"llm": {"timeout": "5", "retry_multiplier": 2}}),
    ))
    .unwrap();
    assert_eq!(out["llm"]["timeout"], json!(5));
    assert_eq!(out["llm"]["retry_multiplier"], json!(2.0));
    let out = agent(&obj(json!({"llm": {"timeout": 7.0}}))).unwrap();
    assert_eq!(out["llm"]["timeout"], json!(7));
}

#[test]
fn bad_values_name_the_field() {
    let cases = [
        (
            json!({"tool_concurrency_limit": "many"}),
            "agent_settings.tool_concurrency_limit",
        ),
        (
            json!({"tool_concurrency_limit": 0}),
            "agent_settings.tool_concurrency_limit",
        ),
        (
            json!({"condenser": {"max_size": -1}}),
            "agent_settings.condenser.max_size",
        ),
        (
            json!({"condenser": {"condenser_kind": "noop"}}),
            "agent_settings.condenser.condenser_kind",
        ),
        (json!({"llm": {"top_p": 2}}), "agent_settings.llm.top_p"),
        (
            json!({"llm": {"reasoning_effort": "max"}}),
            "agent_settings.llm.reasoning_effort",
        ),
        (json!({"llm": {"model": 5}}), "agent_settings.llm.model"),
        (
            json!({"agent_context": {"skills": "x"}}),
            "agent_settings.agent_context.skills",
        ),
        (json!({"agent_kind": "other"}), "agent_settings.agent_kind"),
        (
            json!({"mcp_config": {"s": 1}}),
            "agent_settings.mcp_config.s",
        ),
    ];
    for (input, key) in cases {
        let err = agent(&obj(input.clone())).unwrap_err();
        assert_eq!(err.key, key, "{input}");
    }
}

#[test]
fn unknown_keys_of_known_sections_are_dropped_free_maps_kept() {
    let out = agent(&obj(json!({
        "bogus": 1,
        "llm": {"bogus": 2, "litellm_extra_body": {"x": 1}},
        "mcp_config": {"srv": {"command": "c", "anything": true}}
    })))
    .unwrap();
    assert!(out.get("bogus").is_none());
    assert!(out["llm"].get("bogus").is_none());
    assert_eq!(out["llm"]["litellm_extra_body"], json!({"x": 1}));
    assert_eq!(out["mcp_config"]["srv"]["anything"], true);
}

#[test]
fn condenser_kind_switches_the_condenser_shape() {
    let out = agent(&obj(
        json!({"condenser": {"condenser_kind": "no_op", "max_size": 50}}),
    ))
    .unwrap();
    assert_eq!(
        out["condenser"],
        json!({"condenser_kind": "no_op", "enabled": true})
    );
}

#[test]
fn acp_settings_have_their_own_defaults() {
    let out = agent(&obj(json!({"agent_kind": "acp", "acp_server": "codex"}))).unwrap();
    assert_eq!(out["acp_server"], "codex");
    assert!(out.get("llm").is_none());
    assert_eq!(out["acp_prompt_timeout"], json!(1800.0));
    let err = agent(&obj(json!({"agent_kind": "acp", "acp_server": "nope"}))).unwrap_err();
    assert_eq!(err.key, "agent_settings.acp_server");
}

#[test]
fn conversation_settings_refuse_null_and_bad_enums() {
    assert_eq!(
        conversation(&obj(json!({"confirmation_mode": null})))
            .unwrap_err()
            .key,
        "conversation_settings.confirmation_mode"
    );
    assert_eq!(
        conversation(&obj(json!({"default_runtime": "cloud"})))
            .unwrap_err()
            .key,
        "conversation_settings.default_runtime"
    );
    assert_eq!(
        conversation(&obj(json!({"worktree_branch_prefix": "-x"})))
            .unwrap_err()
            .key,
        "conversation_settings.worktree_branch_prefix"
    );
    let ok = conversation(&obj(
        json!({"max_iterations": "20", "security_analyzer": null}),
    ))
    .unwrap();
    assert_eq!(ok["max_iterations"], 20);
    assert_eq!(ok["security_analyzer"], Value::Null);
}
