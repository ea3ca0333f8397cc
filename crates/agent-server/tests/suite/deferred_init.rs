//! `OH_DEFERRED_INIT`: a dormant server refuses the gated routes until
//! `POST /api/init` delivers its configuration, then serves conversations
//! with it; `/api/init` auth, validation and the one-shot rule.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use serde_json::{Value, json};

const BOOT_SECRET: &str = "test-secret-key";

async fn init(env: &Env, key: Option<&str>, body: Value) -> (u16, Value) {
    let mut req = env.client.post(env.url("/api/init")).json(&body);
    if let Some(k) = key {
        req = req.header("X-Init-API-Key", k);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_dormant_server_comes_alive_with_the_delivered_configuration() {
    let env = Env::start_with(two_step, |c| {
        c.deferred_init = true;
        c.session_api_keys = vec!["boot-key".into()];
    })
    .await;
    let (s, status) = env.get("/api/init").await;
    assert_eq!(
        (s, status),
        (200, json!({"state": "dormant", "error": null}))
    );
    // Gated: 503 whatever the key; open routes answer.
    let (s, body) = env.get("/api/conversations/search").await;
    assert_eq!(s, 503, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("deferred-init state 'dormant'")
    );
    assert_eq!(env.get("/health").await.0, 200);
    let (_, doc) = env.get("/openapi.json").await;
    assert_eq!(
        doc["paths"]["/api/init"]["post"]["operationId"],
        "initialize_server_api_init_post"
    );
    assert_eq!(
        doc["paths"]["/api/init"]["get"]["operationId"],
        "get_init_status_api_init_get"
    );
    let ws = env.ws_url("/sockets/events/00000000-0000-0000-0000-000000000000");
    assert!(tokio_tungstenite::connect_async(&ws).await.is_err());

    // The init key is the boot secret.
    assert_eq!(init(&env, None, json!({})).await.0, 401);
    assert_eq!(init(&env, Some("wrong"), json!({})).await.0, 401);
    let (s, body) = init(&env, Some(BOOT_SECRET), json!({"nope": 1})).await;
    assert_eq!(s, 422);
    assert_eq!(body["detail"][0]["type"], "extra_forbidden", "{body}");
    let (s, body) = init(&env, Some(BOOT_SECRET), json!({"max_concurrent_runs": 0})).await;
    assert_eq!(s, 422);
    assert_eq!(
        body["detail"][0]["loc"],
        json!(["body", "max_concurrent_runs"])
    );
    let (s, body) = init(
        &env,
        Some(BOOT_SECRET),
        json!({"env": {"GITHUB_TOKEN": "x"}}),
    )
    .await;
    assert_eq!(s, 422);
    assert!(
        body["detail"].as_str().unwrap().starts_with("env:"),
        "{body}"
    );
    let (s, body) = init(&env, Some(BOOT_SECRET), json!({"session_api_keys": [""]})).await;
    assert_eq!(s, 422, "{body}");
    // Still dormant after refused attempts.
    assert_eq!(env.get("/api/init").await.1["state"], "dormant");
    // Services that cannot start: 500, back to dormant with the error.
    let not_a_dir = env.dir.path().join("a-file");
    std::fs::write(&not_a_dir, "x").unwrap();
    let (s, body) = init(
        &env,
        Some(BOOT_SECRET),
        json!({"conversations_path": not_a_dir.join("conversations")}),
    )
    .await;
    assert_eq!(s, 500, "{body}");
    let (_, status) = env.get("/api/init").await;
    assert_eq!(status["state"], "dormant");
    assert!(
        status["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{status}"
    );

    let conversations = env.dir.path().join("delivered-conversations");
    let (s, body) = init(
        &env,
        Some(BOOT_SECRET),
        json!({"session_api_keys": [KEY], "conversations_path": conversations,
               "secret_key": "delivered-secret"}),
    )
    .await;
    assert_eq!((s, body), (200, json!({"state": "ready", "error": null})));
    assert_eq!(env.get("/api/init").await.1["state"], "ready");
    // The init key is now the delivered secret.
    assert_eq!(init(&env, Some(BOOT_SECRET), json!({})).await.0, 401);
    let (s, body) = init(&env, Some("delivered-secret"), json!({})).await;
    assert_eq!(s, 400);
    assert_eq!(body["detail"], "server already in state: ready");

    // The delivered key is required now; the boot key is not accepted.
    let old = env
        .client
        .get(env.url("/api/conversations/search"))
        .header("X-Session-API-Key", "boot-key")
        .send()
        .await
        .unwrap();
    assert_eq!(old.status().as_u16(), 401);
    // Conversations run and are stored where the init said.
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();
    env.send(id, "Create x.txt, then finish.", true).await;
    env.wait_status(id, &["finished"]).await;
    assert!(
        conversations
            .join(id.replace('-', ""))
            .join("base_state.json")
            .is_file()
    );
    let mut ws = env.ws(id, "?resend_mode=all").await;
    assert_eq!(ws.frame().await["key"], "full_state");
    env.stop().await;
}

#[tokio::test]
async fn without_deferred_init_the_endpoints_answer_404() {
    let env = Env::start(two_step).await;
    let (s, body) = env.get("/api/init").await;
    assert_eq!(s, 404);
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("deferred_init=True")
    );
    assert_eq!(init(&env, Some(BOOT_SECRET), json!({})).await.0, 404);
    assert_eq!(init(&env, Some("wrong"), json!({})).await.0, 401);
    env.stop().await;
}
