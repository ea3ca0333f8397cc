//! End-to-end behaviour of local conversations with the scripted LLM.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use openhands_sdk::conversation::event_store::HEAD_INDEX_FILE;
use openhands_sdk::{ConversationOptions, LocalConversation};
use openhands_testkit::{Script, Turn, TurnError};
use openhands_wire::event::{EventBody, SourceType};
use openhands_wire::state::{ConfirmationPolicy, ExecutionStatus};
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn two_step_run_finishes_and_leaves_reference_layout() {
    let f = fixture(vec![echo("hi"), finish("done")], |_| {});
    let c = &f.conversation;
    c.send_message("please echo").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let k = kinds(&c.events());
    assert_eq!(
        k,
        vec![
            "SystemPromptEvent",
            "MessageEvent",
            "CSUE:last_user_message_id",
            "CSUE:execution_status",
            "Action:echo",
            "Obs:echo",
            "CSUE:stats",
            "Action:finish",
            "Obs:finish",
            "CSUE:execution_status",
            "CSUE:stats",
        ]
    );
    assert_eq!(c.agent_final_response(), "done");
    // Reference layout: <root>/<hex id>/base_state.json + events/event-%05d-<id>.json
    let dir = f.root.path().join(c.id().simple().to_string());
    assert!(dir.join("base_state.json").is_file());
    let mut names: Vec<String> = std::fs::read_dir(dir.join("events"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != HEAD_INDEX_FILE)
        .collect();
    names.sort();
    assert_eq!(names.len(), 11);
    assert!(
        dir.join("events").join(HEAD_INDEX_FILE).is_file(),
        "and the head index"
    );
    let events = c.events();
    for (i, (name, ev)) in names.iter().zip(events.iter()).enumerate() {
        assert_eq!(name, &format!("event-{i:05}-{}.json", ev.id));
    }
    // parent ids chain the real events; state updates hang off the leaf
    let mut leaf: Option<&str> = None;
    for e in &events {
        assert_eq!(e.parent_id.as_deref(), leaf, "{}", e.kind());
        if !matches!(e.body, EventBody::StateUpdate(_)) {
            leaf = Some(e.id.as_str());
        }
    }
    let state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("base_state.json")).unwrap()).unwrap();
    assert_eq!(state["execution_status"], "finished");
    assert_eq!(state["id"], c.id().to_string());
    let stats = &state["stats"]["usage_to_metrics"]["agent"]["accumulated_token_usage"];
    assert_eq!(stats["prompt_tokens"], 200);
    // the LLM saw the tool schema with summary/security_risk and the observation
    let reqs = f.backend.requests();
    assert_eq!(reqs.len(), 2);
    let echo_schema = reqs[0].tools.iter().find(|t| t.name == "echo").unwrap();
    let props: Vec<&String> = echo_schema.parameters["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(props, vec!["security_risk", "summary", "text", "sleep_ms"]);
    let last = reqs[1].messages.last().unwrap();
    assert_eq!(last.text(), "hi");
}

#[tokio::test]
async fn parallel_calls_are_emitted_first_then_observed_in_order() {
    let turn = Turn::tool_call("echo", json!({"text": "one", "sleep_ms": 150}))
        .with_tool_call("echo", json!({"text": "two"}))
        .with_text("two at once");
    let f = fixture(vec![turn, finish("ok")], |_| {});
    let c = &f.conversation;
    c.send_message("go").unwrap();
    c.run().await.unwrap();
    let events = c.events();
    let k = kinds(&events);
    let start = k.iter().position(|x| x == "Action:echo").unwrap();
    assert_eq!(
        &k[start..start + 4],
        ["Action:echo", "Action:echo", "Obs:echo", "Obs:echo"]
    );
    let (a1, a2) = match (&events[start].body, &events[start + 1].body) {
        (EventBody::Action(a), EventBody::Action(b)) => (a.clone(), b.clone()),
        _ => unreachable!(),
    };
    assert_eq!(a1.llm_response_id, a2.llm_response_id);
    assert_eq!(a1.thought[0].text, "two at once");
    assert!(a2.thought.is_empty());
    match (&events[start + 2].body, &events[start + 3].body) {
        (EventBody::Observation(o1), EventBody::Observation(o2)) => {
            assert_eq!(o1.tool_call_id, a1.tool_call_id);
            assert_eq!(o2.tool_call_id, a2.tool_call_id);
        }
        _ => unreachable!(),
    }
    // the second request carried both calls in one assistant message
    let reqs = f.backend.requests();
    let assistant = reqs[1]
        .messages
        .iter()
        .find(|m| m.tool_calls.is_some())
        .unwrap();
    assert_eq!(assistant.tool_calls.as_ref().unwrap().len(), 2);
}

