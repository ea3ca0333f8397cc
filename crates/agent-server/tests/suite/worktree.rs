//! `worktree: true` through the server with the scripted LLM: the
//! conversation works in its own git worktree on branch
//! `openhands/<id>` under `conversation_worktree_root`, the original
//! checkout stays untouched, the agent is told where it works, and deleting
//! the conversation removes the worktree but keeps the branch.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use openhands_testkit::{Script, Turn};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

async fn worktree_env() -> Env {
    let env = Env::start_with(
        |_| {
            Script::from_turns([
                Turn::tool_call("terminal", json!({"command": "echo changed > README.md"})),
                Turn::tool_call("finish", json!({"message": "edited"})),
            ])
            .with_script(
                "child",
                vec![
                    Turn::tool_call(
                        "terminal",
                        json!({"command": "echo from child > README.md && git -c user.name=c -c user.email=c@e commit -qam child"}),
                    ),
                    Turn::tool_call("finish", json!({"message": "committed"})),
                ],
            )
            .with_toolless_reply(Turn::text("A title"))
        },
        |c| {
            c.conversation_worktree_root = c.conversations_path.with_file_name("worktrees");
        },
    )
    .await;
    let ws = env.workspace();
    git(&ws, &["init", "-q"]);
    std::fs::write(ws.join("README.md"), "original\n").unwrap();
    git(&ws, &["add", "."]);
    git(&ws, &["commit", "-q", "-m", "init"]);
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worktree_conversation_works_on_its_own_branch() {
    let env = worktree_env().await;
    let ws = env.workspace();
    let info = env
        .create(json!({
            "agent": env.agent(&["terminal"]),
            "worktree": true,
            "initial_message": {"role": "user", "content": [{"type": "text", "text": "edit the readme"}], "run": true}
        }))
        .await;
    let id = info["id"].as_str().unwrap().to_string();
    let root = env.dir.path().join("worktrees");
    let expected = root.join(&id).join("project");
    assert_eq!(
        info["workspace"]["working_dir"],
        json!(
            expected
                .canonicalize()
                .unwrap_or(expected.clone())
                .to_string_lossy()
        ),
        "{info}"
    );
    env.wait_status(&id, &["finished"]).await;
    // The change is in the worktree, on the conversation's branch; the
    // original checkout is untouched.
    assert_eq!(
        std::fs::read_to_string(expected.join("README.md")).unwrap(),
        "changed\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("README.md")).unwrap(),
        "original\n"
    );
    let branch = format!("openhands/{id}");
    assert_eq!(
        git(&expected, &["rev-parse", "--abbrev-ref", "HEAD"]),
        branch
    );
    // The agent was told about its worktree.
    let agent_request = env
        .mock
        .completion_requests()
        .into_iter()
        .map(|r| r.body)
        .find(|b| b["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .expect("an agent request");
    let text = agent_request.to_string();
    assert!(text.contains("dedicated git worktree"), "{text}");
    assert!(text.contains(&branch), "{text}");

    let (status, _) = env
        .call("DELETE", &format!("/api/conversations/{id}"), None)
        .await;
    assert_eq!(status, 200);
    assert!(!root.join(&id).exists());
    assert_eq!(
        git(&ws, &["branch", "--list", &branch]).trim_start_matches("* "),
        branch
    );
    assert!(!git(&ws, &["worktree", "list"]).contains(&id));
}

#[tokio::test]
async fn worktree_options_are_validated_naming_the_field() {
    let env = worktree_env().await;
    let cases: [(Value, Value); 3] = [
        (
            json!({"base": "tip"}),
            json!(["body", "worktree_options", "base"]),
        ),
        (
            json!({"base": "ref"}),
            json!(["body", "worktree_options", "ref"]),
        ),
        (
            json!({"colour": "red"}),
            json!(["body", "worktree_options", "colour"]),
        ),
    ];
    for (options, loc) in cases {
        let (status, body) = env
            .post(
                "/api/conversations",
                env.start_body(json!({"worktree": true, "worktree_options": options})),
            )
            .await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(body["detail"][0]["loc"], loc, "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_in_a_worktree_commits_on_a_branch_the_parent_sees() {
    let env = worktree_env().await;
    let ws = env.workspace();
    let parent = env.create(json!({"agent": env.agent(&["terminal"])})).await;
    let parent_id = parent["id"].as_str().unwrap();
    let (status, child) = env
        .post(
            &format!("/api/conversations/{parent_id}/children"),
            json!({"task": "[[mock:script:child]] change the readme", "isolation": "worktree"}),
        )
        .await;
    assert_eq!(status, 201, "{child}");
    assert_eq!(child["isolation"], "worktree");
    let child_id = child["conversation_id"].as_str().unwrap().to_string();
    let expected = env
        .dir
        .path()
        .join("worktrees")
        .join(&child_id)
        .join("project");
    assert_eq!(child["workspace"], json!(expected.to_string_lossy()));
    env.wait_status(&child_id, &["finished"]).await;
    // The parent's checkout is untouched; the child's commit is on its branch.
    assert_eq!(
        std::fs::read_to_string(ws.join("README.md")).unwrap(),
        "original\n"
    );
    let branch = format!("openhands/{child_id}");
    assert_eq!(
        git(&ws, &["show", &format!("{branch}:README.md")]),
        "from child"
    );
    // A shared child works in the parent's workspace.
    let (status, shared) = env
        .post(
            &format!("/api/conversations/{parent_id}/children"),
            json!({"task": "[[mock:script:child]] again", "isolation": "shared"}),
        )
        .await;
    assert_eq!(status, 201, "{shared}");
    assert_eq!(shared["isolation"], "shared");
    assert_eq!(shared["workspace"], parent["workspace"]["working_dir"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_starts_a_child_conversation_in_its_own_worktree() {
    let env = Env::start_with(
        |_| {
            Script::from_turns([
                Turn::tool_call(
                    "start_child_conversation",
                    json!({"task": "[[mock:script:child]] change the readme", "title": "readme"}),
                ),
                Turn::tool_call("finish", json!({"message": "child started"})),
            ])
            .with_script(
                "child",
                vec![
                    Turn::tool_call(
                        "terminal",
                        json!({"command": "echo from child > README.md && git -c user.name=c -c user.email=c@e commit -qam child"}),
                    ),
                    Turn::tool_call("finish", json!({"message": "committed"})),
                ],
            )
            .with_toolless_reply(Turn::text("A title"))
        },
        |c| {
            c.conversation_worktree_root = c.conversations_path.with_file_name("worktrees");
        },
    )
    .await;
    let ws = env.workspace();
    git(&ws, &["init", "-q"]);
    std::fs::write(ws.join("README.md"), "original\n").unwrap();
    git(&ws, &["add", "."]);
    git(&ws, &["commit", "-q", "-m", "init"]);
    let (_, tools) = env.get("/api/tools/").await;
    assert!(
        tools
            .as_array()
            .unwrap()
            .contains(&json!("start_child_conversation")),
        "{tools}"
    );
    let parent = env
        .create(json!({
            "agent": env.agent(&["terminal", "start_child_conversation"]),
            "initial_message": {"role": "user", "content": [{"type": "text", "text": "hand the readme to a child"}], "run": true}
        }))
        .await;
    let parent_id = parent["id"].as_str().unwrap().to_string();
    env.wait_status(&parent_id, &["finished"]).await;
    let events = env.events(&parent_id).await;
    let obs = events
        .iter()
        .find(|e| e["observation"]["kind"] == "StartChildConversationObservation")
        .expect("the launch observation");
    let obs = &obs["observation"];
    assert_eq!(obs["is_error"], false, "{obs}");
    assert_eq!(obs["parent_conversation_id"], json!(parent_id));
    assert_eq!(obs["isolation"], "worktree");
    assert_eq!(obs["title"], "readme");
    let child_id = obs["conversation_id"].as_str().unwrap().to_string();
    assert!(
        obs["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with(&format!("Started child conversation {child_id}")),
        "{obs}"
    );
    // The child runs on its own, in its worktree, linked to the parent.
    let child = env.wait_status(&child_id, &["finished"]).await;
    assert_eq!(child["parent_conversation_id"], json!(parent_id));
    let branch = format!("openhands/{child_id}");
    assert_eq!(
        git(&ws, &["show", &format!("{branch}:README.md")]),
        "from child"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("README.md")).unwrap(),
        "original\n"
    );
    let (_, p) = env.get(&format!("/api/conversations/{parent_id}")).await;
    assert_eq!(p["sub_conversation_ids"], json!([child_id]));
    env.stop().await;
}
