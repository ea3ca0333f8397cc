//! Agent hooks (a sub-conversation decides) and async hooks (background
//! commands) end to end with the scripted LLM.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use openhands_sdk::hooks::HookConfig;
use openhands_testkit::Script;
use openhands_wire::event::{EventBody, HookExecutionEvent};
use openhands_wire::message::Role;
use openhands_wire::state::ExecutionStatus;
use serde_json::json;
use std::time::{Duration, Instant};

fn hook_events(c: &openhands_sdk::LocalConversation) -> Vec<HookExecutionEvent> {
    c.events()
        .into_iter()
        .filter_map(|e| match e.body {
            EventBody::HookExecution(h) => Some(h),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn an_agent_hook_runs_a_sub_conversation_that_denies() {
    // main: echo rm, then finish; the hook's sub-agent (its message carries
    // the event, whose marker selects the judge's script): a verdict
    let script = Script::from_turns(vec![echo("rm -rf / [[mock:script:judge]]"), finish("done")])
        .with_script(
            "judge",
            vec![finish(
                "{\"decision\": \"deny\", \"reason\": \"the judge refuses deletions\"}",
            )],
        );
    let (agent, backend) = agent(script);
    let workspace = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let mut options = persisted(root.path());
    options.extensions.hook_config = Some(
        HookConfig::from_value(&json!({"PreToolUse": [{"matcher": "echo", "hooks": [
            {"type": "agent", "name": "judge", "system_prompt": "You judge commands.",
             "max_iterations": 2}]}]}))
        .unwrap(),
    );
    let c = openhands_sdk::LocalConversation::new(agent, workspace.path(), options).unwrap();
    c.send_message("go").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let reqs = backend.requests();
    assert_eq!(
        reqs.len(),
        3,
        "{:#?}",
        reqs.iter()
            .map(|r| (
                r.tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
                r.messages.iter().map(|m| m.text()).collect::<Vec<_>>()
            ))
            .collect::<Vec<_>>()
    );
    // the sub-conversation's request: the hook's system prompt, only
    // `finish`, the event as the user's message
    let judge = &reqs[1];
    let tools: Vec<&str> = judge.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["finish"]);
    assert_eq!(judge.messages[0].role, Role::System);
    assert!(
        judge.messages[0].text().starts_with("You judge commands."),
        "{}",
        judge.messages[0].text()
    );
    let user = judge.messages[1].text();
    assert!(
        user.starts_with(
            "Evaluate this PreToolUse hook event and make your decision.\n\n## Hook Event\n```json\n{"
        ),
        "{user}"
    );
    assert!(user.contains("\"tool_name\": \"echo\"") && user.contains("rm -rf /"));
    // the main conversation: the call was rejected with the judge's reason
    let events = c.events();
    let rejected: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::UserReject(r) => {
                Some((r.rejection_source.clone(), r.rejection_reason.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        rejected,
        [(
            "hook".to_string(),
            "the judge refuses deletions".to_string()
        )]
    );
    assert!(!kinds(&events).iter().any(|k| k == "Obs:echo"));
    let hooks = hook_events(&c);
    assert_eq!(hooks.len(), 1);
    assert!(hooks[0].blocked && hooks[0].success);
    assert_eq!(hooks[0].hook_command, "agent-hook:judge");
    // its model use is counted under its own key
    let state = c.state_json();
    assert!(
        state["stats"]["usage_to_metrics"]
            .get("agent-hook:judge")
            .is_some(),
        "{}",
        state["stats"]
    );
    // the sub-conversation was persisted beside, not inside, the log
    let dir = c.persistence_dir().unwrap();
    assert!(dir.join("agent_hooks").is_dir());
}

#[tokio::test]
async fn an_agent_hook_without_a_verdict_falls_open() {
    let script = Script::from_turns(vec![echo("ls [[mock:script:judge]]"), finish("done")])
        .with_script("judge", vec![finish("no idea")]);
    let (agent, _backend) = agent(script);
    let workspace = tempfile::tempdir().unwrap();
    let options = openhands_sdk::ConversationOptions {
        extensions: openhands_sdk::conversation::ExtensionOptions {
            hook_config: Some(
                HookConfig::from_value(&json!({"PreToolUse": [{"matcher": "echo", "hooks": [
                {"type": "agent", "system_prompt": "Judge."}]}]}))
                .unwrap(),
            ),
            ..Default::default()
        },
        ..Default::default()
    };
    let c = openhands_sdk::LocalConversation::new(agent, workspace.path(), options).unwrap();
    c.send_message("go").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let hooks = hook_events(&c);
    assert_eq!(hooks.len(), 1);
    assert!(!hooks[0].blocked && !hooks[0].success);
    assert_eq!(
        hooks[0].reason.as_deref(),
        Some("Agent hook returned no parseable JSON — defaulting to allow")
    );
    assert_eq!(hooks[0].hook_command, "agent-hook:Judge.");
    assert!(kinds(&c.events()).iter().any(|k| k == "Obs:echo"));
}

#[tokio::test]
async fn async_hooks_run_in_the_background_and_stop_with_the_session() {
    let workspace = tempfile::tempdir().unwrap();
    let w = workspace.path().to_path_buf();
    let config = HookConfig::from_value(&json!({"PostToolUse": [{"matcher": "echo", "hooks": [
        {"command": "sleep 0.3; cat > posted.json", "async": true},
        {"command": "echo $$ > slow.pid; sleep 30", "async": true, "timeout": 60}
    ]}]}))
    .unwrap();
    let (agent, _backend) = agent_turns(vec![echo("hello"), finish("done")]);
    let options = openhands_sdk::ConversationOptions {
        extensions: openhands_sdk::conversation::ExtensionOptions {
            hook_config: Some(config),
            ..Default::default()
        },
        ..Default::default()
    };
    let c = openhands_sdk::LocalConversation::new(agent, &w, options).unwrap();
    c.send_message("go").unwrap();
    let started = Instant::now();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    // the run did not wait for the 30 s hook
    assert!(started.elapsed() < Duration::from_secs(20));
    let hooks = hook_events(&c);
    assert_eq!(hooks.len(), 2);
    assert!(
        hooks
            .iter()
            .all(|h| h.success && !h.blocked && h.exit_code == 0)
    );
    // the first one read the event on stdin
    let deadline = Instant::now() + Duration::from_secs(10);
    let posted = loop {
        if let Ok(t) = std::fs::read_to_string(w.join("posted.json"))
            && !t.is_empty()
        {
            break t;
        }
        assert!(Instant::now() < deadline, "the async hook never wrote");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let v: serde_json::Value = serde_json::from_str(&posted).unwrap();
    assert_eq!(v["event_type"], "PostToolUse");
    assert_eq!(v["tool_name"], "echo");
    // the slow one is still running until the session ends
    let pid = loop {
        if let Ok(t) = std::fs::read_to_string(w.join("slow.pid"))
            && !t.trim().is_empty()
        {
            break t.trim().to_string();
        }
        assert!(Instant::now() < deadline, "the slow hook never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let alive = |pid: &str| std::path::Path::new(&format!("/proc/{pid}")).exists();
    assert!(alive(&pid));
    c.close().await;
    assert!(!alive(&pid), "the background hook outlived the session");
}
