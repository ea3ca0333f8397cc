//! Plugins and marketplaces through the server with the scripted LLM: the
//! start request's `plugins` and the agent context's
//! `registered_marketplaces` (local directories), what the model receives,
//! the plugin's hooks, a plugin that does not load, and a restart.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use openhands_testkit::{Script, Turn};
use serde_json::{Value, json};
use std::fs;
use std::path::Path;

fn write_plugin(dir: &Path) {
    fs::create_dir_all(dir.join(".claude-plugin")).unwrap();
    fs::write(
        dir.join(".claude-plugin/plugin.json"),
        json!({"name": "release-kit", "version": "0.3.0"}).to_string(),
    )
    .unwrap();
    fs::create_dir_all(dir.join("skills")).unwrap();
    fs::write(
        dir.join("skills/changelog.md"),
        "---\ntriggers: [release]\n---\nUpdate CHANGELOG.md before tagging.\n",
    )
    .unwrap();
    fs::create_dir_all(dir.join("commands")).unwrap();
    fs::write(
        dir.join("commands/ship.md"),
        "---\ndescription: Ship it\n---\nTag and push.\n",
    )
    .unwrap();
    fs::create_dir_all(dir.join("hooks")).unwrap();
    fs::write(
        dir.join("hooks/hooks.json"),
        json!({"hooks": {"PreToolUse": [{"matcher": "terminal", "hooks": [{"type": "command",
            "command": "if grep -q blocked.txt; then echo 'release-kit forbids it' >&2; exit 2; fi"}]}]}})
        .to_string(),
    )
    .unwrap();
}

