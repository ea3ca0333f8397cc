//! Security analyzers consulted through the server: `ConfirmRisky` pauses
//! exactly the actions the configured analyzer rates risky, every verdict is
//! a `SecurityAnalysisEvent`, a pending action survives a restart and can be
//! confirmed afterwards, and bad analyzer/policy configurations are 422s
//! naming what is wrong.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use openhands_testkit::{Script, Turn};
use serde_json::{Value, json};

fn risky_script(_workspace: &std::path::Path) -> Script {
    Script::from_turns([
        Turn::tool_call("terminal", json!({"command": "ls", "security_risk": "LOW"})),
        // The model calls this LOW; the rails see a world-writable file.
        Turn::tool_call(
            "terminal",
            json!({"command": "chmod 777 x.txt", "security_risk": "LOW"}),
        ),
        Turn::tool_call(
            "terminal",
            json!({"command": "echo cm0gLXJmIC8= | base64 -d | sh", "security_risk": "LOW"}),
        ),
        Turn::tool_call("finish", json!({"message": "done"})),
    ])
    .with_toolless_reply(Turn::text("A short title"))
}

fn analyses(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["kind"] == "SecurityAnalysisEvent")
        .collect()
}

fn action_id(events: &[Value], command: &str) -> String {
    events
        .iter()
        .find(|e| e["kind"] == "ActionEvent" && e["action"]["command"] == command)
        .unwrap_or_else(|| panic!("no action `{command}`"))["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Polls the events until `done` holds.
async fn wait_for(env: &Env, id: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let events = env.events(id).await;
        if done(&events) {
            return events;
        }
        assert!(std::time::Instant::now() < deadline, "condition never held");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn confirm_risky_pauses_exactly_the_risky_actions_and_survives_a_restart() {
    let mut env = Env::start(risky_script).await;
    std::fs::write(env.workspace().join("x.txt"), "hi\n").unwrap();
    let mut body = env.start_body(json!({
        "confirmation_policy": {"kind": "ConfirmRisky", "threshold": "MEDIUM"},
        "security_analyzer": {"kind": "EnsembleSecurityAnalyzer", "analyzers": [
            {"kind": "PolicyRailSecurityAnalyzer"}, {"kind": "PatternSecurityAnalyzer"}]},
    }));
    body["agent"] = env.agent(&["terminal"]);
    let (s, info) = env.call("POST", "/api/conversations", Some(body)).await;
    assert_eq!(s, 201, "{info}");
    let id = info["id"].as_str().unwrap().to_string();
    env.send(&id, "Tidy up.", true).await;
    env.wait_status(&id, &["waiting_for_confirmation"]).await;

    // `ls` ran without asking; the chmod waits.
    let events = env.events(&id).await;
    let ls = action_id(&events, "ls");
    let chmod = action_id(&events, "chmod 777 x.txt");
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "ObservationEvent" && e["action_id"] == ls.as_str())
    );
    assert!(
        !events
            .iter()
            .any(|e| e["kind"] == "ObservationEvent" && e["action_id"] == chmod.as_str())
    );
    let verdicts = analyses(&events);
    assert_eq!(verdicts.len(), 2, "{verdicts:?}");
    assert_eq!(verdicts[0]["analyzer"], "EnsembleSecurityAnalyzer");
    assert_eq!(verdicts[0]["policy"], "ConfirmRisky");
    assert_eq!(verdicts[0]["source"], "environment");
    assert_eq!(verdicts[0]["risks"][&ls], "LOW");
    assert_eq!(verdicts[1]["risks"][&chmod], "MEDIUM");
    // The model's own label is kept on the action, as the reference does.
    let chmod_event = events.iter().find(|e| e["id"] == chmod.as_str()).unwrap();
    assert_eq!(chmod_event["security_risk"], "LOW");

    // The pending action survives a restart and is confirmed afterwards.
    env.restart().await;
    let after = env.wait_status(&id, &["waiting_for_confirmation"]).await;
    assert_eq!(
        after["security_analyzer"]["kind"],
        "EnsembleSecurityAnalyzer"
    );
    let (s, body) = env
        .post(
            &format!("/api/conversations/{id}/events/respond_to_confirmation"),
            json!({"accept": true}),
        )
        .await;
    assert_eq!((s, body), (200, json!({"success": true})));
    // Waiting again, this time for the third action.
    let events = wait_for(&env, &id, |ev| analyses(ev).len() == 3).await;
    env.wait_status(&id, &["waiting_for_confirmation"]).await;
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "ObservationEvent" && e["action_id"] == chmod.as_str())
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(env.workspace().join("x.txt"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o777, "the accepted chmod ran");
    }

    // The decode-and-run is HIGH; rejecting it answers the model and the
    // agent goes on to finish when asked again.
    let decode = action_id(&events, "echo cm0gLXJmIC8= | base64 -d | sh");
    let verdicts = analyses(&events);
    assert_eq!(verdicts.last().unwrap()["risks"][&decode], "HIGH");
    let (s, _) = env
        .post(
            &format!("/api/conversations/{id}/events/respond_to_confirmation"),
            json!({"accept": false, "reason": "too dangerous"}),
        )
        .await;
    assert_eq!(s, 200);
    env.wait_status(&id, &["idle"]).await;
    let events = env.events(&id).await;
    let reject = events
        .iter()
        .find(|e| e["kind"] == "UserRejectObservation")
        .unwrap();
    assert_eq!(reject["action_id"], decode.as_str());
    env.send(&id, "Finish then.", true).await;
    env.wait_status(&id, &["finished"]).await;
    env.stop().await;
}

