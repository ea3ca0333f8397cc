//! MCP through the HTTP API with a real MCP server
//! (`@modelcontextprotocol/server-everything`, installed by
//! `scripts/test.sh`, named by `OPENHANDS_TEST_MCP_EVERYTHING`): a
//! conversation created with `agent.mcp_config` offers the server's tools
//! to the model, runs a call, and ends the server when deleted; a
//! malformed `mcp_config` is a 422 naming server and field; `POST
//! /api/mcp/test` answers `MCPTestSuccess` / `MCPTestFailure`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use openhands_testkit::fixtures::{mcp_everything, mcp_oauth_server, pids_with_env};
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

    // OAuth: an unsupported client auth method is a 422 naming the field,
    // a server without OAuth the reference's 400, unknown jobs 404.
    let (s, body) = env
        .post(
            "/api/mcp/oauth/start",
            json!({"server": {"url": "http://127.0.0.1:9/mcp", "auth": {"strategy": "oauth2",
                "authentication": {"type": "oauth", "client_auth_method": "private_key_jwt"}}}}),
        )
        .await;
    assert_eq!(s, 422, "{body}");
    assert_eq!(
        body["detail"][0]["loc"],
        json!([
            "body",
            "server",
            "auth",
            "authentication",
            "client_auth_method"
        ])
    );
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

/// The OAuth install probe through the routes, against the `mcp`
/// package's authorization server: start answers the authorization URL,
/// the "browser" consents and is redirected, the copied callback URL is
/// submitted, the probe lists the tools and calls one with the token, and
/// the acquired state comes back encrypted with the server's key. Started
/// again with that state, no consent is needed.
#[tokio::test]
async fn the_oauth_probe_authorizes_through_the_routes() {
    let Some((_server, url)) = mcp_oauth_server("streamable-http", 300).await else {
        return;
    };
    let env = Env::start(two_step).await;
    let server = json!({"type": "http", "url": url,
                        "auth": {"strategy": "oauth2", "authentication": {"type": "oauth"}}});
    let body = json!({"name": "secure", "server": server,
                      "tool_call": {"name": "whoami", "arguments": {}}});
    let (s, start) = env.post("/api/mcp/oauth/start", body.clone()).await;
    assert_eq!(s, 200, "{start}");
    assert_eq!(start["ok"], true, "{start}");
    let job = start["job_id"].as_str().unwrap().to_string();
    let auth_url = start["authorization_url"].as_str().unwrap();
    assert!(
        auth_url.contains("code_challenge_method=S256"),
        "{auth_url}"
    );
    let (s, status) = env.get(&format!("/api/mcp/oauth/status/{job}")).await;
    assert_eq!(s, 200);
    assert_eq!(status["status"], "authorizing", "{status}");
    assert_eq!(status["callback_ready"], true);

    // A callback URL that is not the listener's is refused.
    let (s, _) = env
        .post(
            &format!("/api/mcp/oauth/callback/{job}"),
            json!({"callback_url": "http://evil.example/callback?code=x"}),
        )
        .await;
    assert_eq!(s, 400);

    // The browser: consent is automatic, the redirect is copied.
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let resp = browser.get(auth_url).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 302);
    let callback = resp.headers()["location"].to_str().unwrap().to_string();
    let (s, done) = env
        .post(
            &format!("/api/mcp/oauth/callback/{job}"),
            json!({"callback_url": callback}),
        )
        .await;
    assert_eq!(s, 200, "{done}");
    let done = if done["status"] == "succeeded" {
        done
    } else {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let (_, st) = env.get(&format!("/api/mcp/oauth/status/{job}")).await;
            if st["status"] != "authorizing" || Instant::now() > deadline {
                break st;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(done["tools"], json!(["whoami"]));
    assert_eq!(
        done["tool_result"],
        json!({"is_error": false, "text": "token 1 of 1"})
    );
    let state = done["oauth_state"].clone();
    let access = state["tokens"]["access_token"].as_str().unwrap();
    assert!(access.starts_with("gAAAA"), "not encrypted: {state}");
    assert!(state["client_info"]["client_id"].is_string());

    // With the stored (encrypted) state, /api/mcp/test and a new start
    // need no consent.
    let mut server = server;
    server["auth"]["state"] = state;
    let (s, tested) = env
        .post(
            "/api/mcp/test",
            json!({"server": server.clone(), "tool_call": {"name": "whoami", "arguments": {}}}),
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(tested["tool_result"]["text"], "token 1 of 1", "{tested}");
    assert!(tested["oauth_state"]["tokens"]["access_token"].is_string());
    let (s, again) = env
        .post("/api/mcp/oauth/start", json!({"server": server}))
        .await;
    assert_eq!(s, 200);
    assert_eq!(again["ok"], true, "{again}");
    assert!(again.get("authorization_url").is_none(), "{again}");
    let (_, st) = env
        .get(&format!(
            "/api/mcp/oauth/status/{}",
            again["job_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(st["status"], "succeeded", "{st}");
    env.stop().await;
}
