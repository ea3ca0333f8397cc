//! Plugins end to end: plugin directories and git repositories on disk,
//! marketplaces, and what the scripted model receives.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::plugin_support;

use common::*;
use openhands_sdk::plugin::PluginSource;
use openhands_sdk::{LocalConversation, skills::context::SkillSources};
use openhands_testkit::{Script, Turn};
use openhands_wire::event::EventBody;
use openhands_wire::message::Role;
use openhands_wire::state::ExecutionStatus;
use plugin_support::{git, write_full_plugin};
use serde_json::{Value, json};
use std::fs;
use std::path::Path;

fn system_text(req: &openhands_llm::LlmRequest) -> String {
    req.messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.text())
        .collect::<Vec<_>>()
        .join("\n")
}

struct Setup {
    conversation: LocalConversation,
    backend: std::sync::Arc<openhands_testkit::ScriptedLlm>,
    _dirs: Vec<tempfile::TempDir>,
}

fn conversation(
    turns: Vec<Turn>,
    context: Option<Value>,
    plugins: Vec<PluginSource>,
    home: &Path,
) -> Setup {
    conversation_with(turns, context, plugins, home, true)
}

fn conversation_with(
    turns: Vec<Turn>,
    context: Option<Value>,
    plugins: Vec<PluginSource>,
    home: &Path,
    echo_tool: bool,
) -> Setup {
    let workspace = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let (agent, backend) = agent(Script::from_turns(turns));
    let mut spec = agent.spec().clone();
    spec.agent_context = context;
    if !echo_tool {
        spec.tools.clear();
    }
    let agent = openhands_sdk::Agent::with_llm(spec, agent.llm().clone(), registry());
    let mut options = persisted(root.path());
    options.extensions.skill_sources = SkillSources {
        home: Some(home.to_path_buf()),
        public_skills_dir: None,
        openhands_dir: None,
        ..Default::default()
    };
    options.extensions.plugins = plugins;
    let conversation = LocalConversation::new(agent, workspace.path(), options).unwrap();
    Setup {
        conversation,
        backend,
        _dirs: vec![workspace, root],
    }
}

fn context_skill_names(c: &LocalConversation) -> Vec<String> {
    c.state_json()["agent"]["agent_context"]["skills"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| s["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_local_plugin_brings_skills_commands_hooks_and_agents() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("weather");
    write_full_plugin(&dir, "city-weather", "Take an umbrella above 50% rain.");
    let s = conversation(
        vec![echo("rm -rf /"), echo("ls"), finish("done")],
        Some(
            json!({"skills": [{"name": "rain", "content": "old rain advice",
            "trigger": {"type": "keyword", "keywords": ["umbrella"]}}]}),
        ),
        vec![PluginSource::new(dir.to_string_lossy())],
        tmp.path(),
    );
    let c = &s.conversation;
    c.send_message("Need an umbrella? /city-weather:now Oslo")
        .unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    // the plugin's skill replaces the same-named one; the command is a skill
    assert_eq!(
        context_skill_names(c),
        ["rain", "forecast-api", "city-weather:now"]
    );
    let reqs = s.backend.requests();
    let system = system_text(&reqs[0]);
    assert!(
        system.contains(
            "<name>forecast-api</name>\n    <description>Query the forecast API.</description>"
        ),
        "{system}"
    );
    let user = reqs[0].messages.last().unwrap();
    assert_eq!(user.role, Role::User);
    let text = user.text();
    assert!(text.contains("Take an umbrella above 50% rain."), "{text}");
    assert!(!text.contains("old rain advice"));
    assert!(
        text.contains("Report the weather for $ARGUMENTS."),
        "{text}"
    );
    assert!(text.contains("plugin hook says hi"), "{text}");
    let events = c.events();
    let msg = events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::Message(m) if m.llm_message.role == Role::User => Some(m.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(msg.activated_skills, ["rain", "city-weather:now"]);
    // the plugin's PreToolUse hook blocked the first call, allowed the second
    let rejected: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::UserReject(r) => Some(r.rejection_reason.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(rejected, ["plugin refuses rm"]);
    let hooks: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::HookExecution(h) => Some(h.hook_event_type.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(hooks, ["UserPromptSubmit", "PreToolUse", "PreToolUse"]);
    // no error events: everything loaded
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.body, EventBody::ConversationError(_)))
    );
}

#[tokio::test]
async fn a_git_plugin_is_cloned_at_its_ref_from_a_monorepo_path() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("monorepo");
    fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    write_full_plugin(
        &repo.join("plugins/weather"),
        "city-weather",
        "Version one advice.",
    );
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "v1"]);
    let v1 = git(&repo, &["rev-parse", "HEAD"]);
    fs::write(
        repo.join("plugins/weather/skills/rain.md"),
        "---\ntriggers: [umbrella]\n---\nVersion two advice.\n",
    )
    .unwrap();
    git(&repo, &["commit", "-q", "-am", "v2"]);
    let home = tempfile::tempdir().unwrap();
    let url = format!("file://{}", repo.display());
    let latest = PluginSource {
        source: url.clone(),
        git_ref: None,
        repo_path: Some("plugins/weather".into()),
    };
    let pinned = PluginSource {
        git_ref: Some(v1.clone()),
        ..latest.clone()
    };
    for (spec, expected) in [
        (latest, "Version two advice."),
        (pinned, "Version one advice."),
    ] {
        let s = conversation(vec![Turn::text("ok")], None, vec![spec], home.path());
        s.conversation.send_message("umbrella?").unwrap();
        s.conversation.run().await.unwrap();
        let text = s.backend.requests()[0].messages.last().unwrap().text();
        assert!(text.contains(expected), "{text}");
    }
    // cloned into the user's plugin cache
    let cache = home.path().join(".openhands/cache/plugins");
    let entries: Vec<_> = fs::read_dir(&cache).unwrap().flatten().collect();
    assert_eq!(entries.len(), 1);
    assert!(
        entries[0]
            .file_name()
            .to_string_lossy()
            .starts_with("monorepo-")
    );
}

