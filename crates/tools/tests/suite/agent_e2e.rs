//! The default agent with the real tools, driven by the scripted LLM:
//! create a small Python project, run it, fix it, verify — and secrets never
//! reach an observation or the disk.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_llm::Llm;
use openhands_sdk::secrets::SecretSource;
use openhands_sdk::{Agent, ConversationOptions, LocalConversation};
use openhands_testkit::{ScriptedLlm, Turn};
use openhands_tools::presets::{default_registry, get_default_agent};
use openhands_wire::LlmConfig;
use openhands_wire::state::ExecutionStatus;
use serde_json::json;
use std::sync::Arc;

use crate::support;

use support::observations;

fn agent(turns: Vec<Turn>) -> (Agent, Arc<ScriptedLlm>) {
    let mut config = LlmConfig::new("openai/scripted");
    config.usage_id = "agent".into();
    let backend = Arc::new(ScriptedLlm::from_turns(turns));
    let llm = Llm::with_backend(config.clone(), backend.clone());
    let mut spec = get_default_agent(config, true);
    spec.condenser = None;
    (Agent::with_llm(spec, llm, default_registry()), backend)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_run_fix_and_verify_a_python_program() {
    let ws = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let file = ws.path().join("calc.py");
    let f = file.to_string_lossy().into_owned();
    let turns = vec![
        Turn::tool_call(
            "file_editor",
            json!({"command": "create", "path": f, "file_text": "def add(a, b):\n    return a - b\n\nprint(add(2, 3))\n"}),
        ),
        Turn::tool_call("terminal", json!({"command": "python3 calc.py"})),
        Turn::tool_call(
            "file_editor",
            json!({"command": "str_replace", "path": f, "old_str": "return a - b", "new_str": "return a + b"}),
        ),
        Turn::tool_call("terminal", json!({"command": "python3 calc.py"})),
        Turn::tool_call(
            "task_tracker",
            json!({"command": "plan", "task_list": [{"title": "fix add", "status": "done"}]}),
        ),
        Turn::tool_call("finish", json!({"message": "add() fixed; prints 5"})),
    ];
    let (agent, backend) = agent(turns);
    let c = LocalConversation::new(
        agent,
        ws.path(),
        ConversationOptions {
            persistence_dir: Some(root.path().to_path_buf()),
            ..ConversationOptions::default()
        },
    )
    .unwrap();
    c.send_message("fix calc.py").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    c.close().await;
    assert!(std::fs::read_to_string(&file).unwrap().contains("a + b"));
    let obs = observations(&c);
    let kinds: Vec<&str> = obs
        .iter()
        .map(|(_, o)| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        vec![
            "FileEditorObservation",
            "TerminalObservation",
            "FileEditorObservation",
            "TerminalObservation",
            "TaskTrackerObservation",
            "FinishObservation"
        ]
    );
    let first_run = obs[1].1["content"][0]["text"].as_str().unwrap();
    assert!(first_run.contains("-1"), "{first_run}");
    let second_run = obs[3].1["content"][0]["text"].as_str().unwrap();
    assert!(second_run.contains('5'), "{second_run}");
    assert_eq!(obs[3].1["exit_code"], 0);
    assert_eq!(obs[0].1["prev_exist"], false);
    // the model saw the terminal result with its metadata lines
    let reqs = backend.requests();
    let seen = reqs[2].messages.last().unwrap().text();
    assert!(
        seen.contains("-1") && seen.contains("exit code 0"),
        "{seen}"
    );
    // the task list persisted with the conversation
    assert!(c.persistence_dir().unwrap().join("TASKS.json").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_appear_in_observations_or_on_disk() {
    let ws = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let turns = vec![
        Turn::tool_call(
            "terminal",
            json!({"command": "echo token=$API_TOKEN; echo $API_TOKEN > leak.txt; cat leak.txt"}),
        ),
        Turn::tool_call(
            "file_editor",
            json!({"command": "view", "path": ws.path().join("leak.txt").to_string_lossy()}),
        ),
        Turn::tool_call("finish", json!({"message": "done"})),
    ];
    let (agent, backend) = agent(turns);
    let c = LocalConversation::new(
        agent,
        ws.path(),
        ConversationOptions {
            persistence_dir: Some(root.path().to_path_buf()),
            secrets: vec![(
                "API_TOKEN".into(),
                SecretSource::Static {
                    value: "s3cr3t-value-xyz".into(),
                    description: None,
                },
            )],
            ..ConversationOptions::default()
        },
    )
    .unwrap();
    c.send_message("use the token").unwrap();
    c.run().await.unwrap();
    c.close().await;
    // the command really had the value
    assert_eq!(
        std::fs::read_to_string(ws.path().join("leak.txt"))
            .unwrap()
            .trim(),
        "s3cr3t-value-xyz"
    );
    let obs = observations(&c);
    let terminal = obs[0].1.to_string();
    assert!(terminal.contains("<secret-hidden>"), "{terminal}");
    let mut everything = serde_json::to_string(&c.events()).unwrap();
    for e in std::fs::read_dir(c.persistence_dir().unwrap().join("events")).unwrap() {
        everything.push_str(&String::from_utf8_lossy(
            &std::fs::read(e.unwrap().path()).unwrap(),
        ));
    }
    everything.push_str(
        &std::fs::read_to_string(c.persistence_dir().unwrap().join("base_state.json")).unwrap(),
    );
    for r in backend.requests() {
        everything.push_str(&serde_json::to_string(&r.messages).unwrap());
    }
    assert!(!everything.contains("s3cr3t-value-xyz"));
}