#[tokio::test]
async fn analyzer_set_at_runtime_is_consulted_and_failures_never_read_as_low() {
    let env = Env::start(risky_script).await;
    let mut body = env.start_body(json!({"confirmation_policy": {"kind": "NeverConfirm"}}));
    body["agent"] = env.agent(&["terminal"]);
    let (s, info) = env.call("POST", "/api/conversations", Some(body)).await;
    assert_eq!(s, 201, "{info}");
    let id = info["id"].as_str().unwrap().to_string();
    let c = format!("/api/conversations/{id}");

    // Unknown kinds and bad policies are refused, naming what is wrong.
    let (s, body) = env
        .post(
            &format!("{c}/security_analyzer"),
            json!({"security_analyzer": {"kind": "MadeUpAnalyzer"}}),
        )
        .await;
    assert_eq!(s, 422, "{body}");
    assert!(body.to_string().contains("MadeUpAnalyzer"), "{body}");
    let (s, body) = env
        .post(
            &format!("{c}/confirmation_policy"),
            json!({"policy": {"kind": "ConfirmRisky", "threshold": "UNKNOWN"}}),
        )
        .await;
    assert_eq!(s, 422, "{body}");
    let (s, body) = env
        .call(
            "POST",
            "/api/conversations",
            Some(env.start_body(json!({"security_analyzer": {"kind": "NopeAnalyzer"}}))),
        )
        .await;
    assert_eq!(s, 422, "{body}");
    assert!(body.to_string().contains("NopeAnalyzer"), "{body}");

    // Set over HTTP: the rails are consulted (verdict recorded) even though
    // NeverConfirm never asks.
    let (s, _) = env
        .post(
            &format!("{c}/security_analyzer"),
            json!({"security_analyzer": {"kind": "PolicyRailSecurityAnalyzer"}}),
        )
        .await;
    assert_eq!(s, 200);
    let (s, _) = env
        .post(
            &format!("{c}/confirmation_policy"),
            json!({"policy": {"kind": "ConfirmRisky"}}),
        )
        .await;
    assert_eq!(s, 200);
    env.send(&id, "Go.", true).await;
    // ls LOW runs, chmod MEDIUM runs (threshold HIGH), decode-and-run waits.
    env.wait_status(&id, &["waiting_for_confirmation"]).await;
    let events = env.events(&id).await;
    let verdicts = analyses(&events);
    assert_eq!(verdicts.len(), 3, "{verdicts:?}");
    assert!(
        verdicts
            .iter()
            .all(|v| v["analyzer"] == "PolicyRailSecurityAnalyzer")
    );
    let decode = action_id(&events, "echo cm0gLXJmIC8= | base64 -d | sh");
    assert_eq!(verdicts[2]["risks"][&decode], "HIGH");
    assert!(
        verdicts[2]["details"][&decode]["rules"]
            .to_string()
            .contains("decode-to-exec")
    );
    env.stop().await;
}