#[tokio::test]
async fn a_plugin_that_does_not_load_is_reported_and_the_others_still_apply() {
    let tmp = tempfile::tempdir().unwrap();
    let good = tmp.path().join("good");
    write_full_plugin(&good, "good-plugin", "Good advice.");
    let bad = tmp.path().join("bad");
    fs::create_dir_all(bad.join(".claude-plugin")).unwrap();
    fs::write(bad.join(".claude-plugin/plugin.json"), "{broken").unwrap();
    let missing = tmp.path().join("missing");
    let s = conversation(
        vec![Turn::text("ok")],
        None,
        vec![
            PluginSource::new(missing.to_string_lossy()),
            PluginSource::new(bad.to_string_lossy()),
            PluginSource::new(good.to_string_lossy()),
        ],
        tmp.path(),
    );
    let c = &s.conversation;
    c.send_message("umbrella?").unwrap();
    c.run().await.unwrap();
    let text = s.backend.requests()[0].messages.last().unwrap().text();
    assert!(text.contains("Good advice."), "{text}");
    let errors: Vec<(String, String)> = c
        .events()
        .into_iter()
        .filter_map(|e| match e.body {
            EventBody::ConversationError(x) => Some((x.code, x.detail)),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors.iter().all(|(code, _)| code == "PluginError"));
    assert!(errors[0].1.contains("missing") && errors[0].1.contains("does not exist"));
    assert!(errors[1].1.contains("plugin.json") && errors[1].1.contains("Invalid JSON"));
}

#[tokio::test]
async fn an_auto_loading_marketplace_brings_its_plugins_and_skills() {
    let tmp = tempfile::tempdir().unwrap();
    let market = tmp.path().join("market");
    write_full_plugin(
        &market.join("plugins/weather"),
        "city-weather",
        "Market advice.",
    );
    write_full_plugin(&market.join("plugins/other"), "other", "Never loaded.");
    fs::create_dir_all(market.join("skills/git-tips")).unwrap();
    fs::write(
        market.join("skills/git-tips/SKILL.md"),
        "---\nname: git-tips\ndescription: Git tips.\n---\nUse git switch.\n",
    )
    .unwrap();
    fs::create_dir_all(market.join(".plugin")).unwrap();
    fs::write(
        market.join(".plugin/marketplace.json"),
        json!({"name": "team", "owner": {"name": "Team"},
            "plugins": [{"name": "city-weather", "source": "./plugins/weather"},
                        {"name": "other", "source": "./plugins/other"}],
            "skills": [{"name": "git-tips", "source": "./skills/git-tips"}]})
        .to_string(),
    )
    .unwrap();
    let s = conversation(
        vec![Turn::text("ok")],
        Some(json!({"registered_marketplaces": [
            {"name": "team", "source": market.to_string_lossy(), "auto_load": ["city-weather", "git-tips"]},
            {"name": "lazy", "source": "/does/not/matter"}
        ]})),
        Vec::new(),
        tmp.path(),
    );
    let c = &s.conversation;
    c.send_message("umbrella?").unwrap();
    c.run().await.unwrap();
    assert_eq!(
        context_skill_names(c),
        ["git-tips", "forecast-api", "rain", "city-weather:now"]
    );
    let text = s.backend.requests()[0].messages.last().unwrap().text();
    assert!(text.contains("Market advice.") && !text.contains("Never loaded."));
    assert!(system_text(&s.backend.requests()[0]).contains("<name>git-tips</name>"));
}

#[tokio::test]
async fn a_plugin_mcp_server_joins_the_agent_tools() {
    let Ok(index) = std::env::var("OPENHANDS_TEST_MCP_EVERYTHING") else {
        eprintln!("OPENHANDS_TEST_MCP_EVERYTHING unset; skipped");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mcp-plugin");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": {"everything": {"command": "node", "args": [index]}}}).to_string(),
    )
    .unwrap();
    // The server's `echo` would clash with the test registry's.
    let s = conversation_with(
        vec![Turn::text("ok")],
        None,
        vec![PluginSource::new(dir.to_string_lossy())],
        tmp.path(),
        false,
    );
    let c = &s.conversation;
    c.send_message("hi").unwrap();
    c.run().await.unwrap();
    let state = c.state_json();
    assert_eq!(
        state["agent"]["mcp_config"]["everything"]["command"],
        "node"
    );
    let reqs = s.backend.requests();
    assert!(
        reqs[0]
            .tools
            .iter()
            .any(|t| t.name == "get-sum" || t.name == "get_sum"),
        "{:?}",
        reqs[0].tools.iter().map(|t| &t.name).collect::<Vec<_>>()
    );
    c.close().await;
}

