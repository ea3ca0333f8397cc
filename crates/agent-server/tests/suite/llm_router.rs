//! LLM routing and switching through the server: a start request whose LLM
//! is the reference's `MultimodalRouter` JSON is accepted, kept as sent,
//! and routes image turns to its vision member; the agent calling
//! `switch_llm` moves to a profile stored on the server; HTTP
//! `switch_profile` takes the same path.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use openhands_testkit::{MockLlmServer, Script, Turn};
use serde_json::{Value, json};

fn finish(text: &str) -> Turn {
    Turn::tool_call("finish", json!({"message": text}))
}

fn user_texts(body: &Value) -> String {
    body["messages"].to_string()
}

/// The agent's calls a mock received (title requests offer no tools).
fn agent_calls(mock: &openhands_testkit::MockLlmHandle) -> Vec<Value> {
    mock.completion_requests()
        .into_iter()
        .map(|r| r.body)
        .filter(|b| b["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .collect()
}

#[tokio::test]
async fn a_router_llm_is_accepted_kept_and_routes_images_to_the_vision_model() {
    let env = Env::start(|_| Script::from_turns(vec![]).with_toolless_reply(Turn::text("T"))).await;
    let vision = MockLlmServer::start(
        // Turns are chosen by the assistant turns in the history: the
        // vision model answers the second exchange.
        Script::from_turns(vec![Turn::text("unused"), finish("a red square")])
            .with_toolless_reply(Turn::text("T")),
        0,
    )
    .await
    .unwrap();
    let text = MockLlmServer::start(
        Script::from_turns(vec![finish("hello back")]).with_toolless_reply(Turn::text("T")),
        0,
    )
    .await
    .unwrap();
    let member = |model: &str, usage: &str, url: String| json!({"model": model, "usage_id": usage, "base_url": url, "api_key": "k", "num_retries": 0});
    let router = json!({
        "model": "router", "usage_id": "agent", "router_name": "multimodal_router",
        "llms_for_routing": {
            "primary": member("openai/gpt-4o", "vision", vision.base_url()),
            "secondary": member("openai/gpt-4o-mini", "text", text.base_url())
        },
        "active_llm": null
    });
    let mut agent = env.agent(&[]);
    agent["llm"] = router;
    let info = env.create(json!({"agent": agent})).await;
    let id = info["id"].as_str().unwrap().to_string();
    // Kept as sent, member keys protected like the agent's own.
    let llm = &info["agent"]["llm"];
    assert_eq!(llm["router_name"], "multimodal_router");
    assert_eq!(llm["llms_for_routing"]["primary"]["model"], "openai/gpt-4o");
    assert_ne!(llm["llms_for_routing"]["primary"]["api_key"], "k");

    env.send(&id, "just text", true).await;
    env.wait_finished_and_settled(&id).await;
    let text_calls = agent_calls(&text);
    assert_eq!(text_calls.len(), 1);
    assert!(user_texts(&text_calls[0]).contains("just text"));
    assert!(agent_calls(&vision).is_empty());

    let (status, body) = env
        .post(
            &format!("/api/conversations/{id}/events"),
            json!({"role": "user", "run": true, "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image", "image_urls": ["data:image/png;base64,iVBORw0KGgo="]}
            ]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    env.wait_finished_and_settled(&id).await;
    let vision_calls = agent_calls(&vision);
    assert_eq!(
        vision_calls.len(),
        1,
        "the image turn went to the vision model"
    );
    assert!(user_texts(&vision_calls[0]).contains("image"));
    assert_eq!(agent_calls(&text).len(), 1);

    let (_, state) = env.get(&format!("/api/conversations/{id}")).await;
    let usage = &state["stats"]["usage_to_metrics"];
    assert!(usage.get("vision").is_some(), "{usage}");
    assert!(usage.get("text").is_some(), "{usage}");
    env.stop().await;
}

#[tokio::test]
async fn a_router_with_an_unknown_strategy_is_refused() {
    let env = Env::start(|_| Script::from_turns(vec![])).await;
    let mut agent = env.agent(&[]);
    agent["llm"] = json!({"model": "router", "router_name": "base_router",
        "llms_for_routing": {"a": {"model": "openai/x"}}});
    let (status, body) = env
        .post(
            "/api/conversations",
            env.start_body(json!({"agent": agent})),
        )
        .await;
    assert!(status == 422 || status == 400, "{status} {body}");
    assert!(body.to_string().contains("router_name"), "{body}");
    env.stop().await;
}

#[tokio::test]
async fn the_agent_switches_to_a_server_profile_with_switch_llm() {
    let env = Env::start(|_| {
        Script::from_turns(vec![Turn::tool_call(
            "switch_llm",
            json!({"profile_name": "strong", "reason": "harder task"}),
        )])
        .with_toolless_reply(Turn::text("T"))
    })
    .await;
    let strong = MockLlmServer::start(
        // Position 0 is the switch_llm turn the first model answered.
        Script::from_turns(vec![Turn::text("unused"), finish("done by strong")])
            .with_toolless_reply(Turn::text("T")),
        0,
    )
    .await
    .unwrap();
    let profile = json!({"model": "openai/strong-model", "base_url": strong.base_url(), "api_key": "k", "num_retries": 0});
    let (status, body) = env
        .post(
            "/api/profiles/strong",
            json!({"llm": profile, "include_secrets": true}),
        )
        .await;
    assert!(status == 200 || status == 201, "{status} {body}");

    let info = env
        .create(json!({"agent": env.agent(&["switch_llm"])}))
        .await;
    let id = info["id"].as_str().unwrap().to_string();
    env.send(&id, "Please fix it.", true).await;
    env.wait_finished_and_settled(&id).await;
    let events = env.events(&id).await;
    let obs = events
        .iter()
        .find(|e| e["kind"] == "ObservationEvent" && e["tool_name"] == "switch_llm")
        .expect("the switch_llm observation");
    assert_eq!(obs["observation"]["kind"], "SwitchLLMObservation");
    assert_eq!(obs["observation"]["active_model"], "openai/strong-model");
    assert_eq!(agent_calls(&strong).len(), 1);
    let finish = events
        .iter()
        .find(|e| e["kind"] == "ActionEvent" && e["tool_name"] == "finish")
        .unwrap();
    assert_eq!(finish["action"]["message"], "done by strong");
    let (_, state) = env.get(&format!("/api/conversations/{id}")).await;
    assert_eq!(state["agent"]["llm"]["usage_id"], "profile:strong");
    assert!(
        state["stats"]["usage_to_metrics"]
            .get("profile:strong")
            .is_some()
    );

    // HTTP switch_profile: unknown names are a 404, known ones switch.
    let (status, _) = env
        .post(
            &format!("/api/conversations/{id}/switch_profile"),
            json!({"profile_name": "ghost"}),
        )
        .await;
    assert_eq!(status, 404);
    env.stop().await;
}

#[tokio::test]
async fn agent_settings_routing_classifies_and_continues_on_the_chosen_profile() {
    let env = Env::start(|_| {
        Script::from_turns(vec![Turn::tool_call("route_task_to_model", json!({}))])
            .with_toolless_reply(Turn::text("T"))
    })
    .await;
    let judge = MockLlmServer::start(Script::from_turns(vec![Turn::text("2")]), 0)
        .await
        .unwrap();
    let brain = MockLlmServer::start(
        // Position 0 is the routing turn the first model answered.
        Script::from_turns(vec![Turn::text("unused"), finish("done by brain")])
            .with_toolless_reply(Turn::text("T")),
        0,
    )
    .await
    .unwrap();
    for (name, model, url) in [
        ("judge", "openai/judge-model", judge.base_url()),
        ("brain", "openai/brain-model", brain.base_url()),
    ] {
        let llm = json!({"model": model, "base_url": url, "api_key": "k", "num_retries": 0});
        let (status, body) = env
            .post(
                &format!("/api/profiles/{name}"),
                json!({"llm": llm, "include_secrets": true}),
            )
            .await;
        assert!(status == 200 || status == 201, "{status} {body}");
    }
    let (status, body) = env
        .post(
            "/api/meta-profiles/route",
            json!({"classifier_model": "judge", "classes": [
                {"description": "front-end and image work", "model": "judge"},
                {"description": "algorithms and performance", "model": "brain"}
            ]}),
        )
        .await;
    assert_eq!(status, 201, "{body}");

    let settings = |extra: Value| {
        let mut s = json!({
            "llm": {"model": "openai/mock-model", "base_url": env.mock.base_url(), "api_key": "k", "num_retries": 0},
            "tools": [],
            "enable_classify_and_switch_llm_tool": true
        });
        for (k, v) in extra.as_object().unwrap() {
            s[k] = v.clone();
        }
        json!({
            "agent_settings": s,
            "workspace": {"working_dir": env.workspace().to_string_lossy()},
        })
    };
    // Invalid routing settings are a 422 naming the field.
    let (status, body) = env
        .post(
            "/api/conversations",
            settings(json!({"meta_profile": {"classifier_model": "judge", "prompt_template": "no slot"}})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["detail"][0]["loc"],
        json!(["body", "agent_settings", "meta_profile"])
    );

    let (status, info) = env
        .post(
            "/api/conversations",
            settings(json!({"active_meta_profile": "route"})),
        )
        .await;
    assert_eq!(status, 201, "{info}");
    let id = info["id"].as_str().unwrap().to_string();
    let route = info["agent"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "ClassifyAndSwitchLLMTool")
        .expect("the routing tool is configured");
    assert_eq!(route["params"]["active_meta_profile"], "route");

    env.send(&id, "Speed up the path search.", true).await;
    env.wait_finished_and_settled(&id).await;
    let asked = judge.completion_requests();
    assert_eq!(asked.len(), 1);
    assert!(user_texts(&asked[0].body).contains("Speed up the path search."));
    let events = env.events(&id).await;
    let obs = events
        .iter()
        .find(|e| e["kind"] == "ObservationEvent" && e["tool_name"] == "route_task_to_model")
        .expect("the routing observation");
    assert_eq!(
        obs["observation"]["kind"],
        "ClassifyAndSwitchLLMObservation"
    );
    assert_eq!(obs["observation"]["is_error"], false, "{obs}");
    assert_eq!(obs["observation"]["model"], "brain");
    assert_eq!(
        obs["observation"]["chosen_class"],
        "algorithms and performance"
    );
    assert_eq!(obs["observation"]["active_model"], "openai/brain-model");
    let calls = agent_calls(&brain);
    assert_eq!(calls.len(), 1, "the next agent call went to brain");
    assert_eq!(calls[0]["model"], "brain-model");
    let (_, state) = env.get(&format!("/api/conversations/{id}")).await;
    assert_eq!(state["agent"]["llm"]["usage_id"], "profile:brain");
    let usage = &state["stats"]["usage_to_metrics"];
    assert!(usage.get("classifier:judge").is_some(), "{usage}");
    env.stop().await;
}