fn user_text(body: &Value) -> String {
    let msgs = body["messages"].as_array().unwrap();
    let last = msgs.iter().rev().find(|m| m["role"] == "user").unwrap();
    match &last["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn agent_requests(env: &Env) -> Vec<Value> {
    env.mock
        .completion_requests()
        .into_iter()
        .map(|r| r.body)
        .filter(|b| b["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .collect()
}

#[tokio::test]
async fn start_request_plugins_bring_skills_and_hooks() {
    let mut env = Env::start(|_| {
        Script::from_turns([
            Turn::tool_call("terminal", json!({"command": "touch blocked.txt"})),
            Turn::tool_call("terminal", json!({"command": "touch allowed.txt"})),
            Turn::tool_call("finish", json!({"message": "done"})),
            Turn::tool_call("terminal", json!({"command": "touch blocked.txt"})),
            Turn::text("stopped"),
        ])
    })
    .await;
    let plugin = env.workspace().parent().unwrap().join("release-kit");
    write_plugin(&plugin);
    let missing = env.workspace().parent().unwrap().join("no-such-plugin");
    let info = env
        .create(json!({
            "agent": env.agent(&["terminal"]),
            "plugins": [{"source": missing.to_string_lossy()}, {"source": plugin.to_string_lossy(), "ref": null}],
            "initial_message": {"role": "user", "content": [{"type": "text", "text": "prepare the release, /release-kit:ship"}], "run": true}
        }))
        .await;
    let id = info["id"].as_str().unwrap().to_string();
    let info = env.wait_status(&id, &["finished"]).await;
    let reqs = agent_requests(&env);
    let text = user_text(&reqs[0]);
    assert!(
        text.contains("Update CHANGELOG.md before tagging."),
        "{text}"
    );
    assert!(text.contains("Tag and push."), "{text}");
    assert_eq!(
        info["activated_knowledge_skills"],
        json!(["changelog", "release-kit:ship"])
    );
    let ws = env.workspace();
    assert!(
        !ws.join("blocked.txt").exists(),
        "the plugin hook did not block"
    );
    assert!(ws.join("allowed.txt").exists());
    let events = env.events(&id).await;
    let reject = events
        .iter()
        .find(|e| e["kind"] == "UserRejectObservation")
        .unwrap();
    assert_eq!(reject["rejection_reason"], "release-kit forbids it");
    let errors: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "ConversationErrorEvent")
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["code"], "PluginError");
    assert!(
        errors[0]["detail"]
            .as_str()
            .unwrap()
            .contains("no-such-plugin")
    );

    // after a restart the plugins load again: the hook still blocks
    env.restart().await;
    let (status, _) = env
        .post(
            &format!("/api/conversations/{id}/events"),
            json!({"role": "user", "content": [{"type": "text", "text": "once more"}], "run": true}),
        )
        .await;
    assert_eq!(status, 200);
    env.wait_status(&id, &["finished"]).await;
    assert!(
        !ws.join("blocked.txt").exists(),
        "the hook was lost on resume"
    );
    let rejects = env
        .events(&id)
        .await
        .into_iter()
        .filter(|e| e["kind"] == "UserRejectObservation")
        .count();
    assert_eq!(rejects, 2);
}

#[tokio::test]
async fn registered_marketplaces_auto_load_through_the_server() {
    let env = Env::start(|_| Script::from_turns([Turn::text("ok")])).await;
    let market = env.workspace().parent().unwrap().join("market");
    write_plugin(&market.join("plugins/release-kit"));
    fs::create_dir_all(market.join(".claude-plugin")).unwrap();
    fs::write(
        market.join(".claude-plugin/marketplace.json"),
        json!({"name": "team", "owner": {"name": "Team"},
            "plugins": [{"name": "release-kit", "source": "./plugins/release-kit"}]})
        .to_string(),
    )
    .unwrap();
    let mut agent = env.agent(&["file_editor"]);
    agent["agent_context"] = json!({"registered_marketplaces": [
        {"name": "team", "source": market.to_string_lossy(), "auto_load": true}]});
    let info = env
        .create(json!({
            "agent": agent,
            "initial_message": {"role": "user", "content": [{"type": "text", "text": "cut a release"}], "run": true}
        }))
        .await;
    let id = info["id"].as_str().unwrap();
    let info = env.wait_status(id, &["finished"]).await;
    assert_eq!(info["activated_knowledge_skills"], json!(["changelog"]));
    let text = user_text(&agent_requests(&env)[0]);
    assert!(
        text.contains("Update CHANGELOG.md before tagging."),
        "{text}"
    );

    // Loading a plugin of its marketplaces into the running conversation
    // works; an unknown one is a 404 naming it.
    let (status, body) = env
        .post(
            &format!("/api/conversations/{id}/load_plugin"),
            json!({"plugin_ref": "release-kit@team"}),
        )
        .await;
    assert_eq!((status, body), (200, json!({"success": true})));
    let (status, body) = env
        .post(
            &format!("/api/conversations/{id}/load_plugin"),
            json!({"plugin_ref": "nothing@team"}),
        )
        .await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(
        body["detail"],
        "Plugin 'nothing' not found in marketplace 'team'"
    );

    // a registration the reference refuses is a 422 naming the field
    let mut bad = env.agent(&["file_editor"]);
    bad["agent_context"] = json!({"registered_marketplaces": [
        {"name": "a", "source": "/x"}, {"name": "a", "source": "/y"}]});
    let (status, body) = env
        .post("/api/conversations", env.start_body(json!({"agent": bad})))
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body.to_string().contains("registered_marketplaces"),
        "{body}"
    );
}

