//! `/api/settings/secrets`: upsert, list, plain-text value, delete, name and
//! value validation, encryption at rest, and a conversation reading a
//! stored secret through a `LookupSecret` on this server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use openhands_testkit::{Script, Turn};
use serde_json::json;

const VALUE: &str = "stored-value-51c2e8";

fn script(workspace: &std::path::Path) -> Script {
    let out = workspace.join("token.txt");
    Script::from_turns([
        Turn::tool_call(
            "terminal",
            json!({"command": format!("printf %s \"$STORED_TOKEN\" > {}", out.display())}),
        ),
        Turn::tool_call("finish", json!({"message": "done"})),
    ])
    .with_toolless_reply(Turn::text("A title"))
}

async fn put(env: &Env, body: serde_json::Value) -> (u16, serde_json::Value) {
    let resp = env
        .client
        .put(env.url("/api/settings/secrets"))
        .header("X-Session-API-Key", KEY)
        .json(&body)
        .send()
        .await
        .unwrap();
    let s = resp.status().as_u16();
    (s, resp.json().await.unwrap_or_default())
}

#[tokio::test]
async fn secrets_are_stored_encrypted_listed_read_and_deleted() {
    let env = Env::start(script).await;
    assert_eq!(
        env.get("/api/settings/secrets").await,
        (200, json!({"secrets": []}))
    );
    let (s, body) = put(
        &env,
        json!({"name": "STORED_TOKEN", "value": VALUE, "description": "ci"}),
    )
    .await;
    assert_eq!(
        (s, body),
        (200, json!({"name": "STORED_TOKEN", "description": "ci"}))
    );
    let (s, body) = put(&env, json!({"name": "OTHER", "value": "x"})).await;
    assert_eq!(
        (s, body),
        (200, json!({"name": "OTHER", "description": null}))
    );
    let (s, list) = env.get("/api/settings/secrets").await;
    assert_eq!(s, 200);
    let mut names: Vec<&str> = list["secrets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["OTHER", "STORED_TOKEN"]);
    assert!(!list.to_string().contains(VALUE));

    // The value, as plain text.
    let resp = env
        .client
        .get(env.url("/api/settings/secrets/STORED_TOKEN"))
        .header("X-Session-API-Key", KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    assert_eq!(resp.text().await.unwrap(), VALUE);

    // Encrypted at rest, private.
    let file = env.dir.path().join("persistence").join("secrets.json");
    let raw = std::fs::read_to_string(&file).unwrap();
    assert!(!raw.contains(VALUE), "{raw}");
    let doc: serde_json::Value = serde_json::from_str(&raw).unwrap();
    assert!(
        doc["custom_secrets"]["STORED_TOKEN"]["secret"]
            .as_str()
            .unwrap()
            .starts_with("gAAAA")
    );

    // Bad input.
    let (s, body) = put(&env, json!({"name": "1bad", "value": "x"})).await;
    assert_eq!(s, 422);
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .starts_with("Invalid secret name format")
    );
    let (s, body) = put(&env, json!({"name": "OK", "value": "**********"})).await;
    assert_eq!(
        (s, body["detail"].clone()),
        (422, json!("Secret value must not be empty or redacted"))
    );
    assert_eq!(put(&env, json!({"name": "OK", "value": "  "})).await.0, 422);
    let (s, body) = put(&env, json!({"name": "OK"})).await;
    assert_eq!(s, 422);
    assert_eq!(body["detail"][0]["loc"], json!(["body", "value"]));
    assert_eq!(env.get("/api/settings/secrets/bad-name").await.0, 422);
    assert_eq!(
        env.get("/api/settings/secrets/MISSING").await,
        (404, json!({"detail": "Secret not found"}))
    );
    assert_eq!(
        env.get("/api/settings/secrets?agent_profile_id=nope")
            .await
            .0,
        404
    );
    // Behind the session key.
    let anon = env
        .client
        .get(env.url("/api/settings/secrets"))
        .send()
        .await
        .unwrap();
    assert_eq!(anon.status().as_u16(), 401);

    // Delete.
    assert_eq!(
        env.call("DELETE", "/api/settings/secrets/OTHER", None)
            .await,
        (200, json!({"deleted": true}))
    );
    assert_eq!(
        env.call("DELETE", "/api/settings/secrets/OTHER", None)
            .await
            .0,
        404
    );

    // A conversation uses the stored secret through a LookupSecret here.
    let mut body = env.start_body(json!({"secrets": {
        "STORED_TOKEN": {"kind": "LookupSecret",
                         "url": env.url("/api/settings/secrets/STORED_TOKEN"),
                         "headers": {"X-Session-API-Key": KEY}},
    }}));
    body["agent"] = env.agent(&["terminal"]);
    let (s, info) = env.call("POST", "/api/conversations", Some(body)).await;
    assert_eq!(s, 201, "{info}");
    let id = info["id"].as_str().unwrap().to_string();
    env.send(&id, "Use the token.", true).await;
    env.wait_status(&id, &["finished"]).await;
    assert_eq!(
        std::fs::read_to_string(env.workspace().join("token.txt")).unwrap(),
        VALUE
    );
    let events = serde_json::to_string(&env.events(&id).await).unwrap();
    assert!(!events.contains(VALUE));
    env.stop().await;
}

#[tokio::test]
async fn secrets_survive_a_restart() {
    let mut env = Env::start(script).await;
    assert_eq!(
        put(&env, json!({"name": "KEPT", "value": VALUE})).await.0,
        200
    );
    env.restart().await;
    let (s, list) = env.get("/api/settings/secrets").await;
    assert_eq!(
        (s, list),
        (
            200,
            json!({"secrets": [{"name": "KEPT", "description": null}]})
        )
    );
    let resp = env
        .client
        .get(env.url("/api/settings/secrets/KEPT"))
        .header("X-Session-API-Key", KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.text().await.unwrap(), VALUE);
    env.stop().await;
}
