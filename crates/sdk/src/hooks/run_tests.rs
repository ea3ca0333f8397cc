use super::*;
use serde_json::json;

fn runner(dir: &std::path::Path, config: Value) -> HookRunner {
    HookRunner::new(
        HookConfig::from_value(&config).unwrap(),
        dir.to_path_buf(),
        "sess-1".into(),
        ExecPolicy::default(),
    )
}

fn pre(tool: &str) -> HookInput {
    HookInput {
        tool_name: Some(tool.into()),
        tool_input: Some(json!({"command": "rm -rf /tmp/x"})),
        ..HookInput::default()
    }
}

#[tokio::test]
async fn exit_codes_and_stdin() {
    let d = tempfile::tempdir().unwrap();
    let r = runner(
        d.path(),
        json!({"PreToolUse": [{"matcher": "terminal", "hooks": [
            {"command": "cat > seen.json; echo \"$OPENHANDS_EVENT_TYPE $OPENHANDS_TOOL_NAME $OPENHANDS_SESSION_ID\""},
            {"command": "echo 'no rm here' >&2; exit 2"},
            {"command": "echo never > never.txt"}
        ]}]}),
    );
    let runs = r
        .run(HookEventType::PreToolUse, &pre("terminal"), true)
        .await;
    assert_eq!(runs.len(), 2, "stops at the blocking hook");
    assert!(runs[0].result.success && !runs[0].result.blocked);
    assert_eq!(runs[0].result.stdout, "PreToolUse terminal sess-1\n");
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("seen.json")).unwrap())
            .unwrap();
    assert_eq!(seen["event_type"], "PreToolUse");
    assert_eq!(seen["tool_input"]["command"], "rm -rf /tmp/x");
    assert_eq!(seen["working_dir"], d.path().to_string_lossy().as_ref());
    assert!(runs[1].result.blocked && runs[1].result.exit_code == 2);
    assert_eq!(blocking_reason(&runs).as_deref(), Some("no rm here"));
    assert!(!d.path().join("never.txt").exists());
    // other tools are not matched
    assert!(
        r.run(HookEventType::PreToolUse, &pre("file_editor"), true)
            .await
            .is_empty()
    );
}

#[tokio::test]
async fn json_output_and_failures() {
    let d = tempfile::tempdir().unwrap();
    let r = runner(
        d.path(),
        json!({"user_prompt_submit": [{"hooks": [
            {"command": "echo '{\"decision\": \"deny\", \"reason\": \"nope\", \"additionalContext\": \"ctx\"}'"},
        ]}], "stop": [{"hooks": [
            {"command": "exit 1"},
            {"command": "definitely-not-a-command-xyz"},
            {"command": "sleep 5", "timeout": 1},
            {"command": "echo '{\"continue\": false}'"}
        ]}]}),
    );
    let runs = r
        .run(HookEventType::UserPromptSubmit, &HookInput::default(), true)
        .await;
    assert!(runs[0].result.blocked && runs[0].result.success);
    assert_eq!(runs[0].result.additional_context.as_deref(), Some("ctx"));
    assert_eq!(blocking_reason(&runs).as_deref(), Some("nope"));
    let start = std::time::Instant::now();
    let runs = r
        .run(HookEventType::Stop, &HookInput::default(), false)
        .await;
    assert!(start.elapsed() < std::time::Duration::from_secs(4));
    assert_eq!(runs.len(), 4);
    assert!(!runs[0].result.success && !runs[0].result.blocked && runs[0].result.exit_code == 1);
    assert_eq!(runs[1].result.exit_code, 127);
    assert!(
        runs[2]
            .result
            .error
            .as_deref()
            .unwrap()
            .contains("timed out after 1 seconds")
    );
    assert!(runs[3].result.blocked);
    let ev = execution_event(HookEventType::Stop, &runs[2], None, None, None, None);
    assert_eq!(ev.hook_event_type, "Stop");
    assert_eq!(ev.exit_code, -1);
}

#[tokio::test]
async fn the_environment_policy_applies() {
    let d = tempfile::tempdir().unwrap();
    let policy = ExecPolicy::default();
    let r = HookRunner::new(
        HookConfig::from_value(&json!({"session_start": [{"hooks": [{"command": "echo \"[$SESSION_API_KEY][$AI_AGENT]\""}]}]}))
            .unwrap(),
        d.path().to_path_buf(),
        "s".into(),
        policy,
    );
    // the policy withholds SESSION_API_KEY whatever this process has
    let runs = r
        .run(HookEventType::SessionStart, &HookInput::default(), false)
        .await;
    assert_eq!(runs[0].result.stdout, "[][openhands]\n");
}
