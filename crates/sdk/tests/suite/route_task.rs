//! The `route_task_to_model` tool with scripted LLMs: the meta-profile's
//! classifier (a saved or inline profile) reads the recent conversation,
//! its answer picks a profile, and the conversation's next LLM call goes to
//! that profile's model; an answer naming nothing is an error observation
//! and the current model carries on.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use openhands_sdk::profiles::LlmProfileStore;
use openhands_sdk::profiles::meta_dir::MetaProfileDir;
use openhands_sdk::{Agent, ConversationOptions, LocalConversation};
use openhands_testkit::{MockLlmHandle, MockLlmServer, Script, Turn};
use openhands_wire::LlmConfig;
use openhands_wire::event::EventBody;
use openhands_wire::state::ExecutionStatus;
use openhands_wire::tool::ToolSpec;
use serde_json::{Map, Value, json};
use std::sync::Arc;

async fn server(turns: Vec<Turn>) -> MockLlmHandle {
    MockLlmServer::start(Script::from_turns(turns), 0)
        .await
        .unwrap()
}

fn profile(model: &str, server: &MockLlmHandle) -> LlmConfig {
    let mut c = LlmConfig::new(model);
    c.base_url = Some(server.base_url());
    c.api_key = Some(openhands_wire::secret::SecretString::new("sk-test"));
    c.num_retries = 0;
    c
}

/// A conversation whose first model calls the routing tool (spec params
/// `params`), then would finish itself.
fn conversation(
    params: Value,
    options: ConversationOptions,
) -> (
    LocalConversation,
    Arc<openhands_testkit::ScriptedLlm>,
    tempfile::TempDir,
) {
    let (agent, first) = agent_turns(vec![
        Turn::tool_call("route_task_to_model", json!({})),
        finish("done by the first model"),
    ]);
    let mut spec = agent.spec().clone();
    let mut tool = ToolSpec::named("ClassifyAndSwitchLLMTool");
    tool.params = params.as_object().cloned().unwrap_or_else(Map::new);
    spec.tools.push(tool);
    let agent = Agent::with_llm(spec, agent.llm().clone(), registry());
    let workspace = tempfile::tempdir().unwrap();
    let conv = LocalConversation::new(agent, workspace.path(), options).unwrap();
    (conv, first, workspace)
}

fn observation(conv: &LocalConversation) -> Value {
    conv.events()
        .iter()
        .find_map(|e| match &e.body {
            EventBody::Observation(o) if o.tool_name == "route_task_to_model" => {
                Some(o.observation.clone())
            }
            _ => None,
        })
        .expect("the tool answered")
}

fn request_text(body: &Value) -> String {
    body["messages"].to_string()
}

#[tokio::test]
async fn the_classifiers_class_moves_the_conversation_to_that_profiles_model() {
    let judge = server(vec![Turn::text("2")]).await;
    let brain = server(vec![
        Turn::text("unused"),
        Turn::tool_call("finish", json!({"message": "done by brain"})),
    ])
    .await;
    let profiles_dir = tempfile::tempdir().unwrap();
    let store = LlmProfileStore::new(profiles_dir.path(), None);
    store
        .save("judge", &profile("openai/judge-model", &judge), true)
        .unwrap();
    store
        .save("brain", &profile("openai/brain-model", &brain), true)
        .unwrap();
    let metas = tempfile::tempdir().unwrap();
    // Alphabetically first, but not the active one.
    std::fs::write(
        metas.path().join("a-other.json"),
        json!({"classifier_model": "nobody", "classes": [{"description": "x", "model": "y"}]})
            .to_string(),
    )
    .unwrap();
    std::fs::write(
        metas.path().join("route.json"),
        json!({"classifier_model": "judge", "classes": [
            {"description": "work on user interfaces or images", "model": "eyes"},
            {"description": "hard algorithmic problems", "model": "brain"}
        ]})
        .to_string(),
    )
    .unwrap();
    let root = tempfile::tempdir().unwrap();
    let options = ConversationOptions {
        llms: openhands_sdk::conversation::LlmOptions {
            profiles: Some(Arc::new(store)),
            meta_profiles: Some(Arc::new(MetaProfileDir::new(metas.path()))),
        },
        ..persisted(root.path())
    };
    let (conv, first, _ws) = conversation(json!({"active_meta_profile": "route"}), options);
    conv.send_message("make the shortest-path search faster")
        .unwrap();
    assert_eq!(conv.run().await.unwrap(), ExecutionStatus::Finished);

    // The classifier saw the categories and the conversation.
    let asked = judge.completion_requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].body["model"], "judge-model");
    let text = request_text(&asked[0].body);
    assert!(
        text.contains("1. work on user interfaces or images"),
        "{text}"
    );
    assert!(text.contains("2. hard algorithmic problems"), "{text}");
    assert!(
        text.contains("user: make the shortest-path search faster"),
        "{text}"
    );

    // The next agent call went to the chosen profile's model.
    assert_eq!(first.request_count(), 1);
    let next = brain.completion_requests();
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].body["model"], "brain-model");
    assert_eq!(conv.agent_final_response(), "done by brain");

    let obs = observation(&conv);
    assert_eq!(obs["kind"], "ClassifyAndSwitchLLMObservation");
    assert_eq!(obs["is_error"], false);
    assert_eq!(obs["chosen_class"], "hard algorithmic problems");
    assert_eq!(obs["model"], "brain");
    assert_eq!(obs["active_model"], "openai/brain-model");
    assert_eq!(conv.agent().llm().usage_id(), "profile:brain");
    let stats = conv.stats();
    for usage in ["classifier:judge", "profile:brain"] {
        assert_eq!(
            stats
                .usage_to_metrics
                .get(usage)
                .unwrap()
                .response_latencies
                .len(),
            1,
            "{usage} counted"
        );
    }
}

