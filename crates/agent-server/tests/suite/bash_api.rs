//! Bash routes: execute, start, search, get, batch, clear, stop; on-disk
//! layout; output splitting; conversation-scoped mounts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Options, start, start_with};
use openhands_agent_server::RuntimeScope;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::{Duration, Instant};

async fn wait_for_exit(s: &common::TestServer, base: &str, command_id: &str) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let page: Value = s
            .get(&format!(
                "{base}/bash_events/search?kind__eq=BashOutput&command_id__eq={command_id}"
            ))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let items = page["items"].as_array().unwrap().clone();
        if items.iter().any(|i| !i["exit_code"].is_null()) {
            return items;
        }
        assert!(Instant::now() < deadline, "command did not finish");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn execute_runs_and_joins_output() {
    let s = start().await;
    let r = s
        .post("/api/bash/execute_bash_command")
        .json(&json!({"command": "echo hi; echo err >&2; exit 3"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let out: Value = r.json().await.unwrap();
    assert_eq!(out["kind"], "BashOutput");
    assert_eq!(out["exit_code"], 3);
    assert_eq!(out["stdout"], "hi\n");
    assert_eq!(out["stderr"], "err\n");
    assert_eq!(out["order"], 0);
    assert_eq!(out["id"].as_str().unwrap().len(), 32);
    assert_eq!(out["command_id"].as_str().unwrap().len(), 32);
    assert!(out["timestamp"].as_str().unwrap().ends_with('Z'));

    let r = s
        .post("/api/bash/execute_bash_command")
        .json(&json!({"command": "pwd", "cwd": s.dir.path()}))
        .send()
        .await
        .unwrap();
    let out: Value = r.json().await.unwrap();
    assert_eq!(
        out["stdout"].as_str().unwrap().trim(),
        s.dir.path().to_str().unwrap()
    );
    assert_eq!(out["stderr"], Value::Null);

    // A missing cwd is reported as output, not as an HTTP error.
    let r = s
        .post("/api/bash/execute_bash_command")
        .json(&json!({"command": "true", "cwd": "/nonexistent/dir"}))
        .send()
        .await
        .unwrap();
    let out: Value = r.json().await.unwrap();
    assert_eq!(out["exit_code"], -1);
    assert!(
        out["stderr"]
            .as_str()
            .unwrap()
            .starts_with("Error executing command:")
    );

    // Timeout: the command is killed and reports -1.
    let t = Instant::now();
    let r = s
        .post("/api/bash/execute_bash_command")
        .json(&json!({"command": "sleep 30", "timeout": 1}))
        .send()
        .await
        .unwrap();
    let out: Value = r.json().await.unwrap();
    assert_eq!(out["exit_code"], -1);
    assert!(t.elapsed() < Duration::from_secs(10));
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn events_are_stored_with_the_reference_file_names() {
    let s = start().await;
    let out: Value = s
        .post("/api/bash/execute_bash_command")
        .json(&json!({"command": "echo stored"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let command_id = out["command_id"].as_str().unwrap();
    let mut names: Vec<String> = std::fs::read_dir(s.bash_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names.len(), 2, "{names:?}");
    let cmd_parts: Vec<&str> = names[0].split('_').collect();
    assert_eq!(cmd_parts.len(), 3);
    assert_eq!(cmd_parts[0].len(), 20);
    assert!(cmd_parts[0].chars().all(|c| c.is_ascii_digit()));
    assert_eq!(cmd_parts[1], "BashCommand");
    assert_eq!(cmd_parts[2], command_id);
    let out_parts: Vec<&str> = names[1].split('_').collect();
    assert_eq!(
        &out_parts[1..],
        &["BashOutput", command_id, out["id"].as_str().unwrap()]
    );
    let text = std::fs::read_to_string(s.bash_dir().join(&names[0])).unwrap();
    let stored: Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&String> = stored.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        vec!["command", "cwd", "timeout", "id", "timestamp", "kind"]
    );
    assert_eq!(stored["cwd"], Value::Null);
    assert!(
        text.contains("\n  \"command\""),
        "pretty-printed like the reference"
    );
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn start_search_get_batch_and_clear() {
    let s = start().await;
    let r = s
        .post("/api/bash/start_bash_command")
        .json(&json!({"command": "echo one; sleep 0.2; echo two"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let cmd: Value = r.json().await.unwrap();
    assert_eq!(cmd["kind"], "BashCommand");
    assert_eq!(cmd["timeout"], 300);
    assert_eq!(cmd["cwd"], Value::Null);
    let command_id = cmd["id"].as_str().unwrap().to_string();
    let outputs = wait_for_exit(&s, "/api/bash", &command_id).await;
    assert_eq!(outputs.len(), 1);
    assert_eq!(outputs[0]["stdout"], "one\ntwo\n");

    // Search by kind and command, both orders, paging.
    let all: Value = s
        .get("/api/bash/bash_events/search")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(all["items"].as_array().unwrap().len(), 2);
    assert_eq!(all["next_page_id"], Value::Null);
    assert_eq!(all["items"][0]["kind"], "BashCommand");
    let desc: Value = s
        .get("/api/bash/bash_events/search?sort_order=TIMESTAMP_DESC")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(desc["items"][0]["kind"], "BashOutput");
    let page1: Value = s
        .get("/api/bash/bash_events/search?limit=1")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(page1["items"].as_array().unwrap().len(), 1);
    let next = page1["next_page_id"].as_str().unwrap().to_string();
    let page2: Value = s
        .get(&format!(
            "/api/bash/bash_events/search?limit=1&page_id={next}"
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(page2["items"][0]["kind"], "BashOutput");
    assert_eq!(page2["next_page_id"], Value::Null);
    let commands: Value = s
        .get("/api/bash/bash_events/search?kind__eq=BashCommand")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(commands["items"].as_array().unwrap().len(), 1);
    let later: Value = s
        .get("/api/bash/bash_events/search?order__gt=0")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        later["items"].as_array().unwrap().len(),
        1,
        "only the command has no order"
    );
    let future: Value = s
        .get("/api/bash/bash_events/search?timestamp__gte=2999-01-01T00:00:00")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(future["items"].as_array().unwrap().is_empty());

    // Get one, get a batch (JSON body on GET), unknown ids.
    let one: Value = s
        .get(&format!("/api/bash/bash_events/{command_id}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(one, cmd);
    let r = s
        .get("/api/bash/bash_events/deadbeef")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail": "Not Found"})
    );
    let batch: Value = s
        .get("/api/bash/bash_events/")
        .json(&json!([command_id, "nope"]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(batch, json!([cmd, null]));
    let r = s.get("/api/bash/bash_events/").send().await.unwrap();
    assert_eq!(r.status(), 422);

    let cleared: Value = s
        .delete("/api/bash/bash_events")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(cleared, json!({"cleared_count": 2}));
    let empty: Value = s
        .get("/api/bash/bash_events/search")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(empty, json!({"items": [], "next_page_id": null}));
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn stop_kills_a_running_command() {
    let s = start().await;
    let cmd: Value = s
        .post("/api/bash/start_bash_command")
        .json(&json!({"command": "echo started; sleep 60"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = cmd["id"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t = Instant::now();
    let r = s
        .post(&format!("/api/bash/bash_commands/{id}/stop"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap(), json!({"success": true}));
    assert!(t.elapsed() < Duration::from_secs(5));
    let outputs = wait_for_exit(&s, "/api/bash", &id).await;
    let last = outputs.last().unwrap();
    assert_eq!(last["exit_code"], -15);
    assert_eq!(last["stdout"], "started\n");
    // Stopping again (finished) succeeds; an unknown id is 404.
    let r = s
        .post(&format!("/api/bash/bash_commands/{id}/stop"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = s
        .post(&format!(
            "/api/bash/bash_commands/{}/stop",
            uuid::Uuid::new_v4()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail": "Not Found"})
    );
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn output_over_one_mebi_characters_is_split() {
    let s = start().await;
    // 2.5 Mi characters on stdout.
    let out: Value = s
        .post("/api/bash/execute_bash_command")
        .json(&json!({"command": "head -c 2621440 /dev/zero | tr '\\0' a"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(out["exit_code"], 0);
    assert_eq!(out["stdout"].as_str().unwrap().len(), 2_621_440);
    assert_eq!(out["order"], 2);
    let command_id = out["command_id"].as_str().unwrap();
    let pieces: Value = s
        .get(&format!(
            "/api/bash/bash_events/search?kind__eq=BashOutput&command_id__eq={command_id}"
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let items = pieces["items"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    let sizes: Vec<usize> = items
        .iter()
        .map(|i| i["stdout"].as_str().unwrap().len())
        .collect();
    assert_eq!(sizes, vec![1_048_576, 1_048_576, 524_288]);
    let codes: Vec<&Value> = items.iter().map(|i| &i["exit_code"]).collect();
    assert_eq!(codes, vec![&Value::Null, &Value::Null, &json!(0)]);
    let orders: Vec<i64> = items.iter().map(|i| i["order"].as_i64().unwrap()).collect();
    assert_eq!(orders, vec![0, 1, 2]);
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn conversation_scoped_bash_is_confined_and_kept_apart() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    let conv_dir = dir.path().join("conv");
    std::fs::create_dir_all(workspace.join("sub")).unwrap();
    let id = uuid::Uuid::new_v4();
    let mut runtimes = HashMap::new();
    runtimes.insert(
        id,
        RuntimeScope {
            workspace_root: workspace.clone(),
            conversation_dir: conv_dir.clone(),
        },
    );
    let s = common::start_in(
        dir,
        Options {
            keys: vec![common::KEY.into()],
            runtimes,
            ..Options::default()
        },
    )
    .await;
    let base = format!("/api/conversations/{}/bash", id.simple());

    // Default cwd is the workspace; a cwd inside is fine; outside is 422.
    let out: Value = s
        .post(&format!("{base}/execute_bash_command"))
        .json(&json!({"command": "pwd"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let canonical = workspace.canonicalize().unwrap();
    assert!(
        out["stdout"].as_str().unwrap().trim() == workspace.to_str().unwrap()
            || out["stdout"].as_str().unwrap().trim() == canonical.to_str().unwrap()
    );
    let r = s
        .post(&format!("{base}/execute_bash_command"))
        .json(&json!({"command": "pwd", "cwd": workspace.join("sub")}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    for outside in ["/", "/tmp", "../.."] {
        let cwd = if outside.starts_with('/') {
            outside.to_string()
        } else {
            format!("{}/{outside}", workspace.display())
        };
        let r = s
            .post(&format!("{base}/execute_bash_command"))
            .json(&json!({"command": "pwd", "cwd": cwd}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 422, "{cwd}");
        assert_eq!(
            r.json::<Value>().await.unwrap(),
            json!({"detail": "cwd must be inside the conversation workspace"})
        );
    }
    // History lives in the conversation, not in the server-wide store.
    let page: Value = s
        .get(&format!("{base}/bash_events/search"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(page["items"].as_array().unwrap().len(), 4);
    assert!(conv_dir.join("bash_events").is_dir());
    let global: Value = s
        .get("/api/bash/bash_events/search")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(global["items"].as_array().unwrap().is_empty());

    // Unknown conversation → 404; malformed id → 422.
    let unknown = uuid::Uuid::new_v4();
    let r = s
        .post(&format!(
            "/api/conversations/{unknown}/bash/execute_bash_command"
        ))
        .json(&json!({"command": "true"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail": format!("Conversation not found: {unknown}")})
    );
    let r = s
        .get("/api/conversations/not-a-uuid/bash/bash_events/search")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    assert_eq!(
        r.json::<Value>().await.unwrap()["detail"][0]["loc"],
        json!(["path", "runtime_conversation_id"])
    );
    let cleared: Value = s
        .delete(&format!("{base}/bash_events"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(cleared, json!({"cleared_count": 4}));
    let info: Value = s
        .client
        .get(s.url("/server_info"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        info["capabilities"]
            .as_array()
            .unwrap()
            .contains(&json!("conversation_runtime_routes_v1"))
    );
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn shutdown_kills_running_commands() {
    let s = start_with(Options::default()).await;
    let marker = s.dir.path().join("pid");
    // Written to a temp file and renamed, so the file is never seen empty.
    let cmd = format!(
        "echo $$ > {m}.tmp && mv {m}.tmp {m}; sleep 60",
        m = marker.display()
    );
    let r = s
        .client
        .post(s.url("/api/bash/start_bash_command"))
        .json(&json!({"command": cmd}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !marker.exists() {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid: i32 = std::fs::read_to_string(&marker)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let t = Instant::now();
    let dir = s.bash_dir();
    s.handle.shutdown().await.unwrap();
    assert!(t.elapsed() < Duration::from_secs(10));
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "command outlived the server"
    );
    // The final output (killed) was recorded.
    let names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().any(|n| n.contains("_BashOutput_")));
}
