//! `task_tracker`: plan, view, persistence and reload.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_sdk::tool::{Tool, ToolCallContext, ToolEnv};
use openhands_tools::task_tracker::{TASKS_FILE, TaskTrackerTool};
use serde_json::{Value, json};
use std::fs;

async fn call(tool: &dyn Tool, args: Value) -> Value {
    let Value::Object(map) = args else {
        panic!("arguments must be an object")
    };
    let action = tool.parse_action(map).expect("valid arguments");
    tool.execute(action, &ToolCallContext::default())
        .await
        .expect("execute")
}

fn text(obs: &Value) -> String {
    obs["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn env_with_dir(work: &std::path::Path, conv: &std::path::Path) -> ToolEnv {
    let mut env = ToolEnv::new(work);
    env.conversation_dir = Some(conv.to_path_buf());
    env
}

#[tokio::test]
async fn plan_matches_reference_example() {
    let dir = tempfile::tempdir().unwrap();
    let tool = TaskTrackerTool::new(&env_with_dir(dir.path(), dir.path()));
    let Value::Object(args) =
        json!({"command":"plan","task_list":[{"title":"edit f.txt","status":"done"}]})
    else {
        unreachable!()
    };
    let action = tool.parse_action(args).unwrap();
    assert_eq!(
        action,
        json!({"command":"plan","task_list":[{"title":"edit f.txt","notes":"","status":"done"}],"kind":"TaskTrackerAction"})
    );
    let obs = tool
        .execute(action, &ToolCallContext::default())
        .await
        .unwrap();
    assert_eq!(obs["is_error"], false);
    assert_eq!(obs["command"], "plan");
    assert_eq!(
        obs["task_list"],
        json!([{"title":"edit f.txt","notes":"","status":"done"}])
    );
    assert_eq!(obs["kind"], "TaskTrackerObservation");
    assert!(text(&obs).contains("1 item(s)"), "{}", text(&obs));
    let keys: Vec<&String> = obs.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["content", "is_error", "command", "task_list", "kind"]
    );
}

#[tokio::test]
async fn view_defaults_and_empty_list() {
    let dir = tempfile::tempdir().unwrap();
    let tool = TaskTrackerTool::new(&ToolEnv::new(dir.path()));
    let obs = call(&tool, json!({})).await;
    assert_eq!(obs["command"], "view");
    assert_eq!(obs["task_list"], json!([]));
    assert!(text(&obs).contains("empty"));
}

#[tokio::test]
async fn plan_replaces_and_view_shows_list() {
    let dir = tempfile::tempdir().unwrap();
    let tool = TaskTrackerTool::new(&ToolEnv::new(dir.path()));
    call(
        &tool,
        json!({"command":"plan","task_list":[{"title":"old"}]}),
    )
    .await;
    call(
        &tool,
        json!({"command":"plan","task_list":[
            {"title":"Write parser","notes":"grammar first","status":"in_progress"},
            {"title":"Add tests","status":"todo"},
            {"title":"Read spec","status":"done"}
        ]}),
    )
    .await;
    let obs = call(&tool, json!({"command":"view"})).await;
    let t = text(&obs);
    assert!(!t.contains("old"));
    assert!(t.contains("1. [~] Write parser"), "{t}");
    assert!(t.contains("grammar first"));
    assert!(t.contains("2. [ ] Add tests"));
    assert!(t.contains("3. [x] Read spec"));
    assert_eq!(obs["task_list"].as_array().unwrap().len(), 3);
    assert_eq!(obs["task_list"][0]["status"], "in_progress");
}

#[tokio::test]
async fn list_persists_and_reloads_in_new_instance() {
    let work = tempfile::tempdir().unwrap();
    let conv = tempfile::tempdir().unwrap();
    let conv_dir = conv.path().join("conv-1");
    let env = env_with_dir(work.path(), &conv_dir);
    let tool = TaskTrackerTool::new(&env);
    call(&tool, json!({"command":"plan","task_list":[{"title":"a","status":"pending"},{"title":"b","notes":"n"}]})).await;

    let stored: Value =
        serde_json::from_str(&fs::read_to_string(conv_dir.join(TASKS_FILE)).unwrap()).unwrap();
    assert_eq!(
        stored,
        json!([{"title":"a","notes":"","status":"todo"},{"title":"b","notes":"n","status":"todo"}])
    );
    // Nothing else (no temporary files) is left in the directory.
    assert_eq!(fs::read_dir(&conv_dir).unwrap().count(), 1);

    let reloaded = TaskTrackerTool::new(&env);
    let obs = call(&reloaded, json!({"command":"view"})).await;
    assert_eq!(obs["task_list"], stored);
}

#[tokio::test]
async fn corrupt_file_starts_empty() {
    let work = tempfile::tempdir().unwrap();
    fs::write(work.path().join(TASKS_FILE), "{not json").unwrap();
    let tool = TaskTrackerTool::new(&env_with_dir(work.path(), work.path()));
    let obs = call(&tool, json!({"command":"view"})).await;
    assert_eq!(obs["is_error"], false);
    assert_eq!(obs["task_list"], json!([]));
}

#[tokio::test]
async fn unwritable_store_reports_error_and_keeps_list() {
    let work = tempfile::tempdir().unwrap();
    // The "conversation dir" is a file, so the list cannot be saved.
    let blocker = work.path().join("blocker");
    fs::write(&blocker, "").unwrap();
    let tool = TaskTrackerTool::new(&env_with_dir(work.path(), &blocker));
    let obs = call(&tool, json!({"command":"plan","task_list":[{"title":"a"}]})).await;
    assert_eq!(obs["is_error"], true);
    assert_eq!(obs["task_list"], json!([]));
}

#[test]
fn bad_arguments_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let tool = TaskTrackerTool::new(&ToolEnv::new(dir.path()));
    for bad in [
        json!({"command":"delete"}),
        json!({"command":"plan","task_list":[{"notes":"no title"}]}),
        json!({"command":"plan","task_list":[{"title":"x","status":"someday"}]}),
        json!({"command":"view","extra":1}),
    ] {
        let Value::Object(m) = bad else {
            unreachable!()
        };
        assert!(tool.parse_action(m).is_err());
    }
}

#[test]
fn definition_has_no_annotation_title_like_reference() {
    let dir = tempfile::tempdir().unwrap();
    let tool = TaskTrackerTool::new(&ToolEnv::new(dir.path()));
    let def = serde_json::to_value(tool.definition()).unwrap();
    assert_eq!(
        def["annotations"],
        json!({"readOnlyHint":false,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false})
    );
    assert_eq!(def["kind"], "TaskTrackerTool");
    assert_eq!(def["title"], "task_tracker");
    assert_eq!(def["action_type"], "TaskTrackerAction");
    assert_eq!(def["observation_type"], "TaskTrackerObservation");
}