#[tokio::test]
async fn installed_plugins_and_skills_routes() {
    let env = Env::start(|_| Script::from_turns([Turn::text("ok")])).await;
    let base = env.workspace().parent().unwrap().to_path_buf();
    let src = base.join("release-kit");
    write_plugin(&src);
    // the name must be kebab-case: the manifest's
    let (status, body) = env
        .post(
            "/api/plugins/install",
            json!({"source": src.to_string_lossy()}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["name"], "release-kit");
    assert_eq!(body["version"], "0.3.0");
    assert_eq!(body["enabled"], true);
    assert_eq!(body["resolved_ref"], Value::Null);
    let installed = base.join("persistence/plugins/installed/release-kit");
    assert_eq!(body["install_path"], json!(installed.to_string_lossy()));
    assert_eq!(
        body["skills"],
        json!([{"name": "changelog", "description": null},
               {"name": "release-kit:ship", "description": "Ship it"}])
    );
    assert!(
        body["files"]
            .as_array()
            .unwrap()
            .contains(&json!("hooks/hooks.json"))
    );
    let (status, body) = env
        .post(
            "/api/plugins/install",
            json!({"source": src.to_string_lossy()}),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        body["detail"],
        "Plugin already installed. Use force=true to overwrite."
    );
    let (status, body) = env
        .post(
            "/api/plugins/install",
            json!({"source": base.join("nowhere").to_string_lossy()}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = env.get("/api/plugins/installed").await;
    assert_eq!(status, 200);
    assert_eq!(body["plugins"].as_array().unwrap().len(), 1);
    let (status, body) = env
        .call(
            "PATCH",
            "/api/plugins/installed/release-kit",
            Some(json!({"enabled": false})),
        )
        .await;
    assert_eq!(
        (status, body),
        (200, json!({"name": "release-kit", "enabled": false}))
    );
    let (status, body) = env.get("/api/plugins/installed/release-kit").await;
    assert_eq!(status, 200);
    assert_eq!(body["enabled"], false);
    let (status, body) = env.get("/api/plugins/installed/Not_Kebab").await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["detail"][0]["type"], "string_pattern_mismatch");
    assert_eq!(body["detail"][0]["loc"], json!(["path", "plugin_name"]));
    let (status, body) = env.get("/api/plugins/installed/other").await;
    assert_eq!(status, 404);
    assert_eq!(body["detail"], "Plugin 'other' is not installed");
    // the local list: user + enabled installed (disabled: not listed), project
    let project_plugin = env.workspace().join(".openhands/plugins/release-kit");
    write_plugin(&project_plugin);
    let (status, body) = env
        .post(
            "/api/plugins",
            json!({"project_dir": env.workspace().to_string_lossy()}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let listed = body["plugins"].as_array().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        listed[0]["path"],
        json!(
            std::fs::canonicalize(&project_plugin)
                .unwrap()
                .to_string_lossy()
        )
    );
    let (status, body) = env
        .post("/api/plugins/installed/release-kit/refresh", json!({}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["message"], "Plugin 'release-kit' updated");
    assert_eq!(body["plugin"]["enabled"], false);
    let (status, body) = env
        .call("DELETE", "/api/plugins/installed/release-kit", None)
        .await;
    assert_eq!(
        (status, body),
        (200, json!({"message": "Plugin 'release-kit' uninstalled"}))
    );
    assert!(!installed.exists());

    // skills
    let skill = base.join("lint-fix");
    fs::create_dir_all(&skill).unwrap();
    fs::write(
        skill.join("SKILL.md"),
        "---\nname: lint-fix\ndescription: Fix lint.\n---\nRun the linter.\n",
    )
    .unwrap();
    let (status, body) = env
        .post(
            "/api/skills/install",
            json!({"source": skill.to_string_lossy()}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["name"], "lint-fix");
    assert!(body.get("skills").is_none());
    let (status, body) = env
        .post(
            "/api/skills/install",
            json!({"source": src.to_string_lossy()}),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["detail"],
        "Invalid skill. Ensure the source contains a valid SKILL.md."
    );
    let (_, body) = env.get("/api/skills/installed").await;
    assert_eq!(body["skills"][0]["name"], "lint-fix");
    // an installed skill reaches the user skills of a conversation
    let (status, body) = env
        .post(
            "/api/skills",
            json!({"load_public": false, "load_project": false}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["skills"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == "lint-fix"),
        "{body}"
    );
    let (status, _) = env
        .call("DELETE", "/api/skills/installed/lint-fix", None)
        .await;
    assert_eq!(status, 200);
    let (status, body) = env
        .call("DELETE", "/api/skills/installed/lint-fix", None)
        .await;
    assert_eq!(
        (status, body["detail"].clone()),
        (404, json!("Skill 'lint-fix' is not installed"))
    );
}