#[tokio::test]
async fn unknown_tool_and_bad_json_become_agent_errors_and_run_continues() {
    let f = fixture(
        vec![
            Turn::tool_call("no_such_tool", json!({"x": 1})),
            Turn::default().with_raw_tool_call("echo", "{not json"),
            Turn::tool_call("echo", json!({"wrong": 1})),
            finish("recovered"),
        ],
        |_| {},
    );
    let c = &f.conversation;
    c.send_message("go").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let errors: Vec<String> = c
        .events()
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::AgentError(a) => Some(a.error.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(
        errors[0]
            .starts_with("Tool 'no_such_tool' not found. Available: ['echo', 'finish', 'think']")
    );
    assert!(errors[1].contains("JSON"));
    assert!(errors[2].contains("text"));
    // the model saw each error as a tool result
    let reqs = f.backend.requests();
    assert!(
        reqs[1]
            .messages
            .last()
            .unwrap()
            .text()
            .contains("not found")
    );
}

#[tokio::test]
async fn max_iterations_is_an_error_event() {
    let f = fixture(vec![echo("a"), echo("b"), echo("c"), echo("d")], |o| {
        o.max_iteration_per_run = 3;
        o.stuck_detection = false;
    });
    let c = &f.conversation;
    c.send_message("loop").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Error);
    let err = c
        .events()
        .into_iter()
        .find_map(|e| match e.body {
            EventBody::ConversationError(x) => Some(x),
            _ => None,
        })
        .unwrap();
    assert_eq!(err.code, "MaxIterationsReached");
    assert_eq!(err.detail, "Agent reached maximum iterations limit (3).");
}

async fn stuck_after(turns: Vec<Turn>) -> ExecutionStatus {
    let f = fixture(turns, |_| {});
    f.conversation.send_message("go").unwrap();
    f.conversation.run().await.unwrap()
}

#[tokio::test]
async fn repeating_action_observation_is_stuck() {
    let turns = vec![
        echo("same"),
        echo("same"),
        echo("same"),
        echo("same"),
        finish("never"),
    ];
    assert_eq!(stuck_after(turns).await, ExecutionStatus::Stuck);
    // three repetitions are not enough
    let turns = vec![echo("same"), echo("same"), echo("same"), finish("ok")];
    assert_eq!(stuck_after(turns).await, ExecutionStatus::Finished);
}

#[tokio::test]
async fn repeating_action_error_is_stuck() {
    let bad = || Turn::tool_call("echo", json!({"wrong": 1}));
    assert_eq!(
        stuck_after(vec![bad(), bad(), bad(), finish("never")]).await,
        ExecutionStatus::Stuck
    );
}

#[tokio::test]
async fn monologue_is_stuck() {
    let empty = || Turn::default().with_reasoning("hmm");
    assert_eq!(
        stuck_after(vec![empty(), empty(), empty(), finish("never")]).await,
        ExecutionStatus::Stuck
    );
}

#[tokio::test]
async fn alternating_pattern_is_stuck() {
    let turns = vec![
        echo("a"),
        echo("b"),
        echo("a"),
        echo("b"),
        echo("a"),
        echo("b"),
        finish("never"),
    ];
    assert_eq!(stuck_after(turns).await, ExecutionStatus::Stuck);
}

