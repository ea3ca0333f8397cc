//! Plugins after the start: `load_plugin` into a running conversation from
//! a registered marketplace, and plugins pinned to the commit they
//! resolved to when a conversation is resumed. Real directories and git
//! repositories on disk, the scripted model.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::plugin_support;

use common::*;
use openhands_sdk::conversation::{LoadPluginError, PINS_FILE};
use openhands_sdk::plugin::PluginSource;
use openhands_sdk::{ConversationOptions, LocalConversation, skills::context::SkillSources};
use openhands_testkit::Turn;
use openhands_wire::event::EventBody;
use openhands_wire::state::ExecutionStatus;
use plugin_support::{git, write_plugin};
use serde_json::{Value, json};
use std::fs;
use std::path::Path;

fn options(root: &Path, home: &Path, id: uuid::Uuid) -> ConversationOptions {
    let mut o = persisted(root);
    o.conversation_id = Some(id);
    o.extensions.skill_sources = SkillSources {
        home: Some(home.to_path_buf()),
        public_skills_dir: None,
        openhands_dir: None,
        ..Default::default()
    };
    o
}

fn with_context(agent: openhands_sdk::Agent, ctx: Value) -> openhands_sdk::Agent {
    let mut spec = agent.spec().clone();
    spec.agent_context = Some(ctx);
    openhands_sdk::Agent::with_llm(spec, agent.llm().clone(), registry())
}

