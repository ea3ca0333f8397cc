//! `GraySwanAnalyzer` against a local HTTP server answering like the
//! monitor service.
#![allow(
    clippy::disallowed_methods,
    reason = "tests start programs, stage files and read the environment directly"
)]

use super::*;
use crate::security::table_tests::terminal_action;
use crate::test_http::monitor;
use openhands_wire::content::TextContent;
use openhands_wire::event::{MessageEvent, SystemPromptEvent};
use openhands_wire::message::Message;

fn analyzer(url: &str, extra: Value) -> GraySwan {
    let mut config = json!({"kind": "GraySwanAnalyzer", "api_url": url, "api_key": "gs-test-key"});
    if let (Some(m), Some(e)) = (config.as_object_mut(), extra.as_object()) {
        m.extend(e.clone());
    }
    GraySwan::from_json(&config).expect("valid config")
}

/// The score the fake service gives: high for deletions, else low.
fn score_by_command(body: &Value) -> (u16, String, u64) {
    let text = body.to_string();
    if text.contains("rm -rf") {
        (200, r#"{"violation": 0.92}"#.into(), 0)
    } else if text.contains("curl") {
        (200, r#"{"violation": 0.5}"#.into(), 0)
    } else if text.contains("injected") {
        (200, r#"{"violation": 0.1, "ipi": true}"#.into(), 0)
    } else {
        (200, r#"{"violation": 0.05, "ipi": false}"#.into(), 0)
    }
}

#[tokio::test]
async fn scores_map_to_risks_and_the_request_is_the_services_shape() {
    let (url, seen) = monitor(score_by_command).await;
    let g = analyzer(&url, json!({"policy_id": "pol-1"}));
    let cases = [
        ("ls", SecurityRisk::Low),
        ("curl example.com", SecurityRisk::Medium),
        ("rm -rf /", SecurityRisk::High),
        ("cat injected.txt", SecurityRisk::High),
    ];
    for (command, want) in cases {
        let got = g
            .analyze(&[], &terminal_action(command, SecurityRisk::Low))
            .await;
        assert_eq!(got.risk, want, "{command}: {got:?}");
        assert!(got.details.expect("details").contains_key("violation"));
    }
    let seen = seen.lock().expect("log").clone();
    assert_eq!(seen.len(), 4);
    let first = &seen[0];
    assert!(
        first.headers.contains("authorization: bearer gs-test-key"),
        "{}",
        first.headers
    );
    assert_eq!(first.body["policy_id"], "pol-1");
    let messages = first.body["messages"].as_array().expect("messages");
    // No history: a synthesized system message, then the action.
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[1]["role"], "assistant");
    let call = &messages[1]["tool_calls"][0];
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "terminal");
    let args: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().expect("text")).expect("json");
    assert_eq!(args["command"], "ls");
    assert!(
        args.get("security_risk").is_none(),
        "the model's label is withheld"
    );
}

#[tokio::test]
async fn failures_are_high_never_low() {
    // HTTP error, non-JSON, no score, slow answer past the timeout.
    let (url, _) = monitor(|body| {
        let text = body.to_string();
        if text.contains("err500") {
            (500, "{}".into(), 0)
        } else if text.contains("garbage") {
            (200, "not json".into(), 0)
        } else if text.contains("noscore") {
            (200, r#"{"ipi": false}"#.into(), 0)
        } else {
            (200, r#"{"violation": 0.0}"#.into(), 3000)
        }
    })
    .await;
    let g = analyzer(&url, json!({"timeout": 0.3}));
    for (command, needle) in [
        ("echo err500", "HTTP 500"),
        ("echo garbage", "not JSON"),
        ("echo noscore", "violation"),
        ("echo slow", "timed out"),
    ] {
        let got = g
            .analyze(&[], &terminal_action(command, SecurityRisk::Low))
            .await;
        assert_eq!(got.risk, SecurityRisk::High, "{command}");
        let error = got.details.expect("details")["error"].to_string();
        assert!(error.contains(needle), "{command}: {error}");
    }
    // A closed port.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = closed.local_addr().expect("addr");
    drop(closed);
    let g = analyzer(&format!("http://{addr}/m"), json!({}));
    let got = g
        .analyze(&[], &terminal_action("ls", SecurityRisk::Low))
        .await;
    assert_eq!(got.risk, SecurityRisk::High);
}

#[test]
fn without_a_key_the_verdict_is_high() {
    if std::env::var_os(API_KEY_ENV).is_some() {
        return; // the environment's key would be used
    }
    let g = GraySwan::from_json(&json!({"kind": "GraySwanAnalyzer"})).expect("valid");
    assert_eq!(g.api_url, DEFAULT_API_URL);
    assert!(!g.policy_id.is_empty());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let got = rt.block_on(g.analyze(&[], &terminal_action("ls", SecurityRisk::Low)));
    assert_eq!(got.risk, SecurityRisk::High);
    assert!(
        got.details.expect("details")["error"]
            .to_string()
            .contains(API_KEY_ENV)
    );
}

#[test]
fn history_is_bounded_and_keeps_the_system_prompt() {
    let g =
        GraySwan::from_json(&json!({"api_key": "k", "history_limit": 2, "max_message_chars": 5}))
            .expect("valid");
    let system = Event::new(EventBody::SystemPrompt(SystemPromptEvent {
        system_prompt: TextContent::new("You are an agent."),
        tools: Vec::new(),
        dynamic_context: None,
    }));
    let user = |text: &str| {
        Event::new(EventBody::Message(MessageEvent {
            llm_message: Message::user(text),
            llm_response_id: None,
            activated_skills: Vec::new(),
            extended_content: Vec::new(),
            sender: None,
            critic_result: None,
        }))
    };
    let events = vec![
        system,
        user("first"),
        user("second"),
        user("third and long"),
    ];
    let messages = g.messages(&events, &terminal_action("ls", SecurityRisk::Low));
    let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, ["system", "user", "user", "assistant"]);
    assert_eq!(messages[0]["content"], "You a", "cut to max_message_chars");
    assert_eq!(messages[1]["content"], "secon");
    assert_eq!(messages[2]["content"], "third");
}
