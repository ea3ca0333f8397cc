//! Tools that consult a second model from a saved profile: `ask_oracle`
//! (profile `oracle`) and `inspect_image_with_vision` (a profile whose model
//! takes images). The agent's model is the in-process scripted LLM; each
//! profile points at a mock LLM server, so the exact requests they send are
//! checked.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_sdk::ConversationOptions;
use openhands_sdk::profiles::LlmProfileStore;
use openhands_testkit::scripted_llm::view_of;
use openhands_testkit::{MockLlmHandle, MockLlmServer, Script, Turn};
use openhands_tools::presets::default_registry;
use openhands_wire::LlmConfig;
use openhands_wire::content::{Content, ImageContent};
use openhands_wire::event::EventBody;
use openhands_wire::message::{Message, Role};
use openhands_wire::state::ExecutionStatus;
use openhands_wire::tool::ToolSpec;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

const IMAGE: &str = "data:image/png;base64,iVBORw0KGgo=";

use crate::support;

use support::{Setup, observations, start_with};

/// A conversation whose agent (scripted, `disable_vision` as given) has
/// `tools`, with saved profiles in `profiles`.
fn start(script: Script, tools: Vec<ToolSpec>, no_vision: bool, profiles: &Path) -> Setup {
    let options = ConversationOptions {
        llms: openhands_sdk::conversation::LlmOptions {
            profiles: Some(Arc::new(LlmProfileStore::new(profiles, None))),
            ..Default::default()
        },
        ..ConversationOptions::default()
    };
    start_with(
        script,
        tools,
        default_registry(),
        None,
        |c| c.disable_vision = Some(no_vision),
        options,
    )
}

/// Saves profile `name` for `model` answered by `server`.
fn save_profile(dir: &Path, name: &str, model: &str, server: &MockLlmHandle) {
    let mut config = LlmConfig::new(model);
    config.base_url = Some(server.base_url());
    config.api_key = Some("sk-test".into());
    config.input_cost_per_token = Some(0.001);
    config.output_cost_per_token = Some(0.002);
    LlmProfileStore::new(dir, None)
        .save(name, &config, true)
        .unwrap();
}

/// The text of an OpenAI chat message's `content` (string or parts).
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_oracle_sends_only_the_question_to_the_oracle_profile_and_counts_its_cost() {
    let oracle = MockLlmServer::start(
        Script::from_turns(vec![Turn::text("  Take approach B; A breaks the cache.  ")]),
        0,
    )
    .await
    .unwrap();
    let profiles = tempfile::tempdir().unwrap();
    save_profile(profiles.path(), "oracle", "openai/gpt-4o", &oracle);
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "ask_oracle",
            json!({"question": "A or B?", "context": "A is faster", "summary": "ask"}),
        ),
        Turn::tool_call("finish", json!({"message": "going with B"})),
    ]);
    let s = start(
        script,
        vec![ToolSpec::named("ask_oracle")],
        false,
        profiles.path(),
    );
    let c = &s.conversation;
    c.send_message("pick one").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);

    // The oracle got exactly a system prompt and the question: no history,
    // no tools.
    let requests = oracle.completion_requests();
    assert_eq!(requests.len(), 1);
    let body = &requests[0].body;
    assert_eq!(body["model"], "gpt-4o");
    assert!(body.get("tools").is_none(), "{body}");
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{body}");
    assert_eq!(messages[0]["role"], "system");
    assert!(text_of(&messages[0]["content"]).contains("no tools"));
    assert_eq!(messages[1]["role"], "user");
    assert_eq!(
        text_of(&messages[1]["content"]),
        "Question:\nA or B?\n\nWhat the agent adds as context:\nA is faster\n"
    );
    assert!(!text_of(&messages[1]["content"]).contains("pick one"));

    let obs = observations(c);
    assert_eq!(obs[0].0, "ask_oracle");
    assert_eq!(obs[0].1["kind"], "AskOracleObservation");
    assert_eq!(obs[0].1["is_error"], false);
    assert_eq!(
        obs[0].1["content"][0]["text"],
        "Take approach B; A breaks the cache."
    );
    // The agent's next request shows it the answer.
    let second = view_of(&s.backend.requests()[1]);
    assert!(
        second
            .messages
            .iter()
            .any(|m| m.text.contains("Take approach B")),
        "{second:?}"
    );
    // The oracle's cost is in the conversation's statistics.
    let stats = c.stats();
    let m = stats.usage_to_metrics.get("oracle:oracle").expect("oracle");
    assert!(m.accumulated_cost > 0.0, "{m:?}");
    c.close().await;
    oracle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_oracle_without_an_oracle_profile_is_an_error_the_agent_sees() {
    let profiles = tempfile::tempdir().unwrap();
    let script = Script::from_turns(vec![
        Turn::tool_call("ask_oracle", json!({"question": "A or B?"})),
        Turn::tool_call("finish", json!({"message": "decided alone"})),
    ]);
    let s = start(
        script,
        vec![ToolSpec::named("ask_oracle")],
        false,
        profiles.path(),
    );
    let c = &s.conversation;
    c.send_message("pick one").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let obs = observations(c);
    assert_eq!(obs[0].1["is_error"], true);
    let text = obs[0].1["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("no saved LLM profile named 'oracle'"),
        "{text}"
    );
    c.close().await;
}

