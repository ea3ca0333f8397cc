//! `/api/settings/mcp/{settings_key}` with an OAuth MCP server built with
//! the `mcp` package (its own authorization server): the server is
//! authorized through the OAuth probe routes, stored in the settings with
//! its OAuth state (encrypted at rest), survives a restart, and a new
//! conversation naming the same server URL uses the stored token; the
//! create/patch/delete answers and refusals are the reference's.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use openhands_testkit::fixtures::mcp_oauth_server;
use openhands_testkit::{Script, Turn};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn script(_: &std::path::Path) -> Script {
    Script::from_turns([
        Turn::tool_call("whoami", json!({})),
        Turn::tool_call("finish", json!({"message": "done"})),
    ])
    .with_toolless_reply(Turn::text("A title"))
}

/// Runs the OAuth probe (start, consent in a "browser", callback) and
/// answers its final status.
async fn authorize(env: &Env, server: &Value) -> Value {
    let (s, start) = env
        .post("/api/mcp/oauth/start", json!({"server": server}))
        .await;
    assert_eq!((s, &start["ok"]), (200, &json!(true)), "{start}");
    let job = start["job_id"].as_str().unwrap().to_string();
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let resp = browser
        .get(start["authorization_url"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    let callback = resp.headers()["location"].to_str().unwrap().to_string();
    let (s, _) = env
        .post(
            &format!("/api/mcp/oauth/callback/{job}"),
            json!({"callback_url": callback}),
        )
        .await;
    assert_eq!(s, 200);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, st) = env.get(&format!("/api/mcp/oauth/status/{job}")).await;
        if st["status"] == "succeeded" || st["status"] == "failed" {
            return st;
        }
        assert!(Instant::now() < deadline, "{st}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn stored_mcp_servers_persist_encrypted_and_new_conversations_use_their_tokens() {
    let Some((_server, url)) = mcp_oauth_server("streamable-http", 300).await else {
        return;
    };
    let mut env = Env::start(script).await;
    let mut server = json!({"url": url, "transport": "http",
                            "auth": {"strategy": "oauth2", "authentication": {"type": "oauth"}}});
    let done = authorize(&env, &server).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    server["auth"]["state"] = done["oauth_state"].clone();

    // Create: 201, secrets redacted in the answer; a second create is 409.
    let (s, body) = env
        .call("POST", "/api/settings/mcp/secure", Some(server.clone()))
        .await;
    assert_eq!(s, 201, "{body}");
    let stored = &body["agent_settings"]["mcp_config"]["secure"];
    assert_eq!(stored["url"], url.as_str());
    assert_eq!(
        stored["auth"]["state"]["tokens"]["access_token"],
        "**********"
    );
    let (s, body) = env
        .call("POST", "/api/settings/mcp/secure", Some(server.clone()))
        .await;
    assert_eq!(
        (s, body),
        (409, json!({"detail": "MCP server 'secure' already exists"}))
    );
    // Invalid servers are 422s naming the field.
    let (s, body) = env
        .call(
            "POST",
            "/api/settings/mcp/bad",
            Some(json!({"url": "http://h/mcp", "transport": "pigeon"})),
        )
        .await;
    assert_eq!(s, 422, "{body}");
    assert_eq!(body["detail"][0]["loc"], json!(["body", "transport"]));

    // Patch merges (a nested null deletes); unknown keys are 404.
    let (s, body) = env
        .call(
            "PATCH",
            "/api/settings/mcp/secure",
            Some(json!({"headers": {"X-Team": "a", "X-Gone": null}})),
        )
        .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(
        body["agent_settings"]["mcp_config"]["secure"]["headers"],
        json!({"X-Team": "**********"})
    );
    let (s, _) = env
        .call(
            "PATCH",
            "/api/settings/mcp/nope",
            Some(json!({"timeout": 5})),
        )
        .await;
    assert_eq!(s, 404);

    // At rest: encrypted, no token or header value in clear.
    let file = std::fs::read_to_string(env.config().persistence_dir.join("settings.json")).unwrap();
    let on_disk: Value = serde_json::from_str(&file).unwrap();
    let at_rest = &on_disk["agent_settings"]["mcp_config"]["secure"];
    assert!(
        at_rest["auth"]["state"]["tokens"]["access_token"]
            .as_str()
            .unwrap()
            .starts_with("gAAAA")
    );
    assert!(
        at_rest["headers"]["X-Team"]
            .as_str()
            .unwrap()
            .starts_with("gAAAA")
    );
    assert!(!file.contains("access-1-"), "{file}");

    // After a restart, a new conversation naming the server's URL (no
    // tokens of its own) is authorized by the stored state.
    env.restart().await;
    let mut agent = env.agent(&[]);
    agent["mcp_config"] = json!({"secure": {"url": url, "auth": {"strategy": "oauth2"}}});
    let info = env.create(json!({"agent": agent})).await;
    let id = info["id"].as_str().unwrap().to_string();
    env.send(&id, "who am I?", true).await;
    env.wait_status(&id, &["finished"]).await;
    let events = env.events(&id).await;
    let obs = events
        .iter()
        .find(|e| e["kind"] == "ObservationEvent" && e["tool_name"] == "whoami")
        .unwrap_or_else(|| panic!("{events:#?}"));
    assert_eq!(obs["observation"]["kind"], "MCPToolObservation");
    assert!(
        obs["observation"].to_string().contains("token 1 of 1"),
        "{obs}"
    );

    // Delete, then it is gone.
    let (s, body) = env.call("DELETE", "/api/settings/mcp/secure", None).await;
    assert_eq!(s, 200);
    assert_eq!(body["agent_settings"]["mcp_config"], json!({}));
    let (s, _) = env.call("DELETE", "/api/settings/mcp/secure", None).await;
    assert_eq!(s, 404);
    env.stop().await;
}
