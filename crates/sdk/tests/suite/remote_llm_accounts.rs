//! LLM account features through our agent server, driven by
//! `RemoteConversation`: `log_completions` (each LLM call becomes an
//! `LLMCompletionLogEvent` with the reference's fields on the events socket
//! and in the stored events, the server writes no file, the client writes
//! the records into its own `log_completions_folder`), and the ChatGPT
//! subscription (the server's device sign-in against a local stand-in of
//! OpenAI's auth server stores tokens that the conversation's LLM calls to
//! a local stand-in of the Codex backend carry).

use openhands_agent_server::{AppState, Config};
use openhands_protocol::conversations::StartConversationRequest;
use openhands_sdk::{RemoteConversation, RemoteOptions};
use openhands_testkit::{MockLlmServer, Script, Turn};
use openhands_wire::event::EventBody;
use openhands_wire::state::ExecutionStatus;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

const KEY: &str = "log-key";

fn files(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn completion_logs_stream_to_the_client_which_writes_them() {
    openhands_agent_server::install_tls_provider();
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("project");
    std::fs::create_dir_all(&work).unwrap();
    let config = Config {
        session_api_keys: vec![KEY.into()],
        conversations_path: dir.path().join("conversations"),
        workspace_path: work.clone(),
        bash_events_dir: dir.path().join("bash_events"),
        ..Config::default()
    };
    let state = openhands_agent_server::http::setup::attach_default(AppState::new(config))
        .await
        .unwrap();
    let server = openhands_agent_server::spawn(state.shared(), "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let mock = MockLlmServer::start(
        Script::from_turns(vec![
            Turn::tool_call("terminal", json!({"command": "echo logged"})),
            Turn::tool_call("finish", json!({"message": "done"})),
        ])
        .with_toolless_reply(Turn::text("A title")),
        0,
    )
    .await
    .unwrap();
    let logs = dir.path().join("client-logs");
    let agent = json!({
        "kind": "Agent",
        "llm": {"model": "openai/mock-model", "base_url": mock.base_url(), "api_key": "k",
            "num_retries": 0, "usage_id": "agent",
            "log_completions": true, "log_completions_folder": logs.to_string_lossy()},
        "tools": [{"name": "terminal"}],
    });
    let mut request = StartConversationRequest::new(agent, work.to_string_lossy());
    // A title would be one more (racing) call.
    request.autotitle = false;
    let options = RemoteOptions {
        run_timeout: Duration::from_secs(90),
        ..RemoteOptions::default()
    };
    let conv = RemoteConversation::create(&server.url(), Some(KEY), &request, options)
        .await
        .unwrap();
    conv.send_message("say logged").await.unwrap();
    assert_eq!(conv.run().await.unwrap(), ExecutionStatus::Finished);

    let deadline = Instant::now() + Duration::from_secs(20);
    let logged = loop {
        let logged: Vec<_> = conv
            .events()
            .into_iter()
            .filter(|e| matches!(e.body, EventBody::LlmCompletionLog(_)))
            .collect();
        if logged.len() >= 2 && files(&logs).len() >= 2 {
            break logged;
        }
        assert!(
            Instant::now() < deadline,
            "{} records, files {:?}",
            logged.len(),
            files(&logs)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // Server and client share this machine: a file the server wrote itself
    // would be one more than the records streamed.
    assert_eq!(logged.len(), 2);
    assert_eq!(files(&logs).len(), 2, "{:?}", files(&logs));
    for ev in &logged {
        let wire = serde_json::to_value(ev).unwrap();
        assert_eq!(wire["kind"], "LLMCompletionLogEvent");
        assert_eq!(wire["source"], "environment");
        assert_eq!(wire["model_name"], "openai/mock-model");
        assert_eq!(wire["usage_id"], "agent");
        let name = wire["filename"].as_str().unwrap();
        assert!(
            name.starts_with("openai__mock-model-") && name.ends_with(".json"),
            "{name}"
        );
        let record: Value = serde_json::from_str(wire["log_data"].as_str().unwrap()).unwrap();
        for key in [
            "messages",
            "tools",
            "kwargs",
            "context_window",
            "response",
            "cost",
        ] {
            assert!(record.get(key).is_some(), "{key} missing in {record}");
        }
        assert_eq!(record["response"]["object"], "chat.completion");
        let on_disk = std::fs::read_to_string(logs.join(name)).unwrap();
        assert_eq!(on_disk, wire["log_data"].as_str().unwrap());
    }

    // The records are stored events: a client that reads the history sees them.
    let http = reqwest::Client::builder().build().unwrap();
    let page: Value = http
        .get(format!(
            "{}/api/conversations/{}/events/search?limit=100",
            server.url(),
            conv.id()
        ))
        .header("X-Session-API-Key", KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let stored = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "LLMCompletionLogEvent")
        .count();
    assert_eq!(stored, logged.len());
}

/// A stand-in of OpenAI's auth server (device login approved at once) and
/// of the Codex backend (records each call's bearer token and body,
/// answers a streamed text reply).
type Calls = Arc<parking_lot::Mutex<Vec<(String, Value)>>>;

async fn openai_stand_in() -> (String, Calls) {
    use axum::response::IntoResponse;
    let calls: Calls = Arc::default();
    let seen = calls.clone();
    let app = axum::Router::new()
        .route(
            "/auth/api/accounts/deviceauth/usercode",
            axum::routing::post(|| async {
                axum::Json(
                    json!({"device_auth_id": "dev-9", "user_code": "WXYZ-0000", "interval": 1}),
                )
            }),
        )
        .route(
            "/auth/api/accounts/deviceauth/token",
            axum::routing::post(|| async {
                axum::Json(json!({"authorization_code": "code-9", "code_verifier": "ver-9"}))
            }),
        )
        .route(
            "/auth/oauth/token",
            axum::routing::post(|| async {
                axum::Json(
                    json!({"access_token": "device-access", "refresh_token": "device-refresh",
                    "expires_in": 3600}),
                )
            }),
        )
        .route(
            "/codex/responses",
            axum::routing::post(
                move |headers: axum::http::HeaderMap, axum::Json(body): axum::Json<Value>| {
                    let seen = seen.clone();
                    async move {
                        let auth = headers
                            .get("authorization")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or_default()
                            .to_string();
                        seen.lock().push((auth, body));
                        let item = json!({"type": "message", "id": "msg_1", "role": "assistant",
                            "content": [{"type": "output_text", "text": "done on the plan"}]});
                        let events = [
                            json!({"type": "response.output_item.done", "item": item}),
                            json!({"type": "response.completed", "response": {"id": "r1",
                                "status": "completed", "output": [item],
                                "usage": {"input_tokens": 5, "output_tokens": 2}}}),
                        ];
                        let sse: String = events
                            .iter()
                            .map(|e| {
                                format!(
                                    "event: {}\ndata: {e}\n\n",
                                    e["type"].as_str().unwrap_or("")
                                )
                            })
                            .collect();
                        ([("content-type", "text/event-stream")], sse).into_response()
                    }
                },
            ),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (base, calls)
}

#[tokio::test]
async fn the_servers_device_sign_in_feeds_subscription_llm_calls() {
    openhands_agent_server::install_tls_provider();
    let (base, calls) = openai_stand_in().await;
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("project");
    std::fs::create_dir_all(&work).unwrap();
    let config = Config {
        session_api_keys: vec![KEY.into()],
        conversations_path: dir.path().join("conversations"),
        workspace_path: work.clone(),
        bash_events_dir: dir.path().join("bash_events"),
        persistence_dir: dir.path().join("persistence"),
        secret_key: Some(openhands_wire::SecretString::new("subscription-key")),
        openai_auth_issuer: format!("{base}/auth"),
        openai_codex_base_url: format!("{base}/codex"),
        ..Config::default()
    };
    let state = openhands_agent_server::http::setup::attach_default(AppState::new(config))
        .await
        .unwrap();
    let server = openhands_agent_server::spawn(state.shared(), "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let http = reqwest::Client::builder().build().unwrap();
    let post = |path: &str, body: Value| {
        http.post(format!(
            "{}/api/llm/subscription/openai{path}",
            server.url()
        ))
        .header("X-Session-API-Key", KEY)
        .json(&body)
        .send()
    };
    let start: Value = post("/device/start", json!({}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let status: Value = post("/device/poll", json!({"device_code": start["device_code"]}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(status["connected"], true, "{status}");
    let stored =
        std::fs::read_to_string(dir.path().join("persistence/auth/openai_oauth.json")).unwrap();
    assert!(
        !stored.contains("device-access"),
        "sealed at rest: {stored}"
    );

    // A client names only the auth type; the server supplies the tokens.
    let agent = json!({
        "kind": "Agent",
        "llm": {"model": "openai/gpt-5.5", "auth_type": "subscription",
            "subscription_vendor": "openai", "usage_id": "agent", "num_retries": 0},
        "tools": [],
    });
    let mut request = StartConversationRequest::new(agent, work.to_string_lossy());
    request.autotitle = false;
    let options = RemoteOptions {
        run_timeout: Duration::from_secs(90),
        ..RemoteOptions::default()
    };
    let conv = RemoteConversation::create(&server.url(), Some(KEY), &request, options)
        .await
        .unwrap();
    conv.send_message("work on my plan").await.unwrap();
    assert_eq!(conv.run().await.unwrap(), ExecutionStatus::Finished);
    let calls = calls.lock().clone();
    assert!(!calls.is_empty());
    let (auth, body) = &calls[0];
    assert_eq!(auth, "Bearer device-access");
    assert_eq!(body["model"], "gpt-5.5");
    assert_eq!(body["stream"], true);
    assert_eq!(body["store"], false);
}
