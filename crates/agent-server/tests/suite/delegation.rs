//! Delegation through the server with the scripted LLM: sub-agent
//! definitions in the start request are used by the `task` tool, invalid
//! ones are refused naming the field, and `POST /api/sub-agents` lists the
//! project's and the built-in agents.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use openhands_testkit::{Script, Turn};
use serde_json::{Value, json};

fn system_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "system")
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_definitions_of_the_start_request_are_used_by_the_task_tool() {
    let env = Env::start(|_| {
        Script::from_turns([
            Turn::tool_call(
                "task",
                json!({"prompt": "[[mock:script:helper]] summarize the repo", "subagent_type": "helper", "description": "summary"}),
            ),
            Turn::tool_call("finish", json!({"message": "parent done"})),
        ])
        .with_script(
            "helper",
            vec![Turn::tool_call("finish", json!({"message": "helper says hi"}))],
        )
        .with_toolless_reply(Turn::text("A title"))
    })
    .await;
    let info = env
        .create(json!({
            "agent": env.agent(&["task_tool_set"]),
            "agent_definitions": [{
                "name": "helper",
                "description": "Summarises things.",
                "system_prompt": "You are the helper sub-agent.",
                "tools": ["file_editor"],
                "max_iteration_per_run": 5
            }],
            "initial_message": {"role": "user", "content": [{"type": "text", "text": "ask the helper"}], "run": true}
        }))
        .await;
    let id = info["id"].as_str().unwrap().to_string();
    env.wait_status(&id, &["finished"]).await;
    let events = env.events(&id).await;
    let obs: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "ObservationEvent" && e["tool_name"] == "task")
        .collect();
    assert_eq!(obs.len(), 1, "{events:?}");
    let o = &obs[0]["observation"];
    assert_eq!(o["kind"], "TaskObservation");
    assert_eq!(o["status"], "completed", "{o}");
    assert_eq!(o["subagent"], "helper");
    assert_eq!(o["task_id"], "task_00000001");
    assert_eq!(o["content"][0]["text"], "helper says hi");
    // The helper's tokens are rolled up into the parent's statistics.
    let stats = events
        .iter()
        .rev()
        .find(|e| e["kind"] == "ConversationStateUpdateEvent" && e["key"] == "stats")
        .expect("a stats update");
    assert_eq!(
        stats["value"]["usage_to_metrics"]["task:task_00000001"]["accumulated_token_usage"]["completion_tokens"],
        10
    );

    // The helper ran with its own prompt and tools.
    let helper = env
        .mock
        .completion_requests()
        .into_iter()
        .map(|r| r.body)
        .find(|b| system_text(b).contains("You are the helper sub-agent."))
        .expect("the helper's request");
    let tools: Vec<&str> = helper["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(tools.contains(&"file_editor"), "{tools:?}");
    assert!(!tools.contains(&"task"), "{tools:?}");
    // The child is persisted under the parent's directory.
    let subagents = env
        .conversations_dir()
        .join(id.replace('-', ""))
        .join("subagents");
    assert_eq!(std::fs::read_dir(&subagents).unwrap().count(), 1);
    // The definitions are kept for the conversation.
    let meta: Value = serde_json::from_slice(
        &std::fs::read(
            env.conversations_dir()
                .join(id.replace('-', ""))
                .join("meta.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(meta["agent_definitions"][0]["name"], "helper");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scoped_task_tool_refuses_wider_agents_and_sub_agent_confirmations_are_approved() {
    let env = Env::start(|_| {
        Script::from_turns([
            Turn::tool_call(
                "task",
                json!({"prompt": "[[mock:script:wide]] edit", "subagent_type": "wide"}),
            ),
            Turn::tool_call(
                "task",
                json!({"prompt": "[[mock:script:careful]] write the marker", "subagent_type": "careful"}),
            ),
            Turn::tool_call("finish", json!({"message": "parent done"})),
        ])
        .with_script(
            "careful",
            vec![
                Turn::tool_call("terminal", json!({"command": "echo hi > marker.txt"})),
                Turn::tool_call("finish", json!({"message": "marker written"})),
            ],
        )
        .with_toolless_reply(Turn::text("A title"))
    })
    .await;
    let mut agent = env.agent(&["task_tool_set", "terminal"]);
    agent["tools"][0]["params"] = json!({"sub_agent_scope": {"tools": true}});
    let info = env
        .create(json!({
            "agent": agent,
            "agent_definitions": [
                {"name": "wide", "description": "Edits files.", "tools": ["file_editor"]},
                {"name": "careful", "description": "Asks first.", "tools": ["terminal"],
                 "permission_mode": "always_confirm"}
            ],
            "initial_message": {"role": "user", "content": [{"type": "text", "text": "delegate"}], "run": true}
        }))
        .await;
    let id = info["id"].as_str().unwrap().to_string();
    env.wait_status(&id, &["finished"]).await;
    let events = env.events(&id).await;
    let obs: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "ObservationEvent" && e["tool_name"] == "task")
        .map(|e| &e["observation"])
        .collect();
    assert_eq!(obs.len(), 2, "{events:?}");
    assert_eq!(obs[0]["is_error"], true);
    assert_eq!(
        obs[0]["content"][0]["text"],
        "Failed to execute task: Agent 'wide' uses file_editor, which this agent does not have."
    );
    // Without a confirmation handler (as the reference server runs it) the
    // sub-agent's held action is approved and runs.
    assert_eq!(obs[1]["status"], "completed", "{}", obs[1]);
    assert_eq!(obs[1]["content"][0]["text"], "marker written");
    assert!(env.workspace().join("marker.txt").exists());
}

#[tokio::test]
async fn invalid_agent_definitions_are_refused_naming_the_field() {
    let env = Env::start(|_| Script::from_turns([Turn::text("x")])).await;
    let cases = [
        (
            json!([{"description": "no name"}]),
            json!(["body", "agent_definitions", 0, "name"]),
        ),
        (
            json!([{"name": "ok"}, {"name": "w", "permission_mode": "sometimes"}]),
            json!(["body", "agent_definitions", 1, "permission_mode"]),
        ),
        (
            json!([{"name": "w", "tools": "terminal"}]),
            json!(["body", "agent_definitions", 0, "tools"]),
        ),
    ];
    for (defs, loc) in cases {
        let (status, body) = env
            .post(
                "/api/conversations",
                env.start_body(json!({"agent_definitions": defs})),
            )
            .await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(body["detail"][0]["loc"], loc, "{body}");
    }
}

#[tokio::test]
async fn sub_agents_route_lists_project_and_builtin_agents() {
    let env = Env::start(|_| Script::from_turns([Turn::text("x")])).await;
    let ws = env.workspace();
    std::fs::create_dir_all(ws.join(".agents/agents")).unwrap();
    std::fs::write(
        ws.join(".agents/agents/reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews code.\ntools: [terminal]\ncolor: blue\n---\nReview carefully.\n",
    )
    .unwrap();
    std::fs::create_dir_all(ws.join(".openhands/agents")).unwrap();
    // Same name in the lower-priority directory: the `.agents` one wins.
    std::fs::write(
        ws.join(".openhands/agents/reviewer.md"),
        "---\nname: reviewer\ndescription: Old.\n---\nOld.\n",
    )
    .unwrap();
    std::fs::write(
        ws.join(".openhands/agents/general-purpose.md"),
        "---\ndescription: Project override.\n---\nMine.\n",
    )
    .unwrap();
    let project = ws.to_string_lossy().to_string();
    let (status, body) = env
        .post(
            "/api/sub-agents",
            json!({"project_dir": project, "load_user": false}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let agents = body["agents"].as_array().unwrap();
    let names: Vec<&str> = agents.iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "reviewer",
            "general-purpose",
            "code-explorer",
            "bash-runner"
        ]
    );
    let reviewer = &agents[0];
    assert_eq!(reviewer["description"], "Reviews code.");
    assert_eq!(reviewer["tools"], json!(["terminal"]));
    assert_eq!(reviewer["color"], "blue");
    assert_eq!(reviewer["system_prompt"], "Review carefully.");
    assert_eq!(reviewer["level"], "project");
    assert_eq!(reviewer["is_builtin"], false);
    assert_eq!(reviewer["model"], "inherit");
    // The project's general-purpose shadows the built-in one.
    assert_eq!(agents[1]["description"], "Project override.");
    assert_eq!(agents[1]["is_builtin"], false);
    assert_eq!(agents[2]["is_builtin"], true);
    assert_eq!(agents[2]["level"], "builtin");

    let (status, body) = env
        .post(
            "/api/sub-agents",
            json!({"project_dir": project, "load_user": false, "load_builtin": false}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["agents"].as_array().unwrap().len(), 2);
}
