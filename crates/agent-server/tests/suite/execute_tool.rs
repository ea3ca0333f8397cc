//! `POST /api/conversations/{id}/execute_tool` (this server's route for
//! the SDK's `execute_tool`; the reference server has none): the agent's
//! tool runs outside the loop and its observation is returned, nothing is
//! recorded; unknown tools are 404, refused actions 422, unknown
//! conversations 404, and the route is documented.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use serde_json::json;
use uuid::Uuid;

#[tokio::test]
async fn the_agents_tool_runs_directly_and_errors_are_typed() {
    let env = Env::start(two_step).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();
    let path = format!("/api/conversations/{id}/execute_tool");
    let file = env.workspace().join("direct.txt");
    let (s, body) = env
        .post(
            &path,
            json!({"tool_name": "file_editor", "action": {
                "command": "create", "path": file.to_string_lossy(), "file_text": "made directly\n"
            }}),
        )
        .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(
        body["observation"]["kind"], "FileEditorObservation",
        "{body}"
    );
    assert_eq!(body["observation"]["is_error"], false, "{body}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "made directly\n");
    let kinds: Vec<String> = env.events(id).await.iter().map(label).collect();
    assert_eq!(kinds, vec!["SystemPromptEvent"]);

    let (s, body) = env
        .post(&path, json!({"tool_name": "nope", "action": {}}))
        .await;
    assert_eq!(s, 404, "{body}");
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("Tool 'nope' not found. Available tools: [")
            && detail.contains("'file_editor'"),
        "{detail}"
    );
    let (s, body) = env
        .post(
            &path,
            json!({"tool_name": "file_editor", "action": {"command": "explode"}}),
        )
        .await;
    assert_eq!(s, 422, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .starts_with("Error validating arguments of tool 'file_editor'"),
        "{body}"
    );
    let (s, body) = env.post(&path, json!({"action": {}})).await;
    assert_eq!(s, 422, "{body}");
    assert!(body["detail"].is_array(), "{body}");
    let (s, body) = env
        .post(
            &format!("/api/conversations/{}/execute_tool", Uuid::new_v4()),
            json!({"tool_name": "file_editor", "action": {}}),
        )
        .await;
    assert_eq!((s, body), (404, json!({"detail": "Not Found"})));
    assert_eq!(env.events(id).await.len(), 1);

    let (s, doc) = env.get("/openapi.json").await;
    assert_eq!(s, 200);
    let op = &doc["paths"]["/api/conversations/{conversation_id}/execute_tool"]["post"];
    assert_eq!(
        op["operationId"],
        "execute_tool_api_conversations__conversation_id__execute_tool_post"
    );
    env.stop().await;
}
