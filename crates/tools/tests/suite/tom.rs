//! The Theory-of-Mind tools in a conversation: the agent's model is the
//! scripted LLM, the model the tools consult a mock LLM server named in the
//! tool spec (`llm_model`, `api_key`, `api_base`), and the user's files live
//! in a temporary `persistence_dir`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;
use openhands_sdk::ConversationOptions;
use openhands_testkit::{MockLlmHandle, MockLlmServer, Script, Turn};
use openhands_tools::presets::default_registry;
use openhands_wire::state::ExecutionStatus;
use openhands_wire::tool::ToolSpec;
use serde_json::{Map, Value, json};
use std::path::Path;
use support::{observations, start_with};

fn tom_spec(name: &str, server: &MockLlmHandle, base: &Path, rag: bool) -> ToolSpec {
    let params = json!({
        "enable_rag": rag,
        "llm_model": "openai/gpt-4o",
        "api_key": "sk-tom",
        "api_base": server.base_url(),
        "persistence_dir": base,
    });
    ToolSpec {
        name: name.into(),
        params: params.as_object().cloned().unwrap(),
    }
}

/// Everything the consulted model was sent, as one text.
fn sent_text(server: &MockLlmHandle) -> Vec<String> {
    server
        .completion_requests()
        .iter()
        .map(|r| r.body["messages"].to_string())
        .collect()
}

fn write(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_vec(value).unwrap()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tom_consult_answers_from_the_profile_related_sessions_and_the_conversation() {
    let answer = json!({"suggestions": "Start with the failing pytest fixture; they want a minimal fix.",
        "confidence": 0.8, "reasoning": "Earlier sessions were about flaky fixtures."});
    let tom = MockLlmServer::start(Script::from_turns(vec![Turn::text(answer.to_string())]), 0)
        .await
        .unwrap();
    let base = tempfile::tempdir().unwrap();
    let um = base.path().join("usermodeling");
    write(
        &um.join("overall_user_model.json"),
        &json!({"user_profile": {"user_id": "", "overall_description": ["Python developer"],
            "preference_summary": ["prefers minimal diffs"]}, "session_summaries": [], "last_updated": ""}),
    );
    for (id, text) in [
        ("s-fixture", "the pytest fixture in conftest is flaky again"),
        ("s-css", "restyle the navbar with flexbox"),
    ] {
        write(
            &um.join("cleaned_sessions").join(format!("{id}.json")),
            &json!({"session_id": id, "conversation_messages": [{"role": "user", "content": text}]}),
        );
    }
    let script = Script::from_turns(vec![
        Turn::tool_call("tom_consult", json!({"reason": "The request is vague."})),
        Turn::tool_call("finish", json!({"message": "ok"})),
    ]);
    let s = start_with(
        script,
        vec![tom_spec("tom_consult", &tom, base.path(), true)],
        default_registry(),
        None,
        |_| {},
        ConversationOptions::default(),
    );
    let c = &s.conversation;
    c.send_message("debug that pytest thing").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);

    let sent = sent_text(&tom);
    assert_eq!(sent.len(), 1);
    for expected in [
        "prefers minimal diffs",
        "the pytest fixture in conftest is flaky again",
        "debug that pytest thing",
        "The request is vague.",
    ] {
        assert!(
            sent[0].contains(expected),
            "{expected} missing: {}",
            sent[0]
        );
    }
    // The unrelated session is not retrieved.
    assert!(!sent[0].contains("navbar"), "{}", sent[0]);
    assert_eq!(tom.completion_requests()[0].body["model"], "gpt-4o");

    let obs = observations(c);
    assert_eq!(obs[0].0, "tom_consult");
    let o = &obs[0].1;
    assert_eq!(o["kind"], "ConsultTomObservation");
    assert_eq!(o["is_error"], false);
    assert_eq!(o["confidence"], 0.8);
    assert_eq!(
        o["suggestions"],
        "Start with the failing pytest fixture; they want a minimal fix."
    );
    let text = o["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("Confidence: 80%"), "{text}");
    assert!(c.stats().usage_to_metrics.get("tom").is_some());
    c.close().await;
    tom.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tom_consult_without_rag_takes_a_prose_answer_as_guidance() {
    // Prose instead of JSON is still guidance; without RAG no session is read.
    let tom = MockLlmServer::start(
        Script::from_turns(vec![Turn::text("Ask which bug they mean.")]),
        0,
    )
    .await
    .unwrap();
    let base = tempfile::tempdir().unwrap();
    write(
        &base.path().join("usermodeling/cleaned_sessions/s.json"),
        &json!({"session_id": "s", "conversation_messages": [{"role": "user", "content": "that bug in the parser"}]}),
    );
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "tom_consult",
            json!({"reason": "unclear", "use_user_message": false, "custom_query": "Which bug?"}),
        ),
        Turn::tool_call("finish", json!({"message": "ok"})),
    ]);
    let s = start_with(
        script,
        vec![tom_spec("tom_consult", &tom, base.path(), false)],
        default_registry(),
        None,
        |_| {},
        ConversationOptions::default(),
    );
    let c = &s.conversation;
    c.send_message("fix that bug").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let sent = sent_text(&tom);
    assert!(
        sent[0].contains("Which bug?") && !sent[0].contains("parser"),
        "{}",
        sent[0]
    );
    let obs = observations(c);
    assert_eq!(obs[0].1["suggestions"], "Ask which bug they mean.");
    assert!(obs[0].1["confidence"].is_null());
    c.close().await;
    tom.shutdown().await;
}

