use super::*;
use std::fs;

/// A plugin with every component, in the Claude Code layout.
pub(crate) fn write_full_plugin(dir: &Path) {
    fs::create_dir_all(dir.join(".claude-plugin")).unwrap();
    fs::write(
        dir.join(".claude-plugin/plugin.json"),
        r#"{"name": "city-weather", "version": "2.0.0", "description": "Weather", "author": "Ann <ann@x.org>", "entry_command": "now", "homepage": "https://x"}"#,
    )
    .unwrap();
    fs::create_dir_all(dir.join("skills/forecast")).unwrap();
    fs::write(
        dir.join("skills/forecast/SKILL.md"),
        "---\nname: forecast\ndescription: Forecasts\n---\nUse the forecast API.",
    )
    .unwrap();
    fs::write(
        dir.join("skills/umbrella.md"),
        "---\ntriggers: [umbrella]\n---\nBring an umbrella when rain > 50%.",
    )
    .unwrap();
    fs::create_dir_all(dir.join("skills/nested/deep")).unwrap();
    fs::write(dir.join("skills/nested/deep/x.md"), "not a skill").unwrap();
    fs::create_dir_all(dir.join("hooks")).unwrap();
    fs::write(
        dir.join("hooks/hooks.json"),
        r#"{"hooks": {"PreToolUse": [{"matcher": "terminal", "hooks": [{"type": "command", "command": "exit 0"}]}]}}"#,
    )
    .unwrap();
    fs::write(
        dir.join(".mcp.json"),
        r#"{"mcpServers": {"weather": {"command": "${SKILL_ROOT}/bin/server", "args": ["--key", "${API_KEY:-none}"]}}}"#,
    )
    .unwrap();
    fs::create_dir_all(dir.join("agents")).unwrap();
    fs::write(
        dir.join("agents/meteorologist.md"),
        "---\nname: meteorologist\ndescription: Reads weather maps\n---\nYou read maps.",
    )
    .unwrap();
    fs::create_dir_all(dir.join("commands")).unwrap();
    fs::write(
        dir.join("commands/now.md"),
        "---\ndescription: Weather now\n---\nReport the weather.",
    )
    .unwrap();
    fs::write(dir.join("commands/README.md"), "docs").unwrap();
}

#[test]
fn loads_every_component_of_a_claude_code_plugin() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("weather");
    write_full_plugin(&dir);
    let l = load(&dir).unwrap();
    assert!(l.problems.is_empty(), "{:?}", l.problems);
    let p = l.plugin;
    assert_eq!(p.name(), "city-weather");
    assert_eq!(p.manifest.version, "2.0.0");
    assert_eq!(
        p.manifest.author.as_ref().and_then(|a| a.email.as_deref()),
        Some("ann@x.org")
    );
    assert_eq!(
        p.manifest.extra.get("homepage"),
        Some(&Value::String("https://x".into()))
    );
    assert_eq!(
        p.entry_slash_command().as_deref(),
        Some("/city-weather:now")
    );
    let names: Vec<&str> = p.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["forecast", "umbrella"]);
    let hooks = p.hooks.as_ref().unwrap();
    assert_eq!(hooks.pre_tool_use.len(), 1);
    let real = fs::canonicalize(&dir).unwrap();
    assert_eq!(
        p.mcp_config["weather"]["command"],
        Value::String(format!("{}/bin/server", real.display()))
    );
    assert_eq!(p.mcp_config["weather"]["args"][1], "${API_KEY:-none}");
    assert_eq!(p.agents[0].name, "meteorologist");
    assert_eq!(p.commands.len(), 1);
    let all: Vec<String> = p.all_skills().into_iter().map(|s| s.name).collect();
    assert_eq!(all, ["forecast", "umbrella", "city-weather:now"]);
}

#[test]
fn a_directory_without_manifest_is_named_after_itself_and_a_root_skill_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("Solo_Skill");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("SKILL.md"),
        "---\nname: Solo_Skill\ndescription: d\n---\nbody",
    )
    .unwrap();
    let p = load(&dir).unwrap().plugin;
    assert_eq!(p.name(), "Solo_Skill");
    assert_eq!(p.manifest.description, "Plugin loaded from Solo_Skill");
    // Plugins do not hold skill names to the AgentSkills rule.
    assert_eq!(p.skills[0].name, "Solo_Skill");
}

#[test]
fn bad_pieces_are_reported_by_file_and_bad_plugins_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope");
    let e = load(&missing).unwrap_err().to_string();
    assert!(
        e.contains("Plugin directory not found") && e.contains("nope"),
        "{e}"
    );

    let broken = tmp.path().join("broken");
    fs::create_dir_all(broken.join(".plugin")).unwrap();
    fs::write(broken.join(".plugin/plugin.json"), "{not json").unwrap();
    let e = load(&broken).unwrap_err().to_string();
    assert!(
        e.contains("Invalid JSON") && e.contains("plugin.json"),
        "{e}"
    );

    let portable = tmp.path().join("portable");
    fs::create_dir_all(&portable).unwrap();
    fs::write(
        portable.join("plugin.json"),
        r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "p"}"#,
    )
    .unwrap();
    assert!(
        load(&portable)
            .unwrap_err()
            .to_string()
            .contains("Agent Plugins")
    );

    let partial = tmp.path().join("partial");
    fs::create_dir_all(partial.join("hooks")).unwrap();
    fs::write(partial.join("hooks/hooks.json"), r#"{"Bogus": []}"#).unwrap();
    fs::write(partial.join(".mcp.json"), "[1]").unwrap();
    let l = load(&partial).unwrap();
    assert!(l.plugin.hooks.is_none() && l.plugin.mcp_config.is_empty());
    assert_eq!(l.problems.len(), 2);
    assert!(l.problems[0].contains("hooks.json"), "{:?}", l.problems);
    assert!(l.problems[1].contains(".mcp.json"), "{:?}", l.problems);
}