fn rejections(c: &LocalConversation) -> Vec<String> {
    c.events()
        .into_iter()
        .filter_map(|e| match e.body {
            EventBody::UserReject(r) => Some(r.rejection_reason),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn load_plugin_brings_skills_hooks_and_agents_from_the_next_step() {
    let tmp = tempfile::tempdir().unwrap();
    let market = tmp.path().join("market");
    write_plugin(
        &market.join("plugins/weather"),
        "city-weather",
        "Take an umbrella above 50% rain.",
    );
    fs::create_dir_all(market.join(".plugin")).unwrap();
    fs::write(
        market.join(".plugin/marketplace.json"),
        json!({"name": "team", "owner": {"name": "Team"},
            "plugins": [{"name": "city-weather", "source": "./plugins/weather"}]})
        .to_string(),
    )
    .unwrap();
    let ctx = json!({"registered_marketplaces": [
        {"name": "team", "source": market.to_string_lossy()}]});
    let workspace = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let id = uuid::Uuid::new_v4();
    let (agent, backend) = agent_turns(vec![
        Turn::text("no plugin yet"),
        echo("rm -rf /"),
        finish("done"),
    ]);
    let c = LocalConversation::new(
        with_context(agent, ctx.clone()),
        workspace.path(),
        options(root.path(), tmp.path(), id),
    )
    .unwrap();
    c.send_message("umbrella?").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let first = backend.requests()[0].messages.last().unwrap().text();
    assert!(!first.contains("Take an umbrella"), "{first}");

    // unknown references are "not found", naming what is missing
    let e = c.load_plugin("nope@team").await.unwrap_err();
    assert!(
        matches!(&e, LoadPluginError::NotFound(m) if m == "Plugin 'nope' not found in marketplace 'team'"),
        "{e}"
    );
    let e = c.load_plugin("city-weather@other").await.unwrap_err();
    assert!(
        matches!(&e, LoadPluginError::NotFound(m) if m == "Marketplace 'other' is not registered")
    );
    assert!(matches!(
        c.load_plugin("@team").await.unwrap_err(),
        LoadPluginError::Invalid(_)
    ));

    c.load_plugin("city-weather").await.unwrap();
    // recorded: the agent in the state has the plugin's skill, the plugin
    // is listed with its (local: no) commit
    let skills: Vec<String> = c.state_json()["agent"]["agent_context"]["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(skills, ["rain"]);
    let resolved = c.resolved_plugins();
    assert_eq!(resolved.len(), 1);
    assert!(resolved[0].source.ends_with("plugins/weather"));
    assert!(c.persistence_dir().unwrap().join(PINS_FILE).is_file());

    c.send_message("umbrella again, then clean up").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let reqs = backend.requests();
    let turn = reqs[1].messages.last().unwrap().text();
    assert!(turn.contains("Take an umbrella above 50% rain."), "{turn}");
    assert!(turn.contains("plugin hook says hi"), "{turn}");
    assert_eq!(rejections(&c), ["plugin refuses rm"]);
    c.close().await;

    // resumed: the loaded plugin is loaded again (its hook still blocks)
    // (the scripted model picks its turn by the assistant turns so far: 3)
    let (agent, backend) = agent_turns(vec![
        Turn::text("-"),
        Turn::text("-"),
        Turn::text("-"),
        echo("rm -rf /tmp/x"),
        finish("done"),
    ]);
    let c = LocalConversation::new(
        with_context(agent, ctx),
        workspace.path(),
        options(root.path(), tmp.path(), id),
    )
    .unwrap();
    c.send_message("once more").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    assert_eq!(rejections(&c), ["plugin refuses rm", "plugin refuses rm"]);
    assert!(
        backend
            .requests()
            .last()
            .unwrap()
            .messages
            .iter()
            .any(|m| m.text().contains("plugin hook says hi"))
    );
    c.close().await;
}

#[tokio::test]
async fn a_git_plugin_stays_at_its_commit_when_the_conversation_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    write_plugin(
        &repo.join("plugins/weather"),
        "city-weather",
        "Version one advice.",
    );
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "v1"]);
    let v1 = git(&repo, &["rev-parse", "HEAD"]);
    let spec = PluginSource {
        source: format!("file://{}", repo.display()),
        git_ref: Some("main".into()),
        repo_path: Some("plugins/weather".into()),
    };
    let workspace = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let id = uuid::Uuid::new_v4();
    let start = |turns: Vec<Turn>, id: uuid::Uuid| {
        let (agent, backend) = agent_turns(turns);
        let mut o = options(root.path(), tmp.path(), id);
        o.extensions.plugins = vec![spec.clone()];
        (
            LocalConversation::new(agent, workspace.path(), o).unwrap(),
            backend,
        )
    };
    let (c, backend) = start(vec![Turn::text("ok")], id);
    c.send_message("umbrella?").unwrap();
    c.run().await.unwrap();
    assert!(
        backend.requests()[0]
            .messages
            .last()
            .unwrap()
            .text()
            .contains("Version one advice.")
    );
    let resolved = c.resolved_plugins();
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0].resolved_ref.as_deref(), Some(v1.as_str()));
    assert_eq!(resolved[0].original_ref.as_deref(), Some("main"));
    c.close().await;

    // the branch moves on
    fs::write(
        repo.join("plugins/weather/skills/rain.md"),
        "---\ntriggers: [umbrella]\n---\nVersion two advice.\n",
    )
    .unwrap();
    git(&repo, &["commit", "-q", "-am", "v2"]);

    // resumed: still the first commit (the skill was activated already, so
    // the agent's recorded skill shows the version loaded)
    let (c, _backend) = start(vec![Turn::text("ok")], id);
    c.send_message("go on").unwrap();
    c.run().await.unwrap();
    let rain = |c: &LocalConversation| {
        c.state_json()["agent"]["agent_context"]["skills"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "rain")
            .unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(rain(&c).contains("Version one advice."), "{}", rain(&c));
    assert_eq!(
        c.resolved_plugins()[0].resolved_ref.as_deref(),
        Some(v1.as_str())
    );
    assert_eq!(
        c.resolved_plugins()[0].original_ref.as_deref(),
        Some("main")
    );
    c.close().await;

    // a new conversation gets the branch's head
    let (c, backend) = start(vec![Turn::text("ok")], uuid::Uuid::new_v4());
    c.send_message("umbrella?").unwrap();
    c.run().await.unwrap();
    let text = backend.requests()[0].messages.last().unwrap().text();
    assert!(text.contains("Version two advice."), "{text}");
    c.close().await;
}
