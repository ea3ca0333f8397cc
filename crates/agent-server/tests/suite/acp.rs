//! `ACPAgent` conversations over the HTTP API against a real ACP
//! implementation: the reference's Python ACP library driving
//! `crates/acp/tests/fixtures/scripted_peer.py` (skipped without the compat
//! venv's python in `OPENHANDS_TEST_MCP_PYTHON`). Also `POST
//! /api/acp/models`, `switch_acp_model` and the 4xx answers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use serde_json::{Value, json};

fn python() -> Option<String> {
    std::env::var("OPENHANDS_TEST_MCP_PYTHON")
        .ok()
        .filter(|p| std::path::Path::new(p).exists())
}

fn peer() -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../acp/tests/fixtures/scripted_peer.py")
        .to_string_lossy()
        .into_owned()
}

fn acp_agent(python: &str, mode: &str) -> Value {
    json!({"kind": "ACPAgent", "acp_command": [python, peer(), mode],
           "acp_startup_timeout": 30, "acp_prompt_timeout": 30})
}

fn no_llm(_: &std::path::Path) -> openhands_testkit::Script {
    openhands_testkit::Script::from_turns(Vec::<openhands_testkit::Turn>::new())
}

async fn start(env: &Env, agent: Value, text: &str) -> String {
    let (s, info) = env
        .post(
            "/api/conversations",
            env.start_body(json!({"agent": agent, "initial_message": {
                "role": "user", "content": [{"type": "text", "text": text}], "run": true}})),
        )
        .await;
    assert_eq!(s, 201, "{info}");
    info["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn an_acp_conversation_runs_a_turn_and_maps_the_updates_like_the_reference() {
    let Some(py) = python() else { return };
    let env = Env::start(no_llm).await;
    let mut agent = acp_agent(&py, "normal");
    agent["acp_model"] = json!("alpha");
    let id = start(&env, agent, "list the files").await;
    env.wait_status(&id, &["finished"]).await;
    let events = env.events(&id).await;
    let kinds: Vec<String> = events.iter().map(label).collect();
    let sys = events
        .iter()
        .find(|e| e["kind"] == "SystemPromptEvent")
        .unwrap();
    assert!(
        sys["system_prompt"]["text"]
            .as_str()
            .unwrap()
            .contains("powered by an ACP server")
    );
    assert_eq!(sys["tools"], json!([]));
    let calls: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "ACPToolCallEvent")
        .collect();
    let seen: Vec<(&str, &str)> = calls
        .iter()
        .map(|e| {
            (
                e["tool_call_id"].as_str().unwrap(),
                e["status"].as_str().unwrap(),
            )
        })
        .collect();
    // Start + one terminal report per call; the call left open is closed
    // as completed when the prompt returns.
    assert_eq!(
        seen,
        [
            ("t1", "pending"),
            ("t1", "completed"),
            ("t2", "in_progress"),
            ("t2", "completed")
        ],
        "{kinds:?}"
    );
    let done = calls[1];
    assert_eq!(done["source"], "agent");
    assert_eq!(done["tool_kind"], "execute");
    assert_eq!(done["title"], "Run ls");
    assert_eq!(done["raw_input"], json!({"command": "ls"}));
    assert_eq!(done["raw_output"], "a.txt\nb.txt");
    assert_eq!(done["is_error"], false);
    assert_eq!(done["content"][0]["type"], "content");
    assert_eq!(done["content"][0]["content"]["text"], "a.txt\nb.txt");
    let action = events
        .iter()
        .find(|e| e["kind"] == "ActionEvent")
        .expect("finish action");
    let answer = "You said: list the files; model=alpha; permission=allow-1";
    assert_eq!(
        action["action"],
        json!({"message": answer, "kind": "FinishAction"})
    );
    assert_eq!(action["tool_name"], "finish");
    assert_eq!(action["reasoning_content"], "Thinking about it.");
    let obs = events
        .iter()
        .find(|e| e["kind"] == "ObservationEvent")
        .unwrap();
    assert_eq!(obs["observation"]["content"][0]["text"], answer);
    assert_eq!(obs["action_id"], action["id"]);
    // The finish pair comes after every tool call report.
    let pos = |k: &str| kinds.iter().rposition(|x| x.starts_with(k)).unwrap();
    assert!(pos("ACPToolCallEvent") < pos("Action:finish"));

    let (_, info) = env.get(&format!("/api/conversations/{id}")).await;
    assert_eq!(info["current_model_id"], "alpha");
    assert_eq!(info["available_models"].as_array().unwrap().len(), 3);
    assert_eq!(
        info["available_models"][1],
        json!({"model_id": "alpha", "name": "Alpha", "description": null})
    );
    assert_eq!(info["supports_runtime_model_switch"], false);
    assert_eq!(info["agent"]["kind"], "ACPAgent");

    // The switch reaches the peer: the next turn reports the new model.
    let (s, r) = env
        .post(
            &format!("/api/conversations/{id}/switch_acp_model"),
            json!({"model": "beta"}),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    let (s, r) = env
        .post(
            &format!("/api/conversations/{id}/switch_acp_model"),
            json!({"model": "nope"}),
        )
        .await;
    assert_eq!(s, 400, "{r}");
    assert!(r["detail"].as_str().unwrap().contains("rejected"), "{r}");
    let (s, r) = env
        .post(
            &format!("/api/conversations/{id}/switch_acp_model"),
            json!({"model": " "}),
        )
        .await;
    assert_eq!(s, 400, "{r}");
    env.send(&id, "again", true).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let last = loop {
        let events = env.events(&id).await;
        let last = events
            .iter()
            .rev()
            .find(|e| e["kind"] == "ActionEvent")
            .cloned()
            .unwrap();
        if last["action"]["message"]
            .as_str()
            .unwrap()
            .contains("again")
        {
            break last;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "second turn did not finish"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert!(
        last["action"]["message"]
            .as_str()
            .unwrap()
            .contains("You said: again; model=beta"),
        "{last}"
    );
    let (_, info) = env.get(&format!("/api/conversations/{id}")).await;
    assert_eq!(info["current_model_id"], "beta");
    assert_eq!(info["agent"]["acp_model"], "beta");
    env.stop().await;
}

#[tokio::test]
async fn a_peer_that_dies_mid_run_ends_in_error_not_a_hang() {
    let Some(py) = python() else { return };
    let env = Env::start(no_llm).await;
    let id = start(&env, acp_agent(&py, "die"), "crash please").await;
    env.wait_status(&id, &["error"]).await;
    let events = env.events(&id).await;
    let err = events
        .iter()
        .find(|e| e["kind"] == "ConversationErrorEvent")
        .expect("error event");
    assert_eq!(err["code"], "ACPPromptError", "{err}");
    assert_eq!(err["source"], "agent");
    let msg = events
        .iter()
        .rev()
        .find(|e| e["kind"] == "MessageEvent" && e["source"] == "agent")
        .unwrap();
    assert!(
        msg["llm_message"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("ACP error: "),
        "{msg}"
    );
    // The started call is closed as failed.
    let last_call = events
        .iter()
        .rev()
        .find(|e| e["kind"] == "ACPToolCallEvent")
        .unwrap();
    assert_eq!(
        (last_call["status"].clone(), last_call["is_error"].clone()),
        (json!("failed"), json!(true))
    );
    env.stop().await;
}

#[tokio::test]
async fn acp_models_are_discovered_and_bad_commands_are_refused() {
    let env = Env::start(no_llm).await;
    // Unknown program: a clear 422 naming the field at start.
    let (s, r) = env
        .post(
            "/api/conversations",
            env.start_body(
                json!({"agent": {"kind": "ACPAgent", "acp_command": ["no-such-acp-server-xyz"]}}),
            ),
        )
        .await;
    assert_eq!(s, 422, "{r}");
    assert_eq!(
        r["detail"][0]["loc"],
        json!(["body", "agent", "acp_command"])
    );
    assert!(
        r["detail"][0]["msg"]
            .as_str()
            .unwrap()
            .contains("no-such-acp-server-xyz")
    );
    // A custom server without a command.
    let (s, r) = env
        .post(
            "/api/acp/models",
            json!({"agent_settings": {"agent_kind": "acp", "acp_server": "custom"}}),
        )
        .await;
    assert_eq!(s, 422, "{r}");
    // A command that cannot start is reported in `error`, as the reference does.
    let (s, r) = env
        .post(
            "/api/acp/models",
            json!({"agent_settings": {"acp_server": "custom", "acp_command": ["/nonexistent/acp"]}}),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["error"]["code"], "ACPSpawnError");
    assert_eq!(r["available_models"], json!([]));
    // A non-ACP conversation cannot switch an ACP model.
    let plain = env.create(json!({})).await;
    let (s, r) = env
        .post(
            &format!(
                "/api/conversations/{}/switch_acp_model",
                plain["id"].as_str().unwrap()
            ),
            json!({"model": "x"}),
        )
        .await;
    assert_eq!(s, 400, "{r}");
    assert_eq!(
        r["detail"],
        "switch_acp_model is only supported for ACP conversations."
    );
    let Some(py) = python() else {
        env.stop().await;
        return;
    };
    let (s, r) = env
        .post(
            "/api/acp/models",
            json!({"agent_settings": {"agent_kind": "acp", "acp_server": "custom",
                "acp_command": [py, peer(), "normal"]}, "secrets": {"PEER_TOKEN": "t0k3n"}}),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["error"], Value::Null);
    assert_eq!(r["agent_name"], "scripted-peer");
    assert_eq!(r["agent_version"], "0.1.0");
    assert_eq!(r["current_model_id"], "peer-default");
    assert_eq!(r["supports_runtime_model_switch"], false);
    assert_eq!(r["available_models"][2]["model_id"], "beta");
    // Before the first run a switch is only stored.
    let mut agent = acp_agent(&py, "normal");
    agent["acp_model"] = json!("alpha");
    let (s, info) = env
        .post(
            "/api/conversations",
            env.start_body(json!({"agent": agent})),
        )
        .await;
    assert_eq!(s, 201, "{info}");
    assert_eq!(info["current_model_id"], "alpha");
    let id = info["id"].as_str().unwrap().to_string();
    let (s, r) = env
        .post(
            &format!("/api/conversations/{id}/switch_acp_model"),
            json!({"model": "beta"}),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    let (_, info) = env.get(&format!("/api/conversations/{id}")).await;
    assert_eq!(info["current_model_id"], "beta");
    env.stop().await;
}

/// Starts a conversation with `secrets` and waits for its first turn;
/// returns the id and the turn's answer.
async fn run_with_secrets(env: &Env, agent: Value, secrets: Value) -> (String, String) {
    let (s, info) = env
        .post(
            "/api/conversations",
            env.start_body(
                json!({"agent": agent, "secrets": secrets, "initial_message": {
                "role": "user", "content": [{"type": "text", "text": "report"}], "run": true}}),
            ),
        )
        .await;
    assert_eq!(s, 201, "{info}");
    let id = info["id"].as_str().unwrap().to_string();
    env.wait_status(&id, &["finished", "error"]).await;
    let events = env.events(&id).await;
    let answer = events
        .iter()
        .find(|e| e["kind"] == "ActionEvent")
        .map(|a| a["action"]["message"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no answer: {events:?}"));
    (id, answer)
}

fn conversation_dir(env: &Env, id: &str) -> std::path::PathBuf {
    env.conversations_dir().join(id.replace('-', ""))
}

#[tokio::test]
async fn file_secrets_are_written_private_and_located_by_their_variable() {
    use std::os::unix::fs::PermissionsExt;
    let Some(py) = python() else { return };
    let env = Env::start(no_llm).await;
    let mut agent = acp_agent(&py, "report");
    agent["acp_command"]
        .as_array_mut()
        .unwrap()
        .push(json!("CODEX_HOME,CODEX_AUTH_JSON,KIMI_CODE_HOME,PLAIN"));
    let auth = r#"{"tokens": {"refresh_token": "rt-1"}}"#;
    let (id, answer) = run_with_secrets(
        &env,
        agent,
        json!({"CODEX_AUTH_JSON": auth, "PLAIN": "plain-value"}),
    )
    .await;
    let dir = conversation_dir(&env, &id).join("acp/codex");
    let file = dir.join("auth.json");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), auth);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(&dir), 0o700);
    // The variable points at the directory; the secret itself is not passed
    // as a variable; secrets without a spec still are (masked in events).
    assert!(
        answer.contains(&format!("CODEX_HOME={}", dir.display())),
        "{answer}"
    );
    assert!(answer.contains("CODEX_AUTH_JSON=unset"), "{answer}");
    assert!(answer.contains("KIMI_CODE_HOME=unset"), "{answer}");
    assert!(
        answer.contains("PLAIN=")
            && !answer.contains("PLAIN=unset")
            && !answer.contains("plain-value"),
        "{answer}"
    );
    // The file secret is not advertised to the agent as a variable.
    let events = env.events(&id).await;
    let sys = events
        .iter()
        .find(|e| e["kind"] == "SystemPromptEvent")
        .unwrap();
    let suffix = sys["dynamic_context"]["text"].as_str().unwrap_or_default();
    assert!(
        suffix.contains("PLAIN") && !suffix.contains("CODEX_AUTH_JSON"),
        "{suffix}"
    );
    env.stop().await;
}

#[tokio::test]
async fn an_isolated_data_directory_lives_in_the_conversation() {
    let Some(py) = python() else { return };
    let env = Env::start(no_llm).await;
    // A command the reference recognises as codex: a codex-acp wrapper
    // script in front of the scripted peer.
    let bin = env.workspace().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let wrapper = bin.join("codex-acp");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\nexec '{py}' '{}' \"$@\"\n", peer()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let agent = json!({"kind": "ACPAgent", "acp_command": [wrapper, "report", "CODEX_HOME"],
        "acp_isolate_data_dir": true, "acp_startup_timeout": 30, "acp_prompt_timeout": 30});
    let (id, answer) = run_with_secrets(&env, agent, json!({})).await;
    let dir = conversation_dir(&env, &id).join("acp/codex");
    assert!(dir.is_dir());
    assert!(
        answer.contains(&format!("CODEX_HOME={}", dir.display())),
        "{answer}"
    );
    env.stop().await;
}

#[tokio::test]
async fn usage_updates_and_prompt_usage_become_the_conversation_stats() {
    let Some(py) = python() else { return };
    let env = Env::start(no_llm).await;
    let mut agent = acp_agent(&py, "normal");
    agent["acp_model"] = json!("alpha");
    let id = start(&env, agent, "one").await;
    env.wait_status(&id, &["finished"]).await;
    env.send(&id, "two", true).await;
    // Wait until the second turn's figures (and its stats update) are in.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let events = env.events(&id).await;
        let recorded = events.iter().any(|e| {
            e["kind"] == "ConversationStateUpdateEvent"
                && e["key"] == "stats"
                && e["value"]["usage_to_metrics"]["acp-managed"]["accumulated_cost"] == json!(0.5)
        });
        if recorded {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "second turn not recorded"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let (_, info) = env.get(&format!("/api/conversations/{id}")).await;
    let m = &info["stats"]["usage_to_metrics"]["acp-managed"];
    assert_eq!(m["model_name"], "alpha", "{info}");
    // The peer reports a cumulative session cost of 0.25 then 0.50: each
    // turn records what it grew by.
    assert!(
        (m["accumulated_cost"].as_f64().unwrap() - 0.5).abs() < 1e-9,
        "{m}"
    );
    let costs: Vec<f64> = m["costs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["cost"].as_f64().unwrap())
        .collect();
    assert_eq!(costs, [0.25, 0.25]);
    let acc = &m["accumulated_token_usage"];
    assert_eq!(acc["prompt_tokens"], 200);
    assert_eq!(acc["completion_tokens"], 40);
    assert_eq!(acc["cache_read_tokens"], 10);
    assert_eq!(acc["reasoning_tokens"], 6);
    assert_eq!(acc["context_window"], 200000);
    assert_eq!(acc["per_turn_token"], 120);
    assert_eq!(acc["model"], "alpha");
    assert_eq!(m["token_usages"][1]["response_id"], "sess-1");
    assert_eq!(m["response_latencies"].as_array().unwrap().len(), 2);
    env.stop().await;
}

#[tokio::test]
async fn a_prompt_failing_with_an_internal_error_is_retried_once_and_succeeds() {
    let Some(py) = python() else { return };
    let env = Env::start(no_llm).await;
    let id = start(&env, acp_agent(&py, "flaky"), "try").await;
    // The reference waits 5 s before the first retry.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(40);
    let events = loop {
        let events = env.events(&id).await;
        if events.iter().any(|e| e["kind"] == "ActionEvent") {
            break events;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no answer: {events:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    env.wait_status(&id, &["finished"]).await;
    assert!(
        !events.iter().any(|e| e["kind"] == "ConversationErrorEvent"),
        "{events:?}"
    );
    let answer = events.iter().find(|e| e["kind"] == "ActionEvent").unwrap();
    assert!(
        answer["action"]["message"]
            .as_str()
            .unwrap()
            .starts_with("You said: try;"),
        "{answer}"
    );
    // The failed attempt's open call is closed as failed before the retry.
    let flaky: Vec<(Value, Value)> = events
        .iter()
        .filter(|e| e["kind"] == "ACPToolCallEvent" && e["tool_call_id"] == "t-flaky")
        .map(|e| (e["status"].clone(), e["is_error"].clone()))
        .collect();
    assert_eq!(
        flaky,
        [
            (json!("in_progress"), json!(false)),
            (json!("failed"), json!(true))
        ]
    );
    env.stop().await;
}

/// The stored and returned `ACPAgent` reads as the reference's: the fields
/// the request left out carry the reference's defaults (captured from
/// reference 1.58.2 for `{"kind": "ACPAgent", "acp_command": ["cat"]}`).
#[tokio::test]
async fn an_acp_agent_is_answered_with_the_references_defaults() {
    let env = Env::start(no_llm).await;
    let info = env
        .create(json!({"agent": {"kind": "ACPAgent", "acp_command": ["cat"]}}))
        .await;
    let id = info["id"].as_str().unwrap();
    let (status, got) = env.get(&format!("/api/conversations/{id}")).await;
    assert_eq!(status, 200, "{got}");
    let agent = &got["agent"];
    for (key, want) in [
        ("acp_command", json!(["cat"])),
        ("acp_server", Value::Null),
        ("acp_args", json!([])),
        ("acp_session_mode", Value::Null),
        ("acp_prompt_timeout", json!(1800.0)),
        ("acp_startup_timeout", json!(90.0)),
        ("acp_model", Value::Null),
        ("acp_resume_session_id", Value::Null),
        ("acp_isolate_data_dir", json!(false)),
    ] {
        assert_eq!(agent[key], want, "{key}: {agent}");
    }
    let secrets: Vec<&str> = agent["acp_file_secrets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["secret_name"].as_str().unwrap())
        .collect();
    assert_eq!(
        secrets,
        [
            "CODEX_AUTH_JSON",
            "GOOGLE_APPLICATION_CREDENTIALS_JSON",
            "KIMI_CODE_CONFIG_TOML",
            "PI_AUTH_JSON"
        ]
    );
    assert_eq!(
        agent["acp_file_secrets"][1],
        json!({"secret_name": "GOOGLE_APPLICATION_CREDENTIALS_JSON",
               "filename": "gcloud-credentials.json", "env_var": "GOOGLE_APPLICATION_CREDENTIALS",
               "subdir": "gemini-cli", "env_points_to": "file",
               "warn_if_unset": ["GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"]})
    );
}

/// A local stand-in of a product's credential store: `GET /cred` answers
/// `{"value","version"}`, `PUT /cred` compares `expected_version` (409 on
/// a mismatch) and answers the next version. Records each request's
/// method, authorization header and body.
mod binding_stand_in {
    use axum::Json;
    use axum::extract::State;
    use axum::http::{HeaderMap, StatusCode};
    use axum::routing::get;
    use serde_json::{Value, json};
    use std::sync::{Arc, Mutex};

    #[derive(Default)]
    pub struct Store {
        pub value: String,
        pub version: u64,
        pub seen: Vec<(String, String, Value)>,
        /// Answer every request with this status instead.
        pub fail: Option<u16>,
    }

    pub type Shared = Arc<Mutex<Store>>;

    fn auth(h: &HeaderMap) -> String {
        h.get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    }

    async fn load(State(s): State<Shared>, h: HeaderMap) -> (StatusCode, Json<Value>) {
        let mut g = s.lock().unwrap();
        g.seen.push(("GET".into(), auth(&h), Value::Null));
        if let Some(code) = g.fail {
            return (StatusCode::from_u16(code).unwrap(), Json(json!({})));
        }
        (
            StatusCode::OK,
            Json(json!({"value": g.value, "version": format!("v{}", g.version)})),
        )
    }

    async fn replace(
        State(s): State<Shared>,
        h: HeaderMap,
        Json(body): Json<Value>,
    ) -> (StatusCode, Json<Value>) {
        let mut g = s.lock().unwrap();
        g.seen.push(("PUT".into(), auth(&h), body.clone()));
        if body["expected_version"] != format!("v{}", g.version) {
            return (StatusCode::CONFLICT, Json(json!({})));
        }
        g.value = body["value"].as_str().unwrap().to_string();
        g.version += 1;
        (
            StatusCode::OK,
            Json(json!({"version": format!("v{}", g.version)})),
        )
    }

    /// Serves `store`; returns the credential's URL.
    pub async fn serve(store: Shared) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/cred", listener.local_addr().unwrap());
        let app = axum::Router::new()
            .route("/cred", get(load).put(replace))
            .with_state(store);
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        url
    }
}

fn codex_auth(generation: u64, refresh: &str) -> String {
    json!({"auth_mode": "chatgpt", "generation": generation,
           "tokens": {"refresh_token": refresh, "access_token": format!("access-{refresh}")}})
    .to_string()
}

fn finish_texts(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["kind"] == "ActionEvent" && e["tool_name"] == "finish")
        .map(|e| e["action"]["message"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_bound_codex_credential_is_loaded_rotated_synced_back_and_scrubbed() {
    use binding_stand_in::*;
    let Some(py) = python() else { return };
    let store: Shared = Default::default();
    {
        let mut g = store.lock().unwrap();
        g.value = codex_auth(1, "refresh-1");
        g.version = 1;
    }
    let url = serve(store.clone()).await;
    let env = Env::start(no_llm).await;
    let id = uuid::Uuid::new_v4().to_string();
    let bind = |url: &str, token: &str| json!({"url": url, "headers": {"Authorization": format!("Bearer {token}")}});
    let path = format!("/api/conversations/{id}/credential-bindings/CODEX_AUTH_JSON");

    // Activated before the conversation exists: kept until it loads.
    let (s, r) = env.call("PUT", &path, Some(bind(&url, "t1"))).await;
    assert_eq!(s, 204, "{r}");
    // The conversation's own copy of the secret is replaced by the binding.
    let stale = codex_auth(0, "stale-refresh");
    let (s, info) = env
        .post(
            "/api/conversations",
            env.start_body(json!({"conversation_id": id, "agent": acp_agent(&py, "rotate"),
                "secrets": {"CODEX_AUTH_JSON": stale},
                "initial_message": {"role": "user", "content": [{"type": "text", "text": "go"}], "run": true}})),
        )
        .await;
    assert_eq!(s, 201, "{info}");
    env.wait_status(&id, &["finished"]).await;
    assert_eq!(finish_texts(&env.events(&id).await), ["generation=1"]);
    {
        let g = store.lock().unwrap();
        let puts: Vec<&(String, String, Value)> = g.seen.iter().filter(|x| x.0 == "PUT").collect();
        assert_eq!(puts.len(), 1, "{:?}", g.seen);
        assert_eq!(puts[0].1, "Bearer t1");
        assert_eq!(puts[0].2["expected_version"], "v1");
        let stored: Value = serde_json::from_str(&g.value).unwrap();
        assert_eq!(stored["generation"], 2);
        assert_eq!(stored["tokens"]["refresh_token"], "refresh-2");
        assert_eq!(g.version, 2);
    }
    // Nothing of the credential is persisted; meta.json requires a binding.
    let dir = env.conversations_dir().join(id.replace('-', ""));
    let meta: Value =
        serde_json::from_slice(&std::fs::read(dir.join("meta.json")).unwrap()).unwrap();
    assert_eq!(
        meta["required_runtime_credential_bindings"],
        json!(["CODEX_AUTH_JSON"])
    );
    assert!(meta["secrets"].get("CODEX_AUTH_JSON").is_none(), "{meta}");
    let base: Value =
        serde_json::from_slice(&std::fs::read(dir.join("base_state.json")).unwrap()).unwrap();
    assert!(
        base["secret_registry"]["secret_sources"]
            .get("CODEX_AUTH_JSON")
            .is_none(),
        "{base}"
    );
    assert!(!dir.join("acp/codex/auth.json").exists());

    // The next turn and an ask_agent fork each rotate it again.
    env.send(&id, "again", true).await;
    env.wait_status(&id, &["finished"]).await;
    assert_eq!(
        finish_texts(&env.events(&id).await),
        ["generation=1", "generation=2"]
    );
    let (s, r) = env
        .post(
            &format!("/api/conversations/{id}/ask_agent"),
            json!({"question": "q"}),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["response"], "generation=3");
    {
        let g = store.lock().unwrap();
        assert_eq!(g.version, 4, "{:?}", g.seen);
    }

    // Too late now for a new source; the same source takes a new
    // authorization, used from then on.
    let elsewhere: Shared = Default::default();
    *elsewhere.lock().unwrap() = Store {
        value: codex_auth(1, "x"),
        version: 1,
        ..Default::default()
    };
    let other_url = serve(elsewhere).await;
    let (s, r) = env.call("PUT", &path, Some(bind(&other_url, "t2"))).await;
    assert_eq!(
        (s, r["detail"].as_str()),
        (
            409,
            Some("Credential binding activation arrived after ACP initialization")
        )
    );
    let (s, r) = env.call("PUT", &path, Some(bind(&url, "t2"))).await;
    assert_eq!(s, 204, "{r}");
    env.send(&id, "third", true).await;
    env.wait_status(&id, &["finished"]).await;
    assert_eq!(store.lock().unwrap().seen.last().unwrap().1, "Bearer t2");

    // Before a sandbox pause the conversation is closed and the binding
    // forgotten: the conversation waits for a new activation.
    let (s, r) = env
        .call("POST", "/api/conversations/prepare-for-sandbox-pause", None)
        .await;
    assert_eq!(s, 204, "{r}");
    let (s, r) = env
        .get(&format!("/api/conversations/{id}/events/search"))
        .await;
    assert_eq!(
        (s, r),
        (
            409,
            json!({"detail": "credential_binding_activation_required", "retryable": true})
        )
    );
    let (s, r) = env.call("PUT", &path, Some(bind(&url, "t3"))).await;
    assert_eq!(s, 204, "{r}");
    env.send(&id, "after resume", true).await;
    env.wait_status(&id, &["finished"]).await;
    assert_eq!(
        finish_texts(&env.events(&id).await).last().unwrap(),
        "generation=5"
    );
}

/// A Codex `ACPAgent` conversation no product bound `CODEX_AUTH_JSON` to
/// is bound to the one saved in the server's secrets: its ACP server reads
/// the store's value (not the request's), each rotation is written back
/// under a new generation (sealed at rest), nothing of it is persisted with
/// the conversation, and it is not required after a reload: the store's
/// binding is found again.
#[tokio::test]
async fn a_codex_conversation_without_a_binding_uses_the_servers_saved_credential() {
    let Some(py) = python() else { return };
    let env = Env::start(no_llm).await;
    let secret = "/api/settings/secrets/CODEX_AUTH_JSON";
    let (s, r) = env
        .call(
            "PUT",
            "/api/settings/secrets",
            Some(
                json!({"name": "CODEX_AUTH_JSON", "value": codex_auth(1, "refresh-1"),
                        "description": "ChatGPT sign-in"}),
            ),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    let mut agent = acp_agent(&py, "rotate");
    agent["acp_server"] = json!("codex");
    let (s, info) = env
        .post(
            "/api/conversations",
            env.start_body(json!({"agent": agent,
                "secrets": {"CODEX_AUTH_JSON": codex_auth(0, "stale-refresh")},
                "initial_message": {"role": "user", "content": [{"type": "text", "text": "go"}], "run": true}})),
        )
        .await;
    assert_eq!(s, 201, "{info}");
    let id = info["id"].as_str().unwrap().to_string();
    env.wait_status(&id, &["finished"]).await;
    assert_eq!(finish_texts(&env.events(&id).await), ["generation=1"]);
    // The rotation is back in the store, under a new generation, sealed.
    let (s, stored) = env.get(secret).await;
    assert_eq!((s, &stored["generation"]), (200, &json!(2)), "{stored}");
    assert_eq!(stored["tokens"]["refresh_token"], "refresh-2");
    let file = env.config().persistence_dir.join("secrets.json");
    let raw = std::fs::read_to_string(&file).unwrap();
    assert!(!raw.contains("refresh-2"), "{raw}");
    let doc: Value = serde_json::from_str(&raw).unwrap();
    let first = doc["_credential_versions"]["CODEX_AUTH_JSON"].clone();
    assert!(first.as_str().is_some_and(|v| !v.is_empty()), "{doc}");
    assert_eq!(
        doc["custom_secrets"]["CODEX_AUTH_JSON"]["description"],
        "ChatGPT sign-in"
    );
    // Scrubbed from the conversation's files without being required.
    let dir = env.conversations_dir().join(id.replace('-', ""));
    let meta: Value =
        serde_json::from_slice(&std::fs::read(dir.join("meta.json")).unwrap()).unwrap();
    assert!(meta["secrets"].get("CODEX_AUTH_JSON").is_none(), "{meta}");
    assert_eq!(
        meta.get("required_runtime_credential_bindings")
            .cloned()
            .unwrap_or(json!([])),
        json!([]),
        "{meta}"
    );
    let base = std::fs::read_to_string(dir.join("base_state.json")).unwrap();
    assert!(!base.contains("refresh"), "{base}");
    let base: Value = serde_json::from_str(&base).unwrap();
    assert_eq!(
        base["secret_registry"]["secret_sources"],
        json!({}),
        "{base}"
    );
    assert!(!dir.join("acp/codex/auth.json").exists());

    // The next turn reads the value it wrote back.
    env.send(&id, "again", true).await;
    env.wait_status(&id, &["finished"]).await;
    assert_eq!(
        finish_texts(&env.events(&id).await),
        ["generation=1", "generation=2"]
    );
    let doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_ne!(doc["_credential_versions"]["CODEX_AUTH_JSON"], first);

    // Closed and reloaded, it needs no activation: the store is bound again,
    // and a sign-in saved meanwhile is what the ACP server reads.
    let (s, r) = env
        .call("POST", "/api/conversations/prepare-for-sandbox-pause", None)
        .await;
    assert_eq!(s, 204, "{r}");
    let (s, r) = env
        .call(
            "PUT",
            "/api/settings/secrets",
            Some(json!({"name": "CODEX_AUTH_JSON", "value": codex_auth(7, "refresh-7")})),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    env.send(&id, "after resume", true).await;
    env.wait_status(&id, &["finished"]).await;
    assert_eq!(
        finish_texts(&env.events(&id).await).last().unwrap(),
        "generation=7"
    );
    let (_, stored) = env.get(secret).await;
    assert_eq!(stored["generation"], 8, "{stored}");

    // A product's binding cannot replace it once bound, even before the
    // ACP server starts.
    let product: binding_stand_in::Shared = Default::default();
    product.lock().unwrap().value = codex_auth(1, "r");
    let url = binding_stand_in::serve(product).await;
    let mut agent = acp_agent(&py, "rotate");
    agent["acp_server"] = json!("codex");
    let idle = env.create(json!({"agent": agent})).await;
    let path = format!(
        "/api/conversations/{}/credential-bindings/CODEX_AUTH_JSON",
        idle["id"].as_str().unwrap()
    );
    let (s, r) = env.call("PUT", &path, Some(json!({"url": url}))).await;
    assert_eq!(
        (s, r["detail"].as_str()),
        (
            409,
            Some("Credential binding activation arrived after ACP initialization")
        )
    );
}

#[tokio::test]
async fn credential_binding_activations_are_refused_as_the_reference_refuses_them() {
    use binding_stand_in::*;
    let env = Env::start(no_llm).await;
    let id = uuid::Uuid::new_v4();
    let path = |name: &str| format!("/api/conversations/{id}/credential-bindings/{name}");
    let store: Shared = Default::default();
    store.lock().unwrap().value = codex_auth(1, "r");
    store.lock().unwrap().version = 1;
    let url = serve(store.clone()).await;
    // Body checks come first, then the secret's name.
    let (s, r) = env
        .call(
            "PUT",
            &path("CODEX_AUTH_JSON"),
            Some(json!({"url": url, "extra": 1})),
        )
        .await;
    assert_eq!(s, 422, "{r}");
    assert_eq!(r["detail"][0]["type"], "extra_forbidden");
    let (s, r) = env
        .call(
            "PUT",
            &path("CODEX_AUTH_JSON"),
            Some(json!({"url": url, "headers": {"A": ""}})),
        )
        .await;
    assert_eq!(
        (s, r["detail"][0]["loc"].clone()),
        (422, json!(["body", "headers"]))
    );
    let (s, r) = env
        .call("PUT", &path("OTHER_SECRET"), Some(json!({"url": url})))
        .await;
    assert_eq!((s, r), (404, json!({"detail": "Not Found"})));
    // The source's answers to the probe.
    for (code, status, detail) in [
        (401, 403, "Credential binding authorization was rejected"),
        (404, 422, "Credential binding source is invalid"),
        (409, 409, "Credential binding source changed"),
        (501, 501, "Credential binding source is unsupported"),
    ] {
        store.lock().unwrap().fail = Some(code);
        let (s, r) = env
            .call("PUT", &path("CODEX_AUTH_JSON"), Some(json!({"url": url})))
            .await;
        assert_eq!((s, r), (status, json!({"detail": detail})), "source {code}");
    }
    // A source that never answers is tried three times, then a 502.
    store.lock().unwrap().fail = Some(503);
    let before = store.lock().unwrap().seen.len();
    let (s, r) = env
        .call("PUT", &path("CODEX_AUTH_JSON"), Some(json!({"url": url})))
        .await;
    assert_eq!(
        (s, r),
        (
            502,
            json!({"detail": "Credential binding source is unavailable"})
        )
    );
    assert_eq!(store.lock().unwrap().seen.len() - before, 3);
}
