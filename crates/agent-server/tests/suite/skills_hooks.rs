//! Skills and hooks through the server with the scripted LLM: repository
//! skills in the system prompt, keyword skills on the user turn, a
//! PreToolUse hook that keeps a command from running, and the settings
//! that are refused (422 naming the field) rather than ignored.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use openhands_testkit::{Script, Turn};
use serde_json::{Value, json};

fn request_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The agent's requests (title generation has no tools).
fn agent_requests(env: &Env) -> Vec<Value> {
    env.mock
        .completion_requests()
        .into_iter()
        .map(|r| r.body)
        .filter(|b| b["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .collect()
}

fn message(body: &Value, role: &str, last: bool) -> String {
    let msgs: Vec<&Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == role)
        .collect();
    let m = if last { msgs.last() } else { msgs.first() }.unwrap();
    request_text(&json!({"messages": [m]}))
}

#[tokio::test]
async fn project_skills_and_keyword_triggers_through_the_server() {
    let env = Env::start(|_| Script::from_turns([Turn::text("noted")])).await;
    let ws = env.workspace();
    std::fs::write(ws.join("AGENTS.md"), "Use tabs for indentation.\n").unwrap();
    std::fs::create_dir_all(ws.join(".openhands/skills")).unwrap();
    std::fs::write(
        ws.join(".openhands/skills/deploy.md"),
        "---\ntriggers: [deploy]\n---\nDeploy with ./ship.sh only.\n",
    )
    .unwrap();
    let mut agent = env.agent(&["file_editor"]);
    agent["agent_context"] = json!({"load_project_skills": true, "load_memory": true});
    std::fs::create_dir_all(ws.join(".openhands/memory")).unwrap();
    std::fs::write(
        ws.join(".openhands/memory/MEMORY.md"),
        "- staging needs VPN",
    )
    .unwrap();
    let info = env
        .create(json!({
            "agent": agent,
            "initial_message": {"role": "user", "content": [{"type": "text", "text": "please deploy it"}], "run": true}
        }))
        .await;
    let id = info["id"].as_str().unwrap();
    let info = env.wait_status(id, &["finished"]).await;
    let reqs = agent_requests(&env);
    let body = &reqs[0];
    let system = message(body, "system", false);
    assert!(
        system
            .contains("[BEGIN context from [agents]]\nUse tabs for indentation.\n\n[END Context]"),
        "{system}"
    );
    assert!(system.contains("<name>deploy</name>"));
    assert!(system.contains("# Project memory (.openhands/memory/MEMORY.md)\n- staging needs VPN"));
    let user = message(body, "user", true);
    assert!(
        user.contains("please deploy it") && user.contains("Deploy with ./ship.sh only."),
        "{user}"
    );
    assert_eq!(info["activated_knowledge_skills"], json!(["deploy"]));
    // the resolved skills are part of the stored agent
    let state: Value = serde_json::from_slice(
        &std::fs::read(
            env.conversations_dir()
                .join(id.replace('-', ""))
                .join("base_state.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let names: Vec<&str> = state["agent"]["agent_context"]["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["agents", "deploy"]);
    // the API leaves skills out unless asked for them
    let (_, plain) = env.get(&format!("/api/conversations/{id}")).await;
    assert_eq!(plain["agent"]["agent_context"]["skills"], json!([]));
    let (_, with) = env
        .get(&format!("/api/conversations/{id}?include_skills=true"))
        .await;
    assert_eq!(
        with["agent"]["agent_context"]["skills"][0]["name"],
        "agents"
    );
    let (_, batch) = env
        .get(&format!("/api/conversations?ids={id}&include_skills=true"))
        .await;
    assert_eq!(
        batch[0]["agent"]["agent_context"]["skills"][1]["name"],
        "deploy"
    );
    let (_, page) = env
        .get("/api/conversations/search?include_skills=true")
        .await;
    assert_eq!(
        page["items"][0]["agent"]["agent_context"]["skills"][0]["name"],
        "agents"
    );
    let (_, page) = env.get("/api/conversations/search").await;
    assert_eq!(
        page["items"][0]["agent"]["agent_context"]["skills"],
        json!([])
    );
    let events = env.events(id).await;
    let msg = events
        .iter()
        .find(|e| e["kind"] == "MessageEvent" && e["source"] == "user")
        .unwrap();
    assert_eq!(msg["activated_skills"], json!(["deploy"]));
    assert!(
        msg["extended_content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("<EXTRA_INFO>")
    );
}

#[tokio::test]
async fn a_pre_tool_use_hook_keeps_a_command_from_running() {
    let env = Env::start(|_| {
        Script::from_turns([
            Turn::tool_call("terminal", json!({"command": "touch blocked.txt"})),
            Turn::tool_call("terminal", json!({"command": "touch allowed.txt"})),
            Turn::tool_call("finish", json!({"message": "done"})),
        ])
    })
    .await;
    let hooks = json!({"hooks": {"PreToolUse": [{"matcher": "terminal", "hooks": [{
        "type": "command",
        "command": "if grep -q blocked.txt; then echo '{\"decision\":\"deny\",\"reason\":\"blocked.txt is off limits\"}'; fi",
        "timeout": 10
    }]}]}});
    let info = env
        .create(json!({
            "agent": env.agent(&["terminal"]),
            "hook_config": hooks,
            "initial_message": {"role": "user", "content": [{"type": "text", "text": "make files"}], "run": true}
        }))
        .await;
    let id = info["id"].as_str().unwrap();
    env.wait_status(id, &["finished"]).await;
    let ws = env.workspace();
    assert!(!ws.join("blocked.txt").exists(), "the blocked command ran");
    assert!(ws.join("allowed.txt").exists());
    let events = env.events(id).await;
    let reject = events
        .iter()
        .find(|e| e["kind"] == "UserRejectObservation")
        .unwrap();
    assert_eq!(reject["rejection_source"], "hook");
    assert_eq!(reject["rejection_reason"], "blocked.txt is off limits");
    let hook_events: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "HookExecutionEvent")
        .collect();
    assert_eq!(hook_events.len(), 2);
    assert_eq!(hook_events[0]["source"], "hook");
    assert_eq!(hook_events[0]["hook_event_type"], "PreToolUse");
    assert_eq!(hook_events[0]["blocked"], true);
    assert_eq!(hook_events[1]["blocked"], false);
    let reqs = agent_requests(&env);
    assert!(request_text(&reqs[1]).contains("blocked.txt is off limits"));
}

#[tokio::test]
async fn unsupported_extensions_are_refused_naming_the_field() {
    let env = Env::start(|_| Script::from_turns([Turn::text("x")])).await;
    let cases = [
        (
            json!({"plugins": [{"source": "./my-plugin", "repo_path": "../up"}]}),
            "repo_path",
        ),
        (json!({"plugins": [{"ref": "main"}]}), "plugins"),
        (
            json!({"agent_definitions": [{"name": "helper", "max_iteration_per_run": 0}]}),
            "max_iteration_per_run",
        ),
        (
            json!({"hook_config": {"BeforeEverything": []}}),
            "hook_config",
        ),
        (
            json!({"hook_config": {"stop": [{"hooks": [{"type": "agent", "command": "judge"}]}]}}),
            "hook_config",
        ),
    ];
    for (extra, field) in cases {
        let (status, body) = env.post("/api/conversations", env.start_body(extra)).await;
        assert_eq!(status, 422, "{body}");
        let locs: Vec<String> = body["detail"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["loc"].to_string())
            .collect();
        assert!(locs.iter().any(|l| l.contains(field)), "{field}: {body}");
    }
    // Public skills without a local copy are fetched into the persistence
    // directory's cache on first use: accepted.
    let mut agent = env.agent(&["file_editor"]);
    agent["agent_context"] = json!({ "load_public_skills": true });
    let (status, body) = env
        .post(
            "/api/conversations",
            env.start_body(json!({"agent": agent})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    // an empty plugin list is the default of clients and is accepted
    let (status, body) = env
        .post(
            "/api/conversations",
            env.start_body(json!({"plugins": [], "agent_definitions": []})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
}

#[tokio::test]
async fn skills_and_hooks_routes_read_the_project() {
    let env = Env::start(|_| Script::from_turns([Turn::text("x")])).await;
    let ws = env.workspace();
    std::fs::write(ws.join("CLAUDE.md"), "Prefer small commits.").unwrap();
    std::fs::create_dir_all(ws.join(".agents/skills/lint-fix")).unwrap();
    std::fs::write(
        ws.join(".agents/skills/lint-fix/SKILL.md"),
        "---\nname: lint-fix\ndescription: Fix lint errors.\ntriggers: [lint]\n---\nRun the linter.",
    )
    .unwrap();
    let dir = ws.to_string_lossy().to_string();
    let (status, body) = env
        .post(
            "/api/skills",
            json!({"load_public": false, "load_user": false, "project_dir": dir}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["skills"],
        json!([
            {"name": "claude", "type": "repo", "content": "Prefer small commits.", "triggers": [],
             "source": ws.join("CLAUDE.md").to_string_lossy(), "description": null,
             "is_agentskills_format": false, "disable_model_invocation": false},
            {"name": "lint-fix", "type": "agentskills", "content": "Run the linter.", "triggers": ["lint"],
             "source": ws.join(".agents/skills/lint-fix/SKILL.md").to_string_lossy(),
             "description": "Fix lint errors.", "is_agentskills_format": true, "disable_model_invocation": false}
        ])
    );
    assert_eq!(body["sources"]["project"], 2);
    // public skills need a local copy: refused, naming the field
    let (status, body) = env.post("/api/skills", json!({"project_dir": dir})).await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["detail"][0]["loc"].to_string().contains("load_public"),
        "{body}"
    );

    let (status, body) = env.post("/api/hooks", json!({"project_dir": dir})).await;
    assert_eq!((status, body), (200, json!({"hook_config": null})));
    std::fs::create_dir_all(ws.join(".openhands")).unwrap();
    std::fs::write(
        ws.join(".openhands/hooks.json"),
        r#"{"hooks": {"PreToolUse": [{"matcher": "terminal", "hooks": [{"command": "check.sh"}]}]}}"#,
    )
    .unwrap();
    let (status, body) = env.post("/api/hooks", json!({"project_dir": dir})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["hook_config"]["pre_tool_use"][0]["matcher"],
        "terminal"
    );
    assert_eq!(
        body["hook_config"]["pre_tool_use"][0]["hooks"][0]["command"],
        "check.sh"
    );
    assert_eq!(
        body["hook_config"]["pre_tool_use"][0]["hooks"][0]["timeout"],
        60
    );
    assert_eq!(body["hook_config"]["stop"], json!([]));
}

#[tokio::test]
async fn a_path_rule_is_added_to_the_first_matching_tool_result() {
    let env = Env::start(|ws| {
        let create = |name: &str| {
            Turn::tool_call(
                "file_editor",
                json!({"command": "create", "path": ws.join(name).to_string_lossy(), "file_text": "x\n"}),
            )
        };
        Script::from_turns([
            create("docs/readme.md"),
            create("src/api/users.ts"),
            create("src/api/orders.ts"),
            Turn::tool_call("finish", json!({"message": "done"})),
        ])
    })
    .await;
    let ws = env.workspace();
    std::fs::create_dir_all(ws.join(".agents/skills")).unwrap();
    std::fs::write(
        ws.join(".agents/skills/api-validation.md"),
        "---\npaths:\n  - \"src/api/**/*.ts\"\n---\nValidate every request body.\n",
    )
    .unwrap();
    let mut agent = env.agent(&["file_editor"]);
    agent["agent_context"] = json!({"load_project_skills": true});
    let info = env
        .create(json!({
            "agent": agent,
            "initial_message": {"role": "user", "content": [{"type": "text", "text": "write the api"}], "run": true}
        }))
        .await;
    let id = info["id"].as_str().unwrap();
    env.wait_status(id, &["finished"]).await;
    let events = env.events(id).await;
    let extended: Vec<usize> = events
        .iter()
        .filter(|e| e["kind"] == "ObservationEvent" && e["tool_name"] == "file_editor")
        .map(|e| e["extended_content"].as_array().unwrap().len())
        .collect();
    assert_eq!(
        extended,
        [0, 1, 0],
        "only the first matching file brings the rule"
    );
    let reqs = agent_requests(&env);
    let system = message(&reqs[0], "system", false);
    assert!(
        !system.contains("Validate every request body."),
        "rules stay out of the prompt"
    );
    assert!(!system.contains("api-validation"));
    assert!(request_text(&reqs[2]).contains("Validate every request body."));
    let state: Value = serde_json::from_slice(
        &std::fs::read(
            env.conversations_dir()
                .join(id.replace('-', ""))
                .join("base_state.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(state["activated_path_rules"], json!(["api-validation"]));
}
