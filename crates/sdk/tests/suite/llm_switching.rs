//! The conversation's LLMs (scripted fakes): a router LLM sends turns with
//! an image to its vision member and text turns to the other; the model
//! calling `switch_llm` moves the next request to a saved profile's model;
//! metrics are kept per usage id by the conversation's LLM registry.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use openhands_llm::{Llm, Router, RouterStrategy};
use openhands_sdk::profiles::LlmProfileStore;
use openhands_sdk::{Agent, ConversationOptions, LocalConversation};
use openhands_testkit::{MockLlmServer, Script, ScriptedLlm, Turn};
use openhands_wire::LlmConfig;
use openhands_wire::agent::AgentSpec;
use openhands_wire::content::{Content, ImageContent};
use openhands_wire::event::EventBody;
use openhands_wire::message::{Message, Role};
use openhands_wire::state::ExecutionStatus;
use openhands_wire::tool::ToolSpec;
use serde_json::{Value, json};
use std::sync::Arc;

fn member(model: &str, usage: &str, turns: Vec<Turn>) -> (Llm, Arc<ScriptedLlm>) {
    let mut c = LlmConfig::new(model);
    c.usage_id = usage.into();
    c.num_retries = 0;
    let fake = Arc::new(ScriptedLlm::new(Script::from_turns(turns)));
    (Llm::with_backend(c, fake.clone()), fake)
}

fn has_image(m: &Message) -> bool {
    m.content.iter().any(|c| matches!(c, Content::Image(_)))
}

#[tokio::test]
async fn the_router_sends_image_turns_to_the_vision_model_and_text_to_the_other() {
    // Turns are chosen by the number of assistant turns in the history:
    // the vision model first answers the second exchange.
    let (vision, vision_fake) = member(
        "openai/gpt-4o",
        "vision",
        vec![Turn::text("unused"), Turn::text("a red square")],
    );
    let (text, text_fake) = member("openai/gpt-4o-mini", "text", vec![Turn::text("hello back")]);
    let router_config: LlmConfig = serde_json::from_value(json!({
        "model": "router", "usage_id": "agent", "router_name": "multimodal_router",
        "llms_for_routing": {
            "primary": {"model": "openai/gpt-4o", "usage_id": "vision"},
            "secondary": {"model": "openai/gpt-4o-mini", "usage_id": "text"}
        },
        "active_llm": null
    }))
    .unwrap();
    let router = Router::new(
        RouterStrategy::Multimodal,
        vec![("primary".into(), vision), ("secondary".into(), text)],
    )
    .unwrap();
    let llm = Llm::router(router_config.clone(), router).unwrap();
    let spec = AgentSpec::new(router_config, vec![ToolSpec::named("echo")]);
    let agent = Agent::with_llm(spec, llm, registry());
    let workspace = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let conv = LocalConversation::new(agent, workspace.path(), persisted(root.path())).unwrap();

    conv.send_message("hi").unwrap();
    assert_eq!(conv.run().await.unwrap(), ExecutionStatus::Finished);
    assert_eq!(text_fake.request_count(), 1);
    assert_eq!(vision_fake.request_count(), 0);

    let mut with_image = Message::user("what is in this picture?");
    with_image
        .content
        .push(Content::Image(ImageContent::new(vec![
            "data:image/png;base64,iVBORw0KGgo=".into(),
        ])));
    conv.send(with_image).unwrap();
    assert_eq!(conv.run().await.unwrap(), ExecutionStatus::Finished);
    assert_eq!(
        text_fake.request_count(),
        1,
        "the text model got no image turn"
    );
    assert_eq!(vision_fake.request_count(), 1);
    let seen = &vision_fake.requests()[0].messages;
    let last_user = seen.iter().rev().find(|m| m.role == Role::User).unwrap();
    assert!(has_image(last_user), "the vision model received the image");
    assert!(!text_fake.requests()[0].messages.iter().any(has_image));

    // The members are registered by their usage ids, each with its call.
    let stats = conv.stats();
    assert_eq!(
        stats
            .usage_to_metrics
            .get("vision")
            .unwrap()
            .response_latencies
            .len(),
        1
    );
    assert_eq!(
        stats
            .usage_to_metrics
            .get("text")
            .unwrap()
            .response_latencies
            .len(),
        1
    );
    assert!(stats.usage_to_metrics.get("agent").is_none());
    // The router configuration is stored as sent (the reference's fields).
    let stored = conv.state_json();
    assert_eq!(stored["agent"]["llm"]["router_name"], "multimodal_router");
    assert_eq!(
        stored["agent"]["llm"]["llms_for_routing"]["primary"]["model"],
        "openai/gpt-4o"
    );
}

