#![allow(clippy::unwrap_used)]

use super::*;
use serde_json::json;

#[test]
fn markdown_frontmatter_maps_to_fields_and_extras() {
    let text = "---\nname: reviewer\ndescription: Reviews. <example>check my PR</example>\n\
                model: fast\ntools: terminal\nskills: a, b\npermission_mode: Confirm_Risky\n\
                max_iteration_per_run: '12'\nmax_budget_per_run: 1.5\ncondenser: off\n\
                mcp_servers:\n  fetch:\n    command: uvx\nteam: core\n---\n\n  Be strict.\n";
    let d = AgentDefinition::parse_markdown(text, Path::new("/p/.agents/agents/x.md")).unwrap();
    assert_eq!(d.name, "reviewer");
    assert_eq!(d.model, "fast");
    assert_eq!(d.tools, vec!["terminal"]);
    assert_eq!(d.skills, vec!["a", "b"]);
    assert_eq!(d.permission_mode.as_deref(), Some("confirm_risky"));
    assert_eq!(d.max_iteration_per_run, Some(12));
    assert_eq!(d.max_budget_per_run, Some(1.5));
    assert_eq!(d.condenser, Some(json!({"kind": "NoOpCondenser"})));
    assert_eq!(d.mcp_config, Some(json!({"fetch": {"command": "uvx"}})));
    assert_eq!(d.when_to_use_examples, vec!["check my PR"]);
    assert_eq!(d.system_prompt, "Be strict.");
    assert_eq!(
        d.metadata,
        json!({"team": "core"}).as_object().unwrap().clone()
    );
    assert_eq!(d.source.as_deref(), Some("/p/.agents/agents/x.md"));
}

#[test]
fn the_file_stem_names_an_unnamed_definition_and_model_defaults_to_inherit() {
    let d = AgentDefinition::parse_markdown("Just a prompt.", Path::new("helper.md")).unwrap();
    assert_eq!(d.name, "helper");
    assert_eq!(d.model, INHERIT_MODEL);
    assert_eq!(d.system_prompt, "Just a prompt.");
    assert!(d.tools.is_empty());
}

#[test]
fn invalid_markdown_fields_are_named() {
    let e = AgentDefinition::parse_markdown(
        "---\npermission_mode: sometimes\n---\nx",
        Path::new("a.md"),
    )
    .unwrap_err();
    assert_eq!(e.field, "permission_mode");
    let e =
        AgentDefinition::parse_markdown("---\nmax_iteration_per_run: 0\n---\n", Path::new("a.md"))
            .unwrap_err();
    assert_eq!(e.field, "max_iteration_per_run");
}

#[test]
fn json_definitions_are_validated_field_by_field() {
    let ok = AgentDefinition::from_value(&json!({"name": "w", "tools": ["terminal"]})).unwrap();
    assert_eq!(ok.model, "inherit");
    let cases = [
        (json!({"description": "no name"}), "name"),
        (json!({"name": ""}), "name"),
        (
            json!({"name": "w", "max_iteration_per_run": 0}),
            "max_iteration_per_run",
        ),
        (
            json!({"name": "w", "max_budget_per_run": -1.0}),
            "max_budget_per_run",
        ),
        (
            json!({"name": "w", "permission_mode": "maybe"}),
            "permission_mode",
        ),
        (json!({"name": "w", "tools": "terminal"}), "tools"),
        (json!({"name": "w", "mcp_config": [1]}), "mcp_config"),
        (json!({"name": "w", "hooks": {"nonsense": 1}}), "hooks"),
    ];
    for (value, field) in cases {
        match AgentDefinition::from_value(&value) {
            Err(e) => assert_eq!(e.field, field, "{value}: {e}"),
            Ok(d) => panic!("{value} accepted as {d:?}"),
        }
    }
}

#[test]
fn definitions_round_trip_as_json() {
    let mut d = AgentDefinition::named("w", "desc");
    d.tools = vec!["terminal".into()];
    d.level = Some("project".into());
    let v = serde_json::to_value(&d).unwrap();
    assert_eq!(v["model"], "inherit");
    assert_eq!(AgentDefinition::from_value(&v).unwrap(), d);
}

#[test]
fn the_reference_clients_dump_is_accepted() {
    // `AgentDefinition(...).model_dump(mode="json")` of openhands-sdk 1.58.2.
    let dump = json!({"name": "x", "description": "", "model": "inherit", "color": null,
        "tools": ["terminal"], "skills": [], "system_prompt": "", "source": null, "level": null,
        "when_to_use_examples": [], "hooks": {"pre_tool_use": [], "post_tool_use": [],
        "user_prompt_submit": [], "session_start": [], "session_end": [], "stop": []},
        "permission_mode": null, "max_iteration_per_run": 3, "max_budget_per_run": null,
        "mcp_config": null, "profile_store_dir": null, "condenser": null, "metadata": {}});
    let d = AgentDefinition::from_value(&dump).unwrap();
    assert_eq!(d.tools, vec!["terminal"]);
    assert_eq!(d.max_iteration_per_run, Some(3));
}