#[test]
fn marketplace_skills_list_standalone_then_plugin_skills() {
    let tmp = tempfile::tempdir().unwrap();
    let market = tmp.path().join("market");
    write_full_plugin(&market.join("plugins/weather"), "city-weather", "x");
    fs::create_dir_all(market.join("skills/rain")).unwrap();
    fs::write(
        market.join("skills/rain/SKILL.md"),
        "---\nname: rain\ndescription: standalone rain\n---\nstandalone",
    )
    .unwrap();
    fs::create_dir_all(market.join(".plugin")).unwrap();
    fs::write(
        market.join(".plugin/marketplace.json"),
        json!({"name": "team", "owner": {"name": "T"},
            "plugins": [{"name": "city-weather", "source": "./plugins/weather"}],
            "skills": [{"name": "rain", "source": "./skills/rain"}]})
        .to_string(),
    )
    .unwrap();
    let regs = openhands_sdk::plugin::marketplace::registrations(&json!([
        {"name": "team", "source": market.to_string_lossy(), "auto_load": true},
        {"name": "off", "source": "/nowhere"}
    ]))
    .unwrap();
    let mut problems = Vec::new();
    let skills = openhands_sdk::plugin::apply::marketplace_skills(
        &regs,
        &openhands_sdk::plugin::FetchSettings::for_dir(Some(tmp.path()), Default::default()),
        &mut problems,
    );
    assert!(problems.is_empty(), "{problems:?}");
    let names: Vec<(&str, &str)> = skills
        .iter()
        .map(|s| (s.name.as_str(), s.content.as_str()))
        .collect();
    // the plugin's `rain` replaces the standalone one in place
    assert_eq!(names[0], ("rain", "x"));
    assert_eq!(names.len(), 3);
    assert!(
        openhands_sdk::plugin::marketplace::registrations(&json!([
            {"name": "a", "source": "/x", "repo_path": "../up"}
        ]))
        .is_err()
    );
}