fn message_with_image(text: &str) -> Message {
    Message::new(
        Role::User,
        vec![
            Content::text(text),
            Content::Image(ImageContent::new(vec![IMAGE.to_string()])),
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_without_vision_sees_image_references_and_asks_the_vision_profile() {
    let eyes = MockLlmServer::start(
        Script::from_turns(vec![Turn::text("A red square on white.")]),
        0,
    )
    .await
    .unwrap();
    let profiles = tempfile::tempdir().unwrap();
    save_profile(profiles.path(), "eyes", "openai/gpt-4o", &eyes);
    // A profile whose model is not known to take images is not offered.
    save_profile(profiles.path(), "blind", "openai/scripted", &eyes);
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "inspect_image_with_vision",
            json!({"image_index": 0, "question": "What shape is it?"}),
        ),
        Turn::tool_call("finish", json!({"message": "a red square"})),
    ]);
    let s = start(script, Vec::new(), true, profiles.path());
    let c = &s.conversation;
    c.send(message_with_image("what is this?")).unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);

    // The agent's model got a text reference instead of the image, and the
    // tool, whose description lists only the vision profile.
    let first = &s.backend.requests()[0];
    let user = first
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .unwrap();
    assert!(
        user.content.iter().all(|p| matches!(p, Content::Text(_))),
        "{user:?}"
    );
    assert!(
        user.text()
            .contains("inspect_image_with_vision with image_index=0"),
        "{user:?}"
    );
    let tool = first
        .tools
        .iter()
        .find(|t| t.name == "inspect_image_with_vision")
        .expect("the vision tool is offered");
    assert!(tool.description.contains("- eyes"));
    assert!(!tool.description.contains("blind"));

    // The vision profile got the question and the image.
    let requests = eyes.completion_requests();
    assert_eq!(requests.len(), 1);
    let messages = requests[0].body["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["role"], "system");
    let parts = messages[1]["content"].as_array().unwrap();
    assert_eq!(parts[0]["text"], "What shape is it?");
    assert_eq!(parts[1]["image_url"]["url"], IMAGE);

    let obs = observations(c);
    let o = &obs[0].1;
    assert_eq!(o["kind"], "VisionInspectObservation");
    assert_eq!(o["is_error"], false);
    assert_eq!(o["answer"], "A red square on white.");
    assert_eq!(o["profile_name"], "eyes");
    assert_eq!(o["model"], "openai/gpt-4o");
    assert_eq!(o["image_index"], 0);
    assert!(
        c.stats()
            .usage_to_metrics
            .get("vision-profile:eyes")
            .is_some()
    );
    c.close().await;
    eyes.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_for_a_model_without_vision_and_no_profile_ends_the_run_with_a_reply() {
    let profiles = tempfile::tempdir().unwrap();
    let script = Script::from_turns(vec![Turn::text("never asked")]);
    let s = start(script, Vec::new(), true, profiles.path());
    let c = &s.conversation;
    c.send(message_with_image("what is this?")).unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    assert_eq!(s.backend.request_count(), 0, "the model is not asked");
    let reply = c
        .events()
        .into_iter()
        .rev()
        .find_map(|e| match e.body {
            EventBody::Message(m) if m.llm_message.role == Role::Assistant => {
                Some(m.llm_message.text())
            }
            _ => None,
        })
        .unwrap();
    assert!(reply.contains("cannot read images"), "{reply}");
    c.close().await;
}