#[tokio::test]
async fn switch_llm_moves_the_next_request_to_the_profiles_model() {
    let strong = MockLlmServer::start(
        // Position 0 is the switch_llm turn the first model answered.
        Script::from_turns([
            Turn::text("unused"),
            Turn::tool_call("finish", json!({"message": "done by strong"})),
        ]),
        0,
    )
    .await
    .unwrap();
    let profiles_dir = tempfile::tempdir().unwrap();
    let store = LlmProfileStore::new(profiles_dir.path(), None);
    let mut profile = LlmConfig::new("openai/strong-model");
    profile.base_url = Some(strong.base_url());
    profile.api_key = Some(openhands_wire::secret::SecretString::new("sk-strong"));
    profile.num_retries = 0;
    store.save("strong", &profile, true).unwrap();

    let (agent, first) = agent_turns(vec![
        Turn::tool_call(
            "switch_llm",
            json!({"profile_name": "strong", "reason": "needs a stronger model"}),
        ),
        // Never used: the switch sends the next request elsewhere.
        finish("done by first"),
    ]);
    let mut spec = agent.spec().clone();
    spec.include_default_tools.push("SwitchLLMTool".into());
    let agent = Agent::with_llm(spec, agent.llm().clone(), registry());
    let workspace = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let options = ConversationOptions {
        llms: openhands_sdk::conversation::LlmOptions {
            profiles: Some(Arc::new(store)),
            ..Default::default()
        },
        ..persisted(root.path())
    };
    let conv = LocalConversation::new(agent, workspace.path(), options).unwrap();
    conv.send_message("fix the hard bug").unwrap();
    assert_eq!(conv.run().await.unwrap(), ExecutionStatus::Finished);

    // The tool was offered with the saved profiles listed.
    let offered = &first.requests()[0].tools;
    let tool = offered.iter().find(|t| t.name == "switch_llm").unwrap();
    assert!(tool.description.contains("strong"));
    assert_eq!(first.request_count(), 1, "the first model answered once");
    let strong_requests = strong.completion_requests();
    assert_eq!(
        strong_requests.len(),
        1,
        "the next request went to the profile"
    );
    assert_eq!(strong_requests[0].body["model"], "strong-model");
    assert_eq!(conv.agent_final_response(), "done by strong");

    let events = conv.events();
    let obs = events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::Observation(o) if o.tool_name == "switch_llm" => Some(o.observation.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(obs["kind"], "SwitchLLMObservation");
    assert_eq!(obs["is_error"], false);
    assert_eq!(obs["profile_name"], "strong");
    assert_eq!(obs["reason"], "needs a stronger model");
    assert_eq!(obs["active_model"], "openai/strong-model");
    assert_eq!(conv.agent().llm().usage_id(), "profile:strong");
    assert_eq!(
        conv.state_json()["agent"]["llm"]["model"],
        "openai/strong-model"
    );

    // Metrics per usage id: the first model's call and the profile's call.
    let stats = conv.stats();
    assert_eq!(
        stats
            .usage_to_metrics
            .get("agent")
            .unwrap()
            .response_latencies
            .len(),
        1
    );
    assert_eq!(
        stats
            .usage_to_metrics
            .get("profile:strong")
            .unwrap()
            .response_latencies
            .len(),
        1
    );
    assert_eq!(
        conv.llm_registry().list_usage_ids(),
        ["agent", "profile:strong"]
    );
}

#[tokio::test]
async fn switching_to_a_missing_profile_is_an_error_observation() {
    let profiles_dir = tempfile::tempdir().unwrap();
    let (agent, first) = agent_turns(vec![
        Turn::tool_call(
            "switch_llm",
            json!({"profile_name": "ghost", "reason": "r"}),
        ),
        finish("stayed"),
    ]);
    let mut spec = agent.spec().clone();
    spec.tools.push(ToolSpec::named("switch_llm"));
    let agent = Agent::with_llm(spec, agent.llm().clone(), registry());
    let workspace = tempfile::tempdir().unwrap();
    let options = ConversationOptions {
        llms: openhands_sdk::conversation::LlmOptions {
            profiles: Some(Arc::new(LlmProfileStore::new(profiles_dir.path(), None))),
            ..Default::default()
        },
        ..ConversationOptions::default()
    };
    let conv = LocalConversation::new(agent, workspace.path(), options).unwrap();
    conv.send_message("go").unwrap();
    assert_eq!(conv.run().await.unwrap(), ExecutionStatus::Finished);
    assert_eq!(first.request_count(), 2, "the same model continued");
    let obs: Value = conv
        .events()
        .iter()
        .find_map(|e| match &e.body {
            EventBody::Observation(o) if o.tool_name == "switch_llm" => Some(o.observation.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(obs["is_error"], true);
    assert_eq!(obs["active_model"], Value::Null);
    assert_eq!(
        obs["content"][0]["text"],
        "LLM profile 'ghost' was not found."
    );
    assert_eq!(conv.agent().llm().usage_id(), "agent");
}