#[tokio::test]
async fn pause_takes_effect_after_the_in_flight_llm_call() {
    let f = fixture(
        vec![echo("slow").with_delay_ms(400), echo("x"), finish("no")],
        |_| {},
    );
    let c = f.conversation.clone();
    c.send_message("go").unwrap();
    let runner = tokio::spawn({
        let c = c.clone();
        async move { c.run().await.unwrap() }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    c.pause().unwrap();
    assert_eq!(c.status(), ExecutionStatus::Paused);
    assert_eq!(runner.await.unwrap(), ExecutionStatus::Paused);
    let k = kinds(&c.events());
    assert!(k.contains(&"PauseEvent".to_string()));
    // the in-flight step completed (its action ran) but no further step ran
    assert_eq!(k.iter().filter(|x| *x == "Action:echo").count(), 1);
    assert_eq!(f.backend.requests().len(), 1);
    // resuming continues the task
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
}

#[tokio::test]
async fn interrupt_cancels_the_llm_call() {
    let f = fixture(
        vec![echo("slow").with_delay_ms(5_000), finish("no")],
        |_| {},
    );
    let c = f.conversation.clone();
    c.send_message("go").unwrap();
    let runner = tokio::spawn({
        let c = c.clone();
        async move { c.run().await.unwrap() }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let t = std::time::Instant::now();
    c.interrupt().unwrap();
    let status = runner.await.unwrap();
    assert!(t.elapsed() < Duration::from_secs(2));
    assert_eq!(status, ExecutionStatus::Paused);
    let k = kinds(&c.events());
    assert!(k.contains(&"InterruptEvent".to_string()));
    assert!(!k.contains(&"Action:echo".to_string()));
}

#[tokio::test]
async fn message_sent_while_running_is_picked_up() {
    let script = Script::from_turns(vec![
        echo("working").with_delay_ms(300),
        finish("first done"),
        finish("saw the second message"),
    ]);
    let workspace = tempfile::tempdir().unwrap();
    let (agent, backend) = agent(script);
    let c =
        LocalConversation::new(agent, workspace.path(), ConversationOptions::default()).unwrap();
    c.send_message("first").unwrap();
    let runner = tokio::spawn({
        let c = c.clone();
        async move { c.run().await.unwrap() }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    c.send_message("second").unwrap();
    assert_eq!(runner.await.unwrap(), ExecutionStatus::Finished);
    let reqs = backend.requests();
    assert!(
        reqs.iter()
            .skip(1)
            .any(|r| r.messages.iter().any(|m| m.text() == "second")),
        "the second message reached the LLM"
    );
}

#[tokio::test]
async fn confirmation_reject_and_accept() {
    let f = fixture(vec![echo("risky"), finish("done")], |o| {
        o.confirmation_policy = ConfirmationPolicy::AlwaysConfirm;
    });
    let c = &f.conversation;
    c.send_message("go").unwrap();
    assert_eq!(
        c.run().await.unwrap(),
        ExecutionStatus::WaitingForConfirmation
    );
    c.respond_to_confirmation(false, Some("nope".into()))
        .unwrap();
    assert_eq!(c.status(), ExecutionStatus::Idle);
    let rejected = c.events().into_iter().find_map(|e| match e.body {
        EventBody::UserReject(r) => Some(r),
        _ => None,
    });
    assert_eq!(rejected.unwrap().rejection_reason, "nope");

    let f = fixture(vec![echo("ok"), finish("done")], |o| {
        o.confirmation_policy = ConfirmationPolicy::AlwaysConfirm;
    });
    let c = &f.conversation;
    c.send_message("go").unwrap();
    assert_eq!(
        c.run().await.unwrap(),
        ExecutionStatus::WaitingForConfirmation
    );
    c.respond_to_confirmation(true, None).unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    assert!(kinds(&c.events()).contains(&"Obs:echo".to_string()));
}

#[tokio::test]
async fn llm_errors_end_in_error_status_with_reference_codes() {
    let f = fixture(vec![Turn::error(401)], |_| {});
    f.conversation.send_message("go").unwrap();
    assert_eq!(f.conversation.run().await.unwrap(), ExecutionStatus::Error);
    let err = f
        .conversation
        .events()
        .into_iter()
        .find_map(|e| match e.body {
            EventBody::ConversationError(x) => Some(x),
            _ => None,
        })
        .unwrap();
    assert_eq!(err.code, "LLMAuthenticationError");
    assert_eq!(err.classification.unwrap().kind, "auth");

    let f = fixture(
        vec![Turn::default().with_error(TurnError::status(500))],
        |_| {},
    );
    f.conversation.send_message("go").unwrap();
    assert_eq!(f.conversation.run().await.unwrap(), ExecutionStatus::Error);
}

#[tokio::test]
async fn resume_continues_from_persisted_events() {
    let root = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let turns = vec![echo("one"), echo("two"), finish("done")];
    let (agent, _) = agent_turns(turns.clone());
    let c = LocalConversation::new(agent, workspace.path(), persisted(root.path())).unwrap();
    c.send_message("go").unwrap();
    let id = c.id();
    drop(c);
    // a new process (new agent instance) resumes and finishes
    let (agent2, backend2) = agent_turns(turns);
    let c2 = LocalConversation::resume(
        root.path(),
        id,
        Some(agent2),
        ConversationOptions::default(),
    )
    .unwrap();
    assert_eq!(c2.event_count(), 3);
    assert_eq!(c2.run().await.unwrap(), ExecutionStatus::Finished);
    assert_eq!(backend2.requests().len(), 3);
    assert_eq!(c2.agent_final_response(), "done");
}

#[tokio::test]
async fn fork_copies_events_under_a_new_id() {
    let f = fixture(vec![echo("a"), finish("done")], |_| {});
    let c = &f.conversation;
    c.send_message("go").unwrap();
    c.run().await.unwrap();
    let fork = c.fork(None, None, true, persisted(f.root.path())).unwrap();
    assert_ne!(fork.id(), c.id());
    assert_eq!(fork.events(), c.events());
    assert_eq!(fork.status(), ExecutionStatus::Idle);
    assert!(
        f.root
            .path()
            .join(fork.id().simple().to_string())
            .join("events")
            .join(HEAD_INDEX_FILE)
            .is_file(),
        "the fork's events and their head index are written"
    );
    assert_eq!(
        fork.stats()
            .combined()
            .accumulated_token_usage
            .map(|u| u.prompt_tokens)
            .unwrap_or(0),
        0
    );
    assert!(
        c.fork(Some(fork.id()), None, true, persisted(f.root.path()))
            .is_err()
    );
}

#[tokio::test]
async fn ask_agent_is_not_recorded() {
    let script =
        Script::from_turns(vec![Turn::text("42")]).with_toolless_reply(Turn::text("A title"));
    let workspace = tempfile::tempdir().unwrap();
    let (agent, _) = agent(script);
    let c =
        LocalConversation::new(agent, workspace.path(), ConversationOptions::default()).unwrap();
    c.send_message("hello").unwrap();
    let before = c.event_count();
    assert_eq!(c.ask_agent("what is the answer?").await.unwrap(), "42");
    assert_eq!(c.event_count(), before);
    assert_eq!(c.generate_title(50).await.unwrap(), "A title");
}

#[tokio::test]
async fn user_messages_carry_source_user_and_images() {
    let f = fixture(vec![finish("done")], |_| {});
    let mut m = openhands_wire::Message::user("look");
    m.content.push(openhands_wire::Content::Image(
        openhands_wire::ImageContent::new(vec!["data:image/png;base64,AAAA".into()]),
    ));
    let ev = f.conversation.send(m).unwrap();
    assert_eq!(ev.source, SourceType::User);
    f.conversation.run().await.unwrap();
    let req = &f.backend.requests()[0];
    assert!(req.messages.iter().any(|m| m.content.len() == 2));
}

#[tokio::test]
async fn secrets_in_agent_json_are_never_written_in_clear() {
    use openhands_sdk::secrets::Cipher;
    let root = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let (agent, _) = agent_turns(vec![finish("done")]);
    let mut spec = agent.spec().clone();
    spec.llm.api_key = Some(openhands_wire::SecretString::new("sk-agent-secret"));
    spec.condenser = Some(json!({
        "kind": "LLMSummarizingCondenser",
        "llm": {"model": "openai/other", "api_key": "sk-condenser-secret"}
    }));
    let agent = openhands_sdk::Agent::with_llm(spec, agent.llm().clone(), registry());
    for cipher in [None, Cipher::new("k", &[])] {
        let options = ConversationOptions {
            persistence_dir: Some(root.path().to_path_buf()),
            cipher: cipher.clone(),
            secrets: vec![(
                "TOKEN".into(),
                openhands_sdk::secrets::SecretSource::Static {
                    value: "tok-secret-value".into(),
                    description: None,
                },
            )],
            ..ConversationOptions::default()
        };
        let c = LocalConversation::new(agent.clone(), ws.path(), options).unwrap();
        c.send_message("hi").unwrap();
        c.run().await.unwrap();
        let dir = c.persistence_dir().unwrap();
        let mut all = std::fs::read_to_string(dir.join("base_state.json")).unwrap();
        for e in std::fs::read_dir(dir.join("events")).unwrap() {
            all.push_str(&String::from_utf8_lossy(
                &std::fs::read(e.unwrap().path()).unwrap(),
            ));
        }
        for secret in ["sk-agent-secret", "sk-condenser-secret", "tok-secret-value"] {
            assert!(!all.contains(secret), "{secret} written in clear");
        }
        let state_text = serde_json::to_string(&c.state_json()).unwrap();
        assert!(!state_text.contains("sk-condenser-secret"));
        if let Some(cipher) = cipher {
            let resumed = LocalConversation::resume(
                root.path(),
                c.id(),
                None,
                ConversationOptions {
                    cipher: Some(cipher),
                    agent: openhands_sdk::conversation::AgentOptions {
                        tool_registry: registry(),
                        ..Default::default()
                    },
                    ..ConversationOptions::default()
                },
            )
            .unwrap();
            let spec = resumed.agent().spec().clone();
            assert_eq!(spec.llm.api_key.unwrap().expose(), "sk-agent-secret");
            assert_eq!(
                spec.condenser.unwrap()["llm"]["api_key"],
                "sk-condenser-secret"
            );
            assert_eq!(
                resumed.secrets().get("TOKEN").as_deref(),
                Some("tok-secret-value")
            );
        }
    }
}

#[tokio::test]
async fn agent_context_suffixes_reach_the_llm() {
    let (agent, backend) = agent_turns(vec![finish("done")]);
    let mut spec = agent.spec().clone();
    spec.agent_context = Some(json!({
        "system_message_suffix": "Always answer in French.",
        "user_message_suffix": "(be brief)",
        "skills": [{"name": "repo", "content": "This repo uses cargo.", "trigger": null}]
    }));
    let agent = openhands_sdk::Agent::with_llm(spec, agent.llm().clone(), registry());
    let ws = tempfile::tempdir().unwrap();
    let c = LocalConversation::new(agent, ws.path(), ConversationOptions::default()).unwrap();
    c.send_message("hello").unwrap();
    c.run().await.unwrap();
    let req = &backend.requests()[0];
    let system = req.messages[0].text();
    assert!(system.contains("Always answer in French."));
    assert!(system.contains("This repo uses cargo."));
    assert!(req.messages[1].text().contains("(be brief)"));
}

#[tokio::test]
async fn actions_cut_by_a_crash_are_reported_not_rerun() {
    let root = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let slow = Turn::tool_call("echo", json!({"text": "half-done", "sleep_ms": 10_000}));
    let (agent, _) = agent_turns(vec![slow.clone(), finish("done")]);
    let c = LocalConversation::new(agent, workspace.path(), persisted(root.path())).unwrap();
    c.send_message("go").unwrap();
    let id = c.id();
    let runner = tokio::spawn({
        let c = c.clone();
        async move { c.run().await }
    });
    // wait until the action is recorded, then "crash" (abort the run task)
    for _ in 0..200 {
        if kinds(&c.events()).contains(&"Action:echo".to_string()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    runner.abort();
    let _ = runner.await;
    drop(c);
    let (agent2, backend2) = agent_turns(vec![slow, finish("done")]);
    let c2 = LocalConversation::resume(
        root.path(),
        id,
        Some(agent2),
        ConversationOptions::default(),
    )
    .unwrap();
    let errs: Vec<String> = c2
        .events()
        .into_iter()
        .filter_map(|e| match e.body {
            EventBody::AgentError(a) => Some(a.error),
            _ => None,
        })
        .collect();
    assert_eq!(errs.len(), 1);
    assert!(errs[0].contains("interrupted"));
    let t = std::time::Instant::now();
    assert_eq!(c2.run().await.unwrap(), ExecutionStatus::Finished);
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "the interrupted action was run again"
    );
    assert!(!kinds(&c2.events()).contains(&"Obs:echo".to_string()));
    assert_eq!(backend2.requests().len(), 1);
}

#[tokio::test]
async fn the_iteration_limit_can_change_after_resume() {
    let root = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let turns = vec![echo("a"), echo("b"), echo("c"), finish("done")];
    let (agent, _) = agent_turns(turns.clone());
    let c = LocalConversation::new(agent, workspace.path(), persisted(root.path())).unwrap();
    c.send_message("go").unwrap();
    let id = c.id();
    drop(c);
    let (agent2, _) = agent_turns(turns);
    let c2 = LocalConversation::resume(
        root.path(),
        id,
        Some(agent2),
        ConversationOptions::default(),
    )
    .unwrap();
    c2.set_max_iterations(2).unwrap();
    assert_eq!(c2.run().await.unwrap(), ExecutionStatus::Error);
    assert_eq!(c2.state().max_iterations, 2);
}
