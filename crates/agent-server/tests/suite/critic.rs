//! The agent's critic through the server: an `APIBasedCritic` scored by a
//! local classification service, its results on the finishing actions as
//! the reference records them, refinement exactly until the critic passes,
//! its key never in clear, and unknown critics refused naming the field.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use openhands_testkit::{Script, Turn};
use serde_json::{Value, json};

/// Labels the reference's API critic expects, success first (27 in all).
const LABELS: usize = 27;

/// The classification service: success 0.2 until the conversation holds a
/// refinement follow-up, then 0.9.
async fn critic_service() -> (
    String,
    std::sync::Arc<std::sync::Mutex<Vec<(String, Value)>>>,
) {
    use axum::http::HeaderMap;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let app = axum::Router::new().route(
        "/vllm/classify",
        axum::routing::post(
            move |headers: HeaderMap, axum::Json(body): axum::Json<Value>| {
                let log = log.clone();
                async move {
                    let auth = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_string();
                    let input = body["input"].as_str().unwrap_or_default().to_string();
                    let success = if input.contains("The task appears incomplete (iteration 1") {
                        0.9
                    } else {
                        0.2
                    };
                    log.lock().unwrap().push((auth, body));
                    let mut probs = vec![0.05; LABELS];
                    probs[0] = success;
                    axum::Json(json!({"data": [{"probs": probs, "num_classes": LABELS}]}))
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/vllm", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, seen)
}

fn script(_workspace: &std::path::Path) -> Script {
    Script::from_turns([
        Turn::tool_call("finish", json!({"message": "first try"})),
        Turn::tool_call("finish", json!({"message": "second try"})),
        Turn::tool_call("finish", json!({"message": "third try"})),
    ])
    .with_toolless_reply(Turn::text("A short title"))
}

#[tokio::test]
async fn api_critic_refines_until_it_passes_and_records_its_results() {
    let env = Env::start(script).await;
    let (url, seen) = critic_service().await;
    let mut body = env.start_body(json!({}));
    body["agent"] = env.agent(&["terminal"]);
    body["agent"]["critic"] = json!({"kind": "APIBasedCritic", "server_url": url,
        "api_key": "critic-key-3141", "model_name": "critic",
        "iterative_refinement": {"success_threshold": 0.6, "max_iterations": 3}});
    let (s, info) = env.call("POST", "/api/conversations", Some(body)).await;
    assert_eq!(s, 201, "{info}");
    assert!(!info.to_string().contains("critic-key-3141"), "{info}");
    let id = info["id"].as_str().unwrap().to_string();
    env.send(&id, "Fix the failing test.", true).await;
    env.wait_status(&id, &["finished"]).await;

    let events = env.events(&id).await;
    let finishes: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "ActionEvent" && e["tool_name"] == "finish")
        .collect();
    assert_eq!(finishes.len(), 2, "one refinement, then the critic passed");
    let first = &finishes[0]["critic_result"];
    assert_eq!(first["score"], 0.2);
    assert!(
        first["message"]
            .as_str()
            .unwrap()
            .starts_with("Success: 0.20; {"),
        "{first}"
    );
    assert!(first["metadata"]["event_ids"].as_array().unwrap().len() >= 2);
    assert!(first["metadata"]["categorized_features"]["sentiment"].is_object());
    assert_eq!(finishes[1]["critic_result"]["score"], 0.9);
    let followups: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "MessageEvent" && e["source"] == "user")
        .collect();
    assert_eq!(followups.len(), 2);
    assert!(
        followups[1]["llm_message"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with(
                "The task appears incomplete (iteration 1, predicted success likelihood: 20.0%)."
            )
    );
    let (_, state) = env.get(&format!("/api/conversations/{id}")).await;
    assert!(!state.to_string().contains("critic-key-3141"));

    // The service saw the rendered conversation with the bearer key.
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].0, "Bearer critic-key-3141");
    assert_eq!(requests[0].1["model"], "critic");
    let input = requests[0].1["input"].as_str().unwrap();
    assert!(input.starts_with("<|im_start|>system\n"), "{input}");
    assert!(input.contains("<tools>") && input.contains("Fix the failing test."));

    // The key never reaches the disk in clear.
    let dir = env.conversations_dir().join(id.replace('-', ""));
    let state = std::fs::read_to_string(dir.join("base_state.json")).unwrap();
    assert!(!state.contains("critic-key-3141"));
    env.stop().await;
}

#[tokio::test]
async fn unknown_critics_and_bad_refinement_are_refused_naming_the_field() {
    let env = Env::start(script).await;
    for (critic, field) in [
        (json!({"kind": "MadeUpCritic"}), "kind"),
        (
            json!({"kind": "PassCritic", "iterative_refinement": {"max_iterations": 0}}),
            "max_iterations",
        ),
    ] {
        let mut body = env.start_body(json!({}));
        body["agent"] = env.agent(&["terminal"]);
        body["agent"]["critic"] = critic;
        let (s, err) = env.call("POST", "/api/conversations", Some(body)).await;
        assert_eq!(s, 422, "{err}");
        let loc = err["detail"][0]["loc"].to_string();
        assert!(loc.contains("critic") && loc.contains(field), "{err}");
    }
    env.stop().await;
}