#[tokio::test]
async fn toolshield_guardrail_model_is_asked_with_history_and_its_key_is_never_in_clear() {
    let env = Env::start(|_| {
        Script::from_turns([
            Turn::tool_call("terminal", json!({"command": "ls", "security_risk": "LOW"})),
            Turn::tool_call(
                "terminal",
                json!({"command": "ls -la", "security_risk": "LOW"}),
            ),
            Turn::tool_call("finish", json!({"message": "done"})),
        ])
        // Requests without tools: the guardrail's.
        .with_toolless_reply(Turn::text("RISK: HIGH\nThe sequence explores the machine."))
    })
    .await;
    let analyzer = json!({"kind": "ToolShieldLLMSecurityAnalyzer", "history_window": 5,
        "safety_experiences": "Never list directories twice.",
        "llm": {"model": "openai/mock-model", "base_url": env.mock.base_url(),
                "api_key": "guard-key-0451", "num_retries": 0, "usage_id": "guardrail"}});
    let mut body = env.start_body(json!({
        "confirmation_policy": {"kind": "ConfirmRisky"},
        "security_analyzer": analyzer,
    }));
    body["agent"] = env.agent(&["terminal"]);
    let (s, info) = env.call("POST", "/api/conversations", Some(body)).await;
    assert_eq!(s, 201, "{info}");
    assert!(!info.to_string().contains("guard-key-0451"), "{info}");
    let id = info["id"].as_str().unwrap().to_string();
    env.send(&id, "Look around.", true).await;
    env.wait_status(&id, &["waiting_for_confirmation"]).await;
    let events = env.events(&id).await;
    let verdicts = analyses(&events);
    assert_eq!(verdicts.len(), 1);
    assert_eq!(verdicts[0]["analyzer"], "ToolShieldLLMSecurityAnalyzer");
    let ls = action_id(&events, "ls");
    assert_eq!(verdicts[0]["risks"][&ls], "HIGH");
    // The guardrail saw the guidelines and the action, tagged and escaped.
    let guard = env
        .mock
        .completion_requests()
        .into_iter()
        .find(|r| r.body.to_string().contains("Never list directories twice."))
        .expect("a guardrail request");
    assert!(guard.body.to_string().contains("<tool>terminal</tool>"));
    // Accept: the next action is judged with the first in its history.
    let (s, _) = env
        .post(
            &format!("/api/conversations/{id}/events/respond_to_confirmation"),
            json!({"accept": true}),
        )
        .await;
    assert_eq!(s, 200);
    wait_for(&env, &id, |ev| analyses(ev).len() == 2).await;
    let guards: Vec<_> = env
        .mock
        .completion_requests()
        .into_iter()
        .filter(|r| r.body.to_string().contains("Never list directories twice."))
        .collect();
    let last = guards.last().unwrap().body.to_string();
    assert!(last.contains("[1]") && last.contains("ls -la"), "{last}");

    // The guardrail's key never reaches the disk in clear.
    let dir = env.conversations_dir().join(id.replace('-', ""));
    let state = std::fs::read_to_string(dir.join("base_state.json")).unwrap();
    assert!(!state.contains("guard-key-0451"));
    for e in std::fs::read_dir(dir.join("events")).unwrap().flatten() {
        let text = String::from_utf8_lossy(&std::fs::read(e.path()).unwrap()).into_owned();
        assert!(!text.contains("guard-key-0451"), "{}", e.path().display());
    }
    let (_, got) = env.get(&format!("/api/conversations/{id}")).await;
    assert!(!got.to_string().contains("guard-key-0451"));
    assert_eq!(
        got["security_analyzer"]["kind"],
        "ToolShieldLLMSecurityAnalyzer"
    );
    env.stop().await;
}

