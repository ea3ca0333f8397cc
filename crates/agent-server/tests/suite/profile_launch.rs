//! Agent profiles as launch specs: `POST /api/agent-profiles/{name}/materialize`
//! (the dry run, dangling references reported) and `agent_profile_id` in
//! the start request (the profile's LLM profile, tools, prompt suffix and
//! secret scope build the agent; the launch is recorded as
//! `launched_agent_profile`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use openhands_testkit::{Script, Turn};
use serde_json::{Value, json};

fn done(_: &std::path::Path) -> Script {
    Script::from_turns([Turn::text("done by profile")]).with_toolless_reply(Turn::text("A title"))
}

async fn setup(env: &Env) -> String {
    let llm = json!({"model": "openai/mock-model", "base_url": env.mock.base_url(), "api_key": "sk-prof-1", "num_retries": 0});
    let (s, body) = env
        .post(
            "/api/profiles/fast",
            json!({"llm": llm, "include_secrets": true}),
        )
        .await;
    assert_eq!(s, 201, "{body}");
    let (s, body) = env
        .post(
            "/api/agent-profiles/p1",
            json!({"llm_profile_ref": "fast", "tools": [{"name": "file_editor"}],
                   "secret_refs": ["ALLOWED"], "system_message_suffix": "PROFILE-SUFFIX-42"}),
        )
        .await;
    assert_eq!(s, 201, "{body}");
    let (_, got) = env.get("/api/agent-profiles/p1").await;
    got["profile"]["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn materialize_reports_resolution_without_secrets() {
    let env = Env::start(done).await;
    setup(&env).await;
    let (s, d) = env
        .post("/api/agent-profiles/p1/materialize", json!({}))
        .await;
    assert_eq!(s, 200, "{d}");
    assert_eq!(d["valid"], true, "{d}");
    assert_eq!(d["agent_kind"], "openhands");
    assert_eq!(d["llm_profile_ref"], "fast");
    assert_eq!(d["llm_profile_resolved"], true);
    assert_eq!(d["llm_api_key_set"], true);
    assert_eq!(d["secret_refs"], json!(["ALLOWED"]));
    assert_eq!(d["errors"], json!([]));
    let settings = &d["resolved_settings"];
    assert_eq!(settings["llm"]["model"], "openai/mock-model");
    assert_eq!(settings["llm"]["api_key"], "**********");
    assert_eq!(settings["tools"], json!([{"name": "file_editor"}]));
    assert!(!d.to_string().contains("sk-prof-1"));
    // No body at all is the stored profile too.
    let resp = env
        .client
        .post(env.url("/api/agent-profiles/p1/materialize"))
        .header("X-Session-API-Key", KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);

    // A draft with dangling references: reported, not raised.
    let (s, d) = env
        .post(
            "/api/agent-profiles/p1/materialize",
            json!({"profile": {"llm_profile_ref": "missing", "mcp_server_refs": ["nope", "nope"]}}),
        )
        .await;
    assert_eq!(s, 200, "{d}");
    assert_eq!(d["valid"], false);
    assert_eq!(d["llm_profile_resolved"], false);
    assert_eq!(d["dangling_mcp_server_refs"], json!(["nope"]));
    assert_eq!(
        d["errors"],
        json!([
            "LLM profile 'missing' not found",
            "MCP server(s) not configured: nope"
        ])
    );
    assert_eq!(d["resolved_settings"], Value::Null);

    let (s, d) = env
        .post("/api/agent-profiles/zzz/materialize", json!({}))
        .await;
    assert_eq!(
        (s, d),
        (404, json!({"detail": "Agent profile 'zzz' not found"}))
    );
    let (s, d) = env
        .post(
            "/api/agent-profiles/p1/materialize",
            json!({"profile": {"bogus": 1}}),
        )
        .await;
    assert_eq!(s, 422, "{d}");
    let (s, d) = env
        .post("/api/agent-profiles/p1/materialize", json!({"other": 1}))
        .await;
    assert_eq!(s, 422);
    assert_eq!(d["detail"][0]["type"], "extra_forbidden");
    let (s, _) = env
        .post("/api/agent-profiles/-bad/materialize", json!({}))
        .await;
    assert_eq!(s, 422);
}

#[tokio::test]
async fn agent_profile_id_builds_the_agent_and_scopes_secrets() {
    let env = Env::start(done).await;
    let id = setup(&env).await;
    let body = json!({
        "agent_profile_id": id,
        "workspace": {"kind": "LocalWorkspace", "working_dir": env.workspace().to_string_lossy()},
        "secrets": {"ALLOWED": "yes", "OTHER": "no"},
    });
    let (s, info) = env.post("/api/conversations", body).await;
    assert_eq!(s, 201, "{info}");
    assert_eq!(
        info["launched_agent_profile"],
        json!({"agent_profile_id": id, "revision": 0, "secret_refs": ["ALLOWED"], "llm_profile_ref": null})
    );
    assert_eq!(info["agent"]["llm"]["model"], "openai/mock-model");
    let tools: Vec<&str> = info["agent"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["file_editor"]);
    let conv = info["id"].as_str().unwrap().to_string();
    let (s, _) = env.send(&conv, "hello", true).await;
    assert_eq!(s, 200);
    env.wait_finished_and_settled(&conv).await;
    let events = env.events(&conv).await;
    let text = serde_json::to_string(&events).unwrap();
    assert!(
        text.contains("PROFILE-SUFFIX-42"),
        "the profile's prompt suffix reaches the agent"
    );
    assert!(text.contains("done by profile"));
    let meta = std::fs::read_to_string(
        env.conversations_dir()
            .join(conv.replace('-', ""))
            .join("meta.json"),
    )
    .unwrap();
    assert!(
        meta.contains("ALLOWED") && !meta.contains("OTHER"),
        "{meta}"
    );

    // Unknown id, dangling references, mixed sources.
    let ws = json!({"kind": "LocalWorkspace", "working_dir": env.workspace().to_string_lossy()});
    let unknown = uuid::Uuid::new_v4();
    let (s, d) = env
        .post(
            "/api/conversations",
            json!({"agent_profile_id": unknown, "workspace": ws}),
        )
        .await;
    assert_eq!(
        (s, d),
        (
            404,
            json!({"detail": format!("Agent profile with id '{unknown}' not found")})
        )
    );
    let (s, _) = env
        .post(
            "/api/agent-profiles/broken",
            json!({"llm_profile_ref": "gone", "mcp_server_refs": ["x"]}),
        )
        .await;
    assert_eq!(s, 201);
    let (_, broken) = env.get("/api/agent-profiles/broken").await;
    let (s, d) = env
        .post(
            "/api/conversations",
            json!({"agent_profile_id": broken["profile"]["id"], "workspace": ws}),
        )
        .await;
    assert_eq!(s, 422, "{d}");
    assert_eq!(d["detail"]["code"], "unresolved_profile_references");
    assert_eq!(d["detail"]["dangling_llm_profile_ref"], "gone");
    assert_eq!(d["detail"]["dangling_mcp_server_refs"], json!(["x"]));
    // The launch override picks another LLM profile.
    let (s, info) = env
        .post(
            "/api/conversations",
            json!({"agent_profile_id": broken["profile"]["id"], "workspace": ws,
                   "agent_launch_additions": {"llm_profile_ref": "fast"}}),
        )
        .await;
    assert_eq!(s, 422, "the MCP reference still dangles: {info}");
    let (s, d) = env
        .post(
            "/api/conversations",
            json!({"agent_profile_id": id, "workspace": ws, "agent": env.agent(&[])}),
        )
        .await;
    assert_eq!(s, 422);
    assert!(d.to_string().contains("mutually exclusive"), "{d}");
}

/// A public skill `name` in the cached clone of the public repository.
fn public_skill(env: &Env, name: &str) {
    let repo = env
        .dir
        .path()
        .join("persistence/cache/skills/public-skills");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    let dir = repo.join("skills").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let marker = name.to_uppercase();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {marker}-SKILL-DESC\n---\nUse {marker} wisely.\n"),
    )
    .unwrap();
}

