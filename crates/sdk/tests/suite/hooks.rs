//! Hooks end to end with the scripted LLM: what runs, what is blocked,
//! what the model sees.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use openhands_sdk::hooks::HookConfig;
use openhands_testkit::Turn;
use openhands_wire::event::{Event, EventBody, HookExecutionEvent, SourceType};
use openhands_wire::message::Role;
use openhands_wire::state::ExecutionStatus;
use serde_json::json;

fn hook_fixture(turns: Vec<Turn>, config: serde_json::Value) -> Fixture {
    let config = HookConfig::from_value(&config).unwrap();
    fixture(turns, move |o| o.extensions.hook_config = Some(config))
}

fn hook_events(events: &[Event]) -> Vec<HookExecutionEvent> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::HookExecution(h) => Some(h.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn pre_tool_use_blocks_one_call_and_allows_the_next() {
    let f = hook_fixture(
        vec![echo("rm -rf /"), echo("ls"), finish("done")],
        json!({"PreToolUse": [{"matcher": "echo", "hooks": [{"command":
            "if grep -q 'rm -rf' ; then echo 'destructive command refused' >&2; exit 2; fi"}]}]}),
    );
    let c = &f.conversation;
    c.send_message("go").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let events = c.events();
    let k = kinds(&events);
    let first_action = k.iter().position(|x| x == "Action:echo").unwrap();
    assert_eq!(
        &k[first_action..first_action + 3],
        ["Action:echo", "HookExecutionEvent", "UserRejectObservation"]
    );
    let rejected = events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::UserReject(r) => Some(r.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(rejected.rejection_source, "hook");
    assert_eq!(
        rejected.rejection_reason,
        "destructive command refused\n".trim()
    );
    // the blocked call never ran: its only answer is the rejection
    let obs: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Observation(o) if o.tool_name == "echo" => Some(
                o.observation["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            ),
            _ => None,
        })
        .collect();
    assert_eq!(obs, ["ls"]);
    let hooks = hook_events(&events);
    assert_eq!(hooks.len(), 2);
    assert!(hooks[0].blocked && hooks[0].exit_code == 2);
    assert_eq!(hooks[0].hook_event_type, "PreToolUse");
    assert_eq!(hooks[0].tool_name.as_deref(), Some("echo"));
    assert_eq!(
        hooks[0].hook_input.as_ref().unwrap()["tool_input"]["text"],
        "rm -rf /"
    );
    assert!(!hooks[1].blocked && hooks[1].success);
    let hook_event = events
        .iter()
        .find(|e| matches!(e.body, EventBody::HookExecution(_)))
        .unwrap();
    assert_eq!(hook_event.source, SourceType::Hook);
    // the model is told why
    let reqs = f.backend.requests();
    assert!(
        reqs[1]
            .messages
            .last()
            .unwrap()
            .text()
            .contains("destructive command refused")
    );
    assert!(c.state().blocked_actions.is_empty());
}

#[tokio::test]
async fn user_prompt_submit_adds_context_or_blocks() {
    let f = hook_fixture(
        vec![Turn::text("answer")],
        json!({"UserPromptSubmit": [{"hooks": [{"command":
            "if grep -q forbidden; then echo '{\"decision\":\"deny\",\"reason\":\"not allowed\"}'; \
             else echo '{\"additionalContext\":\"git branch: main\"}'; fi"}]}]}),
    );
    let c = &f.conversation;
    c.send_message("what changed?").unwrap();
    c.run().await.unwrap();
    let reqs = f.backend.requests();
    let last = reqs[0].messages.last().unwrap();
    assert_eq!(last.role, Role::User);
    assert!(last.text().contains("what changed?") && last.text().contains("git branch: main"));
    let events = c.events();
    let k = kinds(&events);
    let hook_at = k.iter().position(|x| x == "HookExecutionEvent").unwrap();
    assert_eq!(
        k[hook_at + 1],
        "MessageEvent",
        "hook runs before the message is recorded"
    );
    let msg_id = &events[hook_at + 1].id;
    assert_eq!(hook_events(&events)[0].message_id.as_ref(), Some(msg_id));

    c.send_message("do the forbidden thing").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    assert_eq!(
        f.backend.requests().len(),
        1,
        "a blocked message never reaches the model"
    );
    let hooks = hook_events(&c.events());
    assert!(hooks[1].blocked);
    assert_eq!(hooks[1].reason.as_deref(), Some("not allowed"));
    assert!(c.state().blocked_messages.is_empty());
}

#[tokio::test]
async fn session_start_stop_and_post_tool_use_run_once_each() {
    let f = hook_fixture(
        vec![echo("hi"), finish("first"), finish("second")],
        json!({
            "SessionStart": [{"hooks": [{"command": "echo '{\"additionalContext\":\"session rules\"}'"}]}],
            "PostToolUse": [{"matcher": "echo", "hooks": [{"command": "cat > post.json"}]}],
            "Stop": [{"hooks": [{"command":
                "if [ -f stopped-once ]; then exit 0; fi; touch stopped-once; echo 'write a summary first' >&2; exit 2"}]}],
            "SessionEnd": [{"hooks": [{"command": "touch ended"}]}]
        }),
    );
    let c = &f.conversation;
    c.send_message("go").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let events = c.events();
    let types: Vec<String> = hook_events(&events)
        .iter()
        .map(|h| h.hook_event_type.clone())
        .collect();
    assert_eq!(types, ["SessionStart", "PostToolUse", "Stop", "Stop"]);
    // SessionStart context is an environment message right after the prompt
    assert_eq!(
        kinds(&events)[..3],
        ["SystemPromptEvent", "HookExecutionEvent", "MessageEvent"]
    );
    let reqs = f.backend.requests();
    assert!(
        reqs[0]
            .messages
            .iter()
            .any(|m| m.text().contains("session rules"))
    );
    // the stop hook sent the agent back once, with its reason
    assert_eq!(reqs.len(), 3);
    assert!(
        reqs[2]
            .messages
            .iter()
            .any(|m| m.text() == "[Stop hook feedback] write a summary first")
    );
    let post: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(f.workspace.path().join("post.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(post["event_type"], "PostToolUse");
    assert_eq!(post["tool_response"]["content"][0]["text"], "hi");
    assert_eq!(c.agent_final_response(), "second");
    assert!(!f.workspace.path().join("ended").exists());
    c.close().await;
    assert!(f.workspace.path().join("ended").exists());
    let last = hook_events(&c.events()).pop().unwrap();
    assert_eq!(last.hook_event_type, "SessionEnd");
}

#[tokio::test]
async fn a_prompt_hook_asks_the_model_and_blocks_on_deny() {
    // The judge's request offers no tools: the script's tool-less reply.
    let script = openhands_testkit::Script::from_turns(vec![echo("rm -rf /"), finish("done")])
        .with_toolless_reply(Turn::text(
            "Verdict: {\"decision\": \"deny\", \"reason\": \"destructive per policy\"}",
        ));
    let (agent, backend) = agent(script);
    let workspace = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let mut options = persisted(root.path());
    options.extensions.hook_config = Some(
        HookConfig::from_value(&json!({"PreToolUse": [{"matcher": "echo", "hooks": [
            {"type": "prompt", "name": "guard", "prompt": "Deny anything that deletes files."}]}]}))
        .unwrap(),
    );
    let c = openhands_sdk::LocalConversation::new(agent, workspace.path(), options).unwrap();
    c.send_message("go").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let reqs = backend.requests();
    // the hook's request: the policy in the system message, the event as data
    let judge = &reqs[1];
    assert!(judge.tools.is_empty());
    assert!(
        judge.messages[0]
            .text()
            .contains("Policy:\nDeny anything that deletes files.")
    );
    let event_text = judge.messages[1].text();
    assert!(event_text.contains("Evaluate this PreToolUse hook event"));
    assert!(event_text.contains("\"tool_name\": \"echo\"") && event_text.contains("rm -rf /"));
    let events = c.events();
    let rejected: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::UserReject(r) => Some(r.rejection_reason.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(rejected, ["destructive per policy"]);
    let hooks = hook_events(&events);
    assert_eq!(hooks.len(), 1);
    assert!(hooks[0].blocked && hooks[0].success);
    assert_eq!(hooks[0].hook_command, "prompt-hook:guard");
    // the blocked call never ran
    assert!(!kinds(&events).iter().any(|k| k == "Obs:echo"));
}