/// A consulted model that answers nothing (empty text, or JSON whose
/// suggestions are blank) gives the agent an error observation, not empty
/// guidance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tom_consult_reports_an_empty_answer_as_an_error() {
    let tom = MockLlmServer::start(
        Script::from_turns(vec![
            Turn::text(""),
            Turn::text(json!({"suggestions": "  ", "confidence": 0.9}).to_string()),
        ]),
        0,
    )
    .await
    .unwrap();
    let base = tempfile::tempdir().unwrap();
    let script = Script::from_turns(vec![
        Turn::tool_call("tom_consult", json!({"reason": "unclear"})),
        Turn::tool_call("tom_consult", json!({"reason": "still unclear"})),
        Turn::tool_call("finish", json!({"message": "ok"})),
    ]);
    let s = start_with(
        script,
        vec![tom_spec("tom_consult", &tom, base.path(), false)],
        default_registry(),
        None,
        |_| {},
        ConversationOptions::default(),
    );
    let c = &s.conversation;
    c.send_message("fix it").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    assert_eq!(tom.completion_requests().len(), 2);
    let obs: Vec<(String, Value)> = observations(c)
        .into_iter()
        .filter(|(name, _)| name == "tom_consult")
        .collect();
    assert_eq!(obs.len(), 2, "{obs:?}");
    for (_, o) in &obs {
        assert_eq!(o["is_error"], true, "{o}");
        assert_eq!(o["suggestions"], "", "{o}");
        let text = o["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("the model gave no suggestions"), "{text}");
    }
    c.close().await;
    tom.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sleeptime_compute_indexes_new_conversations_once_into_the_profile() {
    // An earlier conversation of the user, stored as the SDK stores it.
    let earlier = start_with(
        Script::from_turns(vec![Turn::tool_call(
            "finish",
            json!({"message": "Fixed with a one-line change."}),
        )]),
        Vec::new(),
        default_registry(),
        None,
        |_| {},
        ConversationOptions::default(),
    );
    earlier
        .conversation
        .send_message("keep diffs tiny please, fix the parser")
        .unwrap();
    earlier.conversation.run().await.unwrap();
    earlier.conversation.close().await;
    let base = tempfile::tempdir().unwrap();
    let conversations = base.path().join("conversations");
    let mut ids = Vec::new();
    for entry in std::fs::read_dir(earlier.root.path()).unwrap() {
        let entry = entry.unwrap();
        let to = conversations.join(entry.file_name());
        std::fs::create_dir_all(to.join("events")).unwrap();
        for f in std::fs::read_dir(entry.path().join("events")).unwrap() {
            let f = f.unwrap();
            std::fs::copy(f.path(), to.join("events").join(f.file_name())).unwrap();
        }
        ids.push(entry.file_name().to_string_lossy().into_owned());
    }
    assert_eq!(ids.len(), 1);
    let id = &ids[0];

    let profile = json!({"overall_description": ["Works on a parser"],
        "preference_summary": ["Wants tiny diffs"],
        "sessions": [{"session_id": id, "session_tldr": "Parser fix, one line."}]});
    let tom = MockLlmServer::start(
        Script::from_turns(vec![Turn::text(format!("```json\n{profile}\n```"))]),
        0,
    )
    .await
    .unwrap();
    let s = start_with(
        Script::from_turns(Vec::new()),
        vec![tom_spec("sleeptime_compute", &tom, base.path(), true)],
        default_registry(),
        None,
        |_| {},
        ConversationOptions::default(),
    );
    let c = &s.conversation;
    let obs = c
        .execute_tool("sleeptime_compute", json!({}))
        .await
        .unwrap();
    assert_eq!(obs["kind"], "SleeptimeComputeObservation");
    assert_eq!(obs["sessions_processed"], 1, "{obs}");
    let sent = sent_text(&tom);
    assert!(sent[0].contains("keep diffs tiny please"), "{}", sent[0]);
    assert!(
        sent[0].contains("Fixed with a one-line change."),
        "{}",
        sent[0]
    );

    let um = base.path().join("usermodeling");
    let model: Value =
        serde_json::from_slice(&std::fs::read(um.join("overall_user_model.json")).unwrap())
            .unwrap();
    assert_eq!(
        model["user_profile"]["preference_summary"],
        json!(["Wants tiny diffs"])
    );
    assert_eq!(model["session_summaries"][0]["session_id"], id.as_str());
    let cleaned: Value = serde_json::from_slice(
        &std::fs::read(um.join("cleaned_sessions").join(format!("{id}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(cleaned["conversation_messages"][0]["role"], "user");
    let history: Map<String, Value> = serde_json::from_slice(
        &std::fs::read(um.join("processed_sessions_timestamps.json")).unwrap(),
    )
    .unwrap();
    assert!(history[id.as_str()]["last_event_count"].as_u64().unwrap() > 0);

    // Nothing new: no second model call.
    let again = c
        .execute_tool("sleeptime_compute", json!({}))
        .await
        .unwrap();
    assert_eq!(again["sessions_processed"], 0);
    assert_eq!(again["message"], "All conversations already indexed");
    assert_eq!(tom.completion_requests().len(), 1);
    c.close().await;
    tom.shutdown().await;
}

#[test]
fn tom_tools_refuse_parameters_they_cannot_honour() {
    let env = openhands_sdk::tool::ToolEnv::new(std::env::temp_dir());
    let registry = default_registry();
    for name in ["tom_consult", "sleeptime_compute"] {
        assert!(registry.resolve(name, &Map::new(), &env).is_ok());
        let params = json!({"api_base": "http://localhost:1"});
        let Err(e) = registry.resolve(name, params.as_object().unwrap(), &env) else {
            panic!("api_base without llm_model accepted");
        };
        assert!(e.to_string().contains("api_base"), "{e}");
    }
}