#[tokio::test]
async fn a_profile_launch_keeps_the_public_skills_it_selects() {
    let env = Env::start(done).await;
    public_skill(&env, "alpha-tool");
    public_skill(&env, "beta-tool");
    public_skill(&env, "gamma-tool");
    let id = setup(&env).await;
    let (s, body) = env
        .post(
            "/api/agent-profiles/p1",
            json!({"llm_profile_ref": "fast", "tools": [{"name": "file_editor"}],
                   "public_skills": ["alpha-tool", "gamma-tool", "not-in-catalog"],
                   "disabled_skills": ["gamma-tool"]}),
        )
        .await;
    assert!(s == 200 || s == 201, "{s} {body}");

    let (s, d) = env
        .post("/api/agent-profiles/p1/materialize", json!({}))
        .await;
    assert_eq!(s, 200, "{d}");
    let names: Vec<&str> = d["resolved_skills"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(names.contains(&"alpha-tool"), "{d}");
    assert!(!names.contains(&"beta-tool"), "not allowed: {d}");
    assert!(!names.contains(&"gamma-tool"), "disabled: {d}");
    let ctx = &d["resolved_settings"]["agent_context"];
    assert_eq!(ctx["load_public_skills"], false, "{ctx}");
    assert_eq!(ctx["load_user_skills"], false, "{ctx}");
    assert_eq!(ctx["load_project_skills"], true, "{ctx}");

    let body = json!({
        "agent_profile_id": id,
        "workspace": {"kind": "LocalWorkspace", "working_dir": env.workspace().to_string_lossy()},
    });
    let (s, info) = env.post("/api/conversations", body).await;
    assert_eq!(s, 201, "{info}");
    let conv = info["id"].as_str().unwrap().to_string();
    let (s, _) = env.send(&conv, "hello", true).await;
    assert_eq!(s, 200);
    env.wait_finished_and_settled(&conv).await;
    let text = serde_json::to_string(&env.events(&conv).await).unwrap();
    assert!(
        text.contains("ALPHA-TOOL-SKILL-DESC"),
        "the selected public skill reaches the agent"
    );
    assert!(!text.contains("BETA-TOOL-SKILL-DESC"));
    assert!(!text.contains("GAMMA-TOOL-SKILL-DESC"));
}

#[tokio::test]
async fn a_routing_profile_resolves_its_meta_profile_and_launches_with_the_tool() {
    let env = Env::start(done).await;
    setup(&env).await;
    let draft = |meta: &str| {
        json!({"profile": {"llm_profile_ref": "fast", "enable_classify_and_switch_llm_tool": true,
                           "meta_profile_ref": meta}})
    };
    let (s, d) = env
        .post("/api/agent-profiles/p1/materialize", draft("route"))
        .await;
    assert_eq!(s, 200, "{d}");
    assert_eq!(d["valid"], false);
    assert_eq!(d["meta_profile_ref"], "route");
    assert_eq!(d["dangling_meta_profile_ref"], "route");
    assert_eq!(d["errors"], json!(["Meta-profile 'route' not found"]));

    let save = |model: &str| json!({"classifier_model": "fast", "classes": [{"description": "anything", "model": model}]});
    let (s, body) = env.post("/api/meta-profiles/route", save("ghost")).await;
    assert_eq!(s, 201, "{body}");
    let (_, d) = env
        .post("/api/agent-profiles/p1/materialize", draft("route"))
        .await;
    assert_eq!(d["dangling_meta_profile_ref"], Value::Null);
    assert_eq!(d["dangling_meta_profile_llm_refs"], json!(["ghost"]));
    assert_eq!(
        d["errors"],
        json!(["LLM profile(s) routed to by the meta-profile not found: ghost"])
    );

    let (s, body) = env.post("/api/meta-profiles/route", save("fast")).await;
    assert_eq!(s, 201, "{body}");
    let (_, d) = env
        .post("/api/agent-profiles/p1/materialize", draft("route"))
        .await;
    assert_eq!(d["valid"], true, "{d}");
    let settings = &d["resolved_settings"];
    assert_eq!(settings["active_meta_profile"], "route");
    assert_eq!(settings["meta_profile"]["classifier_model"], "fast");
    assert_eq!(
        settings["meta_profile_llms"]["fast"]["api_key"],
        "**********"
    );
    assert!(!d.to_string().contains("sk-prof-1"));

    // Stored and launched: the agent gets the routing tool.
    let mut profile = draft("route")["profile"].clone();
    profile["tools"] = json!([{"name": "file_editor"}]);
    let (s, body) = env.post("/api/agent-profiles/router", profile).await;
    assert_eq!(s, 201, "{body}");
    let (_, got) = env.get("/api/agent-profiles/router").await;
    let id = got["profile"]["id"].as_str().unwrap().to_string();
    let body = json!({
        "agent_profile_id": id,
        "workspace": {"kind": "LocalWorkspace", "working_dir": env.workspace().to_string_lossy()},
    });
    let (s, info) = env.post("/api/conversations", body).await;
    assert_eq!(s, 201, "{info}");
    let tool = info["agent"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "ClassifyAndSwitchLLMTool")
        .cloned()
        .expect("the routing tool");
    assert_eq!(tool["params"]["active_meta_profile"], "route");
    assert_eq!(
        tool["params"]["meta_profile_llms"]["fast"]["model"],
        "openai/mock-model"
    );
    assert!(!info.to_string().contains("sk-prof-1"));
}
