//! MCP through the HTTP API with a real MCP server
//! (`@modelcontextprotocol/server-everything`, installed by
//! `scripts/test.sh`, named by `OPENHANDS_TEST_MCP_EVERYTHING`): a
//! conversation created with `agent.mcp_config` offers the server's tools
//! to the model, runs a call, and ends the server when deleted; a
//! malformed `mcp_config` is a 422 naming server and field; `POST
//! /api/mcp/test` answers `MCPTestSuccess` / `MCPTestFailure`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod conversations_support;

use conversations_support::*;
use openhands_testkit::fixtures::{mcp_everything, pids_with_env};
use openhands_testkit::{Script, Turn};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn script(_: &std::path::Path) -> Script {
    Script::from_turns([
        Turn::tool_call("echo", json!({"message": "over http"})),
        Turn::tool_call("finish", json!({"message": "done"})),
    ])
    .with_toolless_reply(Turn::text("A title"))
}

#[tokio::test]
async fn a_conversation_uses_the_mcp_server_and_deleting_it_ends_the_server() {
    let Some(index) = mcp_everything() else {
        return;
    };
    let env = Env::start(script).await;
    let mark = uuid::Uuid::new_v4().simple().to_string();
    let marker = format!("OH_MCP_API_MARK={mark}");
    let mut agent = env.agent(&["file_editor"]);
    agent["mcp_config"] = json!({"everything": {
        "command": "node", "args": [index, "stdio"], "env": {"OH_MCP_API_MARK": mark}
    }});
    let info = env.create(json!({"agent": agent})).await;
    let id = info["id"].as_str().unwrap().to_string();
    // The stored agent never shows the server's env values.
    assert!(!info.to_string().contains(&mark), "{info}");
    env.send(&id, "echo please", true).await;
    env.wait_status(&id, &["finished"]).await;

    let events = env.events(&id).await;
    let obs: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "ObservationEvent" && e["tool_name"] == "echo")
        .collect();
    assert_eq!(obs.len(), 1, "{events:#?}");
    let o = &obs[0]["observation"];
    assert_eq!(o["kind"], "MCPToolObservation");
    assert_eq!(o["content"][1]["text"], "Echo: over http");
    let sp = events
        .iter()
        .find(|e| e["kind"] == "SystemPromptEvent")
        .unwrap();
    let def = sp["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["title"] == "echo")
        .unwrap();
    assert_eq!(def["kind"], "MCPToolDefinition");
    assert_eq!(def["mcp_tool"]["name"], "echo");

    // The model got the tool's schema and, next, its result.
    // (Title requests carry no tools.)
    let reqs: Vec<_> = env
        .mock
        .completion_requests()
        .into_iter()
        .filter(|r| r.body.get("tools").is_some())
        .collect();
    let tools = reqs[0].body["tools"].as_array().unwrap();
    let echo = tools
        .iter()
        .find(|t| t["function"]["name"] == "echo")
        .unwrap();
    assert_eq!(
        echo["function"]["parameters"]["properties"]["message"]["type"],
        "string"
    );
    assert!(reqs[1].body.to_string().contains("Echo: over http"));

    assert!(
        !pids_with_env(&marker).is_empty(),
        "the server is not running"
    );
    let (s, _) = env
        .call("DELETE", &format!("/api/conversations/{id}"), None)
        .await;
    assert_eq!(s, 200);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pids_with_env(&marker).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        pids_with_env(&marker).is_empty(),
        "the server outlived the conversation"
    );
    env.stop().await;
}

#[tokio::test]
async fn a_malformed_mcp_config_is_a_422_naming_server_and_field() {
    let env = Env::start(script).await;
    let mut agent = env.agent(&["file_editor"]);
    agent["mcp_config"] = json!({"github": {"url": "http://h/mcp", "transport": "carrier-pigeon",
        "headers": {"Authorization": "Bearer ghp-secret"}}});
    let (s, body) = env
        .post(
            "/api/conversations",
            env.start_body(json!({"agent": agent})),
        )
        .await;
    assert_eq!(s, 422, "{body}");
    assert_eq!(
        body["detail"][0]["loc"],
        json!(["body", "agent", "mcp_config", "github", "transport"])
    );
    assert!(
        body["detail"][0]["msg"]
            .as_str()
            .unwrap()
            .contains("MCP server 'github'")
    );
    assert!(!body.to_string().contains("ghp-secret"), "{body}");
    env.stop().await;
}

#[tokio::test]
async fn the_test_route_answers_success_and_failure() {
    let env = Env::start(script).await;
    // A server that cannot start is an answer, not an error.
    let (s, body) = env
        .post(
            "/api/mcp/test",
            json!({"server": {"command": "definitely-not-a-program-xyz"}, "timeout": 5}),
        )
        .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["ok"], false);
    assert_eq!(body["error_kind"], "connection");
    assert!(
        body["error"].as_str().unwrap().contains("test-server"),
        "{body}"
    );
    let (s, body) = env
        .post("/api/mcp/test", json!({"server": {"type": "stdio"}}))
        .await;
    assert_eq!(s, 422, "{body}");
    assert_eq!(
        body["detail"][0]["loc"],
        json!(["body", "server", "command"])
    );

    // OAuth is refused clearly: a 422 naming the field for an OAuth
    // server, the reference's 400 otherwise, unknown probe jobs.
    let (s, body) = env
        .post(
            "/api/mcp/oauth/start",
            json!({"server": {"url": "http://127.0.0.1:9/mcp", "auth": {"strategy": "oauth2"}}}),
        )
        .await;
    assert_eq!(s, 422, "{body}");
    assert_eq!(body["detail"][0]["loc"], json!(["body", "server", "auth"]));
    assert!(body.to_string().contains("not supported"), "{body}");
    let (s, _) = env
        .post("/api/mcp/oauth/start", json!({"server": {"command": "x"}}))
        .await;
    assert_eq!(s, 400);
    let (s, body) = env.get("/api/mcp/oauth/status/abc").await;
    assert_eq!(
        (s, body),
        (404, json!({"detail": "MCP OAuth job not found"}))
    );
    let (s, _) = env
        .post(
            "/api/mcp/oauth/callback/abc",
            json!({"callback_url": "http://localhost:1/callback"}),
        )
        .await;
    assert_eq!(s, 404);

    let Some(index) = mcp_everything() else {
        env.stop().await;
        return;
    };
    let (s, body) = env
        .post(
            "/api/mcp/test",
            json!({
                "name": "everything",
                "server": {"type": "stdio", "command": "node", "args": [index, "stdio"]},
                "tool_call": {"name": "echo", "arguments": {"message": "probe"}}
            }),
        )
        .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["ok"], true, "{body}");
    assert!(body["tools"].as_array().unwrap().contains(&json!("echo")));
    assert_eq!(
        body["tool_result"],
        json!({"is_error": false, "text": "Echo: probe"})
    );
    let (_, body) = env
        .post(
            "/api/mcp/test",
            json!({
                "server": {"command": "node", "args": [index, "stdio"]},
                "tool_call": {"name": "nope"}
            }),
        )
        .await;
    assert_eq!(body["tool_result"]["is_error"], true);
    assert!(
        body["tool_result"]["text"]
            .as_str()
            .unwrap()
            .starts_with("Tool 'nope' not advertised by server")
    );
    env.stop().await;
}