#[tokio::test]
async fn an_unusable_classifier_answer_is_an_error_and_the_model_stays() {
    let judge = server(vec![Turn::text("I am not sure")]).await;
    let profiles_dir = tempfile::tempdir().unwrap();
    let store = LlmProfileStore::new(profiles_dir.path(), None);
    store
        .save("judge", &profile("openai/judge-model", &judge), true)
        .unwrap();
    let meta = json!({"classifier_model": "judge", "classes": [
        {"description": "anything", "model": "brain"}
    ]});
    let options = ConversationOptions {
        llms: openhands_sdk::conversation::LlmOptions {
            profiles: Some(Arc::new(store)),
            // An empty store: the inline meta-profile is used.
            meta_profiles: Some(Arc::new(MetaProfileDir::new(
                profiles_dir.path().join("none"),
            ))),
        },
        ..ConversationOptions::default()
    };
    let (conv, first, _ws) = conversation(json!({"meta_profile": meta}), options);
    conv.send_message("go").unwrap();
    assert_eq!(conv.run().await.unwrap(), ExecutionStatus::Finished);
    assert_eq!(judge.completion_requests().len(), 1);
    assert_eq!(first.request_count(), 2, "the first model carried on");
    let obs = observation(&conv);
    assert_eq!(obs["is_error"], true);
    assert_eq!(obs["model"], Value::Null);
    assert_eq!(obs["chosen_class"], Value::Null);
    assert_eq!(
        obs["content"][0]["text"],
        "Classifier did not pick a valid category (reply: 'I am not sure'); refusing to \
         silently route to a default. Retry the tool or fix the meta-profile classes."
    );
    assert_eq!(conv.agent().llm().usage_id(), "agent");
    assert_eq!(conv.agent_final_response(), "done by the first model");
}

#[tokio::test]
async fn direct_routing_with_inline_llms_switches_to_the_named_one() {
    let judge = server(vec![Turn::text("```json\n{\"model\": \"FAST\"}\n```")]).await;
    let fast = server(vec![
        Turn::text("unused"),
        Turn::tool_call("finish", json!({"message": "done fast"})),
    ])
    .await;
    let params = json!({
        "meta_profile": {
            "classifier_model": "judge",
            "prompt_template": "Pick one of:\n{{ model_table }}\nfor:\n{{ instance_text }}",
            "model_table": "fast: quick edits"
        },
        "meta_profile_llms": {
            "judge": serde_json::to_value(profile("openai/judge-model", &judge)).unwrap(),
            "fast": serde_json::to_value(profile("openai/fast-model", &fast)).unwrap()
        }
    });
    let empty = tempfile::tempdir().unwrap();
    let options = ConversationOptions {
        llms: openhands_sdk::conversation::LlmOptions {
            profiles: Some(Arc::new(LlmProfileStore::new(empty.path(), None))),
            meta_profiles: Some(Arc::new(MetaProfileDir::new(empty.path()))),
        },
        ..ConversationOptions::default()
    };
    let (conv, _first, _ws) = conversation(params, options);
    conv.send_message("rename a variable").unwrap();
    assert_eq!(conv.run().await.unwrap(), ExecutionStatus::Finished);
    let text = request_text(&judge.completion_requests()[0].body);
    assert!(
        text.contains("Pick one of:\\nfast: quick edits\\nfor:\\nuser: rename a variable"),
        "{text}"
    );
    assert_eq!(fast.completion_requests()[0].body["model"], "fast-model");
    let obs = observation(&conv);
    assert_eq!(obs["chosen_class"], "model: fast");
    assert_eq!(obs["active_model"], "openai/fast-model");
    assert_eq!(conv.agent_final_response(), "done fast");
}