/// A local stand-in for the GraySwan monitor: HIGH (0.95) for anything
/// mentioning `rm -rf`, else LOW (0.05); records each request.
async fn grayswan_monitor() -> (
    String,
    std::sync::Arc<std::sync::Mutex<Vec<(String, Value)>>>,
) {
    use axum::http::HeaderMap;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let app = axum::Router::new().route(
        "/cygnal/monitor",
        axum::routing::post(
            move |headers: HeaderMap, axum::Json(body): axum::Json<Value>| {
                let log = log.clone();
                async move {
                    let auth = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_string();
                    let score = if body.to_string().contains("rm -rf") {
                        0.95
                    } else {
                        0.05
                    };
                    log.lock().unwrap().push((auth, body));
                    axum::Json(json!({"violation": score, "ipi": false}))
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/cygnal/monitor", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, seen)
}

#[tokio::test]
async fn grayswan_monitor_is_asked_with_the_conversation_and_its_key_is_never_in_clear() {
    let env = Env::start(|_| {
        Script::from_turns([
            Turn::tool_call(
                "terminal",
                json!({"command": "ls", "security_risk": "HIGH"}),
            ),
            Turn::tool_call(
                "terminal",
                json!({"command": "rm -rf build-cache", "security_risk": "LOW"}),
            ),
            Turn::tool_call(
                "terminal",
                json!({"command": "echo hi", "security_risk": "LOW"}),
            ),
            Turn::tool_call("finish", json!({"message": "done"})),
        ])
        .with_toolless_reply(Turn::text("A short title"))
    })
    .await;
    let (url, seen) = grayswan_monitor().await;
    let mut body = env.start_body(json!({
        "confirmation_policy": {"kind": "ConfirmRisky"},
        "security_analyzer": {"kind": "GraySwanAnalyzer", "api_url": url,
            "api_key": "gs-key-7788", "policy_id": "policy-42", "timeout": 5},
    }));
    body["agent"] = env.agent(&["terminal"]);
    let (s, info) = env.call("POST", "/api/conversations", Some(body)).await;
    assert_eq!(s, 201, "{info}");
    assert!(!info.to_string().contains("gs-key-7788"), "{info}");
    let id = info["id"].as_str().unwrap().to_string();
    env.send(&id, "Clean the build cache.", true).await;
    // `ls` is LOW by the monitor (the model's HIGH label is not what counts);
    // the deletion is HIGH and waits.
    env.wait_status(&id, &["waiting_for_confirmation"]).await;
    let events = env.events(&id).await;
    let verdicts = analyses(&events);
    assert_eq!(verdicts.len(), 2, "{verdicts:?}");
    assert!(verdicts.iter().all(|v| v["analyzer"] == "GraySwanAnalyzer"));
    let ls = action_id(&events, "ls");
    let rm = action_id(&events, "rm -rf build-cache");
    assert_eq!(verdicts[0]["risks"][&ls], "LOW");
    assert_eq!(verdicts[1]["risks"][&rm], "HIGH");
    assert_eq!(verdicts[1]["details"][&rm]["violation"], 0.95);

    // The monitor saw the conversation: system prompt first, the user's
    // message, the first action and its output, then the pending call.
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].0, "Bearer gs-key-7788");
    assert_eq!(requests[1].1["policy_id"], "policy-42");
    let messages = requests[1].1["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles.first(), Some(&"system"));
    assert!(
        roles.contains(&"user") && roles.contains(&"tool"),
        "{roles:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m["content"] == "Clean the build cache.")
    );
    // The model's own risk labels are withheld from every call shown.
    let calls: Vec<&Value> = messages
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .collect();
    assert_eq!(calls.len(), 2, "{messages:?}");
    assert!(calls.iter().all(|c| {
        !c["function"]["arguments"]
            .as_str()
            .unwrap()
            .contains("security_risk")
    }));

    // The key never reaches the disk or the API in clear.
    let dir = env.conversations_dir().join(id.replace('-', ""));
    let state = std::fs::read_to_string(dir.join("base_state.json")).unwrap();
    assert!(!state.contains("gs-key-7788"));
    for e in std::fs::read_dir(dir.join("events")).unwrap().flatten() {
        let text = String::from_utf8_lossy(&std::fs::read(e.path()).unwrap()).into_owned();
        assert!(!text.contains("gs-key-7788"), "{}", e.path().display());
    }
    let (_, got) = env.get(&format!("/api/conversations/{id}")).await;
    assert!(!got.to_string().contains("gs-key-7788"), "{got}");
    assert_eq!(got["security_analyzer"]["kind"], "GraySwanAnalyzer");

    // An unreachable monitor makes the next action HIGH, never LOW.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead = format!("http://{}/cygnal/monitor", closed.local_addr().unwrap());
    drop(closed);
    let (s, _) = env
        .post(
            &format!("/api/conversations/{id}/security_analyzer"),
            json!({"security_analyzer": {"kind": "GraySwanAnalyzer", "api_url": dead,
                "api_key": "gs-key-7788", "timeout": 2}}),
        )
        .await;
    assert_eq!(s, 200);
    let (s, _) = env
        .post(
            &format!("/api/conversations/{id}/events/respond_to_confirmation"),
            json!({"accept": true}),
        )
        .await;
    assert_eq!(s, 200);
    let events = wait_for(&env, &id, |ev| analyses(ev).len() == 3).await;
    env.wait_status(&id, &["waiting_for_confirmation"]).await;
    let echo = action_id(&events, "echo hi");
    let last = *analyses(&events).last().unwrap();
    assert_eq!(last["risks"][&echo], "HIGH", "{last}");
    assert!(
        last["details"][&echo]["error"]
            .to_string()
            .contains("GraySwan analysis failed"),
        "{last}"
    );
    env.stop().await;
}

/// The 40-command corpus of the SDK (`security_corpus.json`) through the
/// server: each analyzer rates all 40 commands of one model turn under
/// `AlwaysConfirm`, and the `SecurityAnalysisEvent` carries exactly the
/// verdicts the corpus records as ours (which the SDK's test holds against
/// the reference's: never more lenient on dangerous commands, never
/// stricter on ordinary ones, at least 54 of 60 dangerous verdicts flagged).
#[tokio::test]
async fn the_command_corpus_gets_the_recorded_verdicts_through_the_server() {
    let corpus: Value =
        serde_json::from_str(include_str!("../../../sdk/tests/data/security_corpus.json")).unwrap();
    let entries = corpus["commands"].as_array().unwrap().clone();
    assert_eq!(entries.len(), 40);
    let commands: Vec<String> = entries
        .iter()
        .map(|e| e["command"].as_str().unwrap().to_string())
        .collect();
    let turn_commands = commands.clone();
    let env = Env::start(move |_| {
        let mut turn = Turn::text("Checking the machine.");
        for c in &turn_commands {
            turn = turn.with_tool_call("terminal", json!({"command": c, "security_risk": "LOW"}));
        }
        Script::from_turns([turn.clone(), turn.clone(), turn])
            .with_toolless_reply(Turn::text("A short title"))
    })
    .await;
    let mut flagged = 0;
    for kind in [
        "PatternSecurityAnalyzer",
        "PolicyRailSecurityAnalyzer",
        "EnsembleSecurityAnalyzer",
    ] {
        let analyzer = if kind == "EnsembleSecurityAnalyzer" {
            json!({"kind": kind, "analyzers": [
                {"kind": "PolicyRailSecurityAnalyzer"}, {"kind": "PatternSecurityAnalyzer"}]})
        } else {
            json!({"kind": kind})
        };
        let mut body = env.start_body(json!({
            "confirmation_policy": {"kind": "AlwaysConfirm"},
            "security_analyzer": analyzer,
        }));
        body["agent"] = env.agent(&["terminal"]);
        let (s, info) = env.call("POST", "/api/conversations", Some(body)).await;
        assert_eq!(s, 201, "{info}");
        let id = info["id"].as_str().unwrap().to_string();
        env.send(&id, "Run these.", true).await;
        env.wait_status(&id, &["waiting_for_confirmation"]).await;
        let events = env.events(&id).await;
        let verdicts = analyses(&events);
        assert_eq!(verdicts.len(), 1, "one verdict event per batch");
        assert_eq!(verdicts[0]["analyzer"], kind);
        assert_eq!(verdicts[0]["policy"], "AlwaysConfirm");
        for entry in &entries {
            let command = entry["command"].as_str().unwrap();
            let action = action_id(&events, command);
            let got = &verdicts[0]["risks"][&action];
            assert_eq!(got, &entry["ours"][kind], "{kind} on `{command}`");
            if entry["class"] == "dangerous" && (got == "MEDIUM" || got == "HIGH") {
                flagged += 1;
            }
        }
        // Nothing ran while waiting.
        assert!(!events.iter().any(|e| e["kind"] == "ObservationEvent"));
    }
    assert!(flagged >= 54, "{flagged}/60 dangerous verdicts flagged");
    env.stop().await;
}

/// A prompt file the agent names but nobody has is refused naming the file
/// (never the default prompt in its place); a custom security policy file
/// reaches the system prompt verbatim.
#[tokio::test]
async fn prompt_files_are_found_or_refused_by_name() {
    let env = Env::start(|_| {
        Script::from_turns([Turn::tool_call("finish", json!({"message": "done"}))])
            .with_toolless_reply(Turn::text("A short title"))
    })
    .await;
    let mut body = env.start_body(json!({}));
    body["agent"] = env.agent(&["terminal"]);
    body["agent"]["system_prompt_filename"] = json!("system_prompt_nowhere.j2");
    let (s, info) = env.call("POST", "/api/conversations", Some(body)).await;
    assert_eq!(s, 422, "{info}");
    assert!(
        info["detail"][0]["loc"]
            .to_string()
            .contains("system_prompt_filename"),
        "{info}"
    );
    assert!(
        info.to_string().contains("system_prompt_nowhere.j2"),
        "{info}"
    );
    let mut body = env.start_body(json!({}));
    body["agent"] = env.agent(&["terminal"]);
    body["agent"]["security_policy_filename"] = json!("no_such_policy.md");
    let (s, info) = env.call("POST", "/api/conversations", Some(body)).await;
    assert_eq!(s, 422, "{info}");
    assert!(info.to_string().contains("no_such_policy.md"), "{info}");
    assert!(
        info["detail"][0]["loc"]
            .to_string()
            .contains("security_policy_filename"),
        "{info}"
    );
    let policy = env.workspace().join("team_policy.md");
    std::fs::write(&policy, "# Team policy\nAsk before any network call.").unwrap();
    let mut body = env.start_body(json!({}));
    body["agent"] = env.agent(&["terminal"]);
    body["agent"]["security_policy_filename"] = json!(policy.to_str().unwrap());
    let (s, info) = env.call("POST", "/api/conversations", Some(body)).await;
    assert_eq!(s, 201, "{info}");
    let id = info["id"].as_str().unwrap().to_string();
    env.send(&id, "Go.", true).await;
    env.wait_status(&id, &["finished"]).await;
    let events = env.events(&id).await;
    let prompt = events
        .iter()
        .find(|e| e["kind"] == "SystemPromptEvent")
        .unwrap()["system_prompt"]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        prompt.contains("<SECURITY>\n\n# Team policy\nAsk before any network call.\n\n</SECURITY>"),
        "{prompt}"
    );
    env.stop().await;
}
