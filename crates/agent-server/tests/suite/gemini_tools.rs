//! The Gemini-style file tools and the planning file editor through the
//! agent server: a scripted model edits the workspace with `write_file`,
//! `edit`, `read_file` and `list_directory`, and a planning agent fills in
//! its plan while edits elsewhere are refused.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use openhands_testkit::{Script, Turn};
use serde_json::{Value, json};

fn observations(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["kind"] == "ObservationEvent")
        .map(|e| &e["observation"])
        .collect()
}

fn gemini_script(_: &std::path::Path) -> Script {
    Script::from_turns([
        Turn::tool_call(
            "write_file",
            json!({"file_path": "src/app.py", "content": "x = 1\nprint(x)\n"}),
        ),
        Turn::tool_call(
            "edit",
            json!({"file_path": "src/app.py", "old_string": "x = 1", "new_string": "x = 2"}),
        ),
        Turn::tool_call("read_file", json!({"file_path": "src/app.py", "limit": 1})),
        Turn::tool_call("list_directory", json!({"dir_path": "src"})),
        Turn::tool_call(
            "write_file",
            json!({"file_path": "../outside.txt", "content": "no"}),
        ),
        Turn::tool_call("finish", json!({"message": "done"})),
    ])
    .with_toolless_reply(Turn::text("Gemini tools"))
}

#[tokio::test]
async fn a_scripted_agent_edits_files_with_the_gemini_tools() {
    let env = Env::start(gemini_script).await;
    let tools = [
        "terminal",
        "read_file",
        "write_file",
        "edit",
        "list_directory",
        "task_tracker",
    ];
    let info = env.create(json!({"agent": env.agent(&tools)})).await;
    assert_eq!(
        info["tool_module_qualnames"]["read_file"],
        "openhands.tools.gemini.read_file.definition"
    );
    let id = info["id"].as_str().unwrap();
    env.send(id, "Write, fix and check src/app.py.", true).await;
    let done = env.wait_status(id, &["finished", "error"]).await;
    assert_eq!(done["execution_status"], "finished", "{done}");

    let ws = env.workspace();
    assert_eq!(
        std::fs::read_to_string(ws.join("src/app.py")).unwrap(),
        "x = 2\nprint(x)\n"
    );
    assert!(!env.dir.path().join("outside.txt").exists());

    let events = env.events(id).await;
    let obs = observations(&events);
    let kinds: Vec<&str> = obs.iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "WriteFileObservation",
            "EditObservation",
            "ReadFileObservation",
            "ListDirectoryObservation",
            "WriteFileObservation",
            "FinishObservation"
        ]
    );
    let app = ws.join("src/app.py").display().to_string();
    assert_eq!(obs[0]["is_new_file"], true);
    assert_eq!(obs[0]["file_path"], app.as_str());
    assert_eq!(obs[1]["replacements_made"], 1);
    assert_eq!(obs[1]["old_content"], "x = 1\nprint(x)\n");
    assert_eq!(obs[2]["file_content"], "     1  x = 2\n");
    assert_eq!(obs[2]["is_truncated"], true);
    assert_eq!(obs[2]["lines_shown"], json!([1, 1]));
    assert_eq!(obs[2]["total_lines"], 2);
    assert_eq!(obs[3]["entries"][0]["name"], "app.py");
    assert_eq!(obs[3]["entries"][0]["size"], 15);
    assert_eq!(obs[3]["total_count"], 1);
    assert_eq!(obs[4]["is_error"], true);
    assert!(
        obs[4]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("outside the workspace"),
        "{}",
        obs[4]
    );
    // Actions carry the reference's kinds and every field.
    let edit_action = events
        .iter()
        .find(|e| e["kind"] == "ActionEvent" && e["tool_name"] == "edit")
        .unwrap();
    assert_eq!(edit_action["action"]["kind"], "EditAction");
    assert_eq!(edit_action["action"]["expected_replacements"], 1);
    env.stop().await;
}

fn planning_script(workspace: &std::path::Path) -> Script {
    let plan = workspace.join(".agents_tmp/PLAN.md");
    Script::from_turns([
        Turn::tool_call(
            "planning_file_editor",
            json!({"command": "str_replace", "path": plan.to_string_lossy(),
                   "old_str": "# 1. OBJECTIVE\n", "new_str": "# 1. OBJECTIVE\nMake it fast.\n"}),
        ),
        Turn::tool_call(
            "planning_file_editor",
            json!({"command": "create", "path": workspace.join("code.py").to_string_lossy(), "file_text": "x"}),
        ),
        Turn::tool_call("finish", json!({"message": "planned"})),
    ])
    .with_toolless_reply(Turn::text("Plan"))
}

#[tokio::test]
async fn a_planning_agent_edits_only_its_plan() {
    let env = Env::start(planning_script).await;
    let info = env
        .create(json!({"agent": env.agent(&["glob", "grep", "planning_file_editor"])}))
        .await;
    let id = info["id"].as_str().unwrap();
    let plan = env.workspace().join(".agents_tmp/PLAN.md");
    env.send(id, "Plan the work.", true).await;
    let done = env.wait_status(id, &["finished", "error"]).await;
    assert_eq!(done["execution_status"], "finished", "{done}");
    // The tool created the plan with its headers; the model filled one in.
    assert!(
        std::fs::read_to_string(&plan)
            .unwrap()
            .starts_with("# 1. OBJECTIVE\nMake it fast.\n\n# 2. CONTEXT SUMMARY\n")
    );
    assert!(!env.workspace().join("code.py").exists());
    let events = env.events(id).await;
    let obs = observations(&events);
    assert_eq!(obs[0]["kind"], "PlanningFileEditorObservation");
    assert_eq!(obs[0]["is_error"], false, "{}", obs[0]);
    assert_eq!(obs[1]["is_error"], true);
    assert!(
        obs[1]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Operation 'create' is not allowed on file"),
        "{}",
        obs[1]
    );
    env.stop().await;
}
