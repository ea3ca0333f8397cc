//! Conversation routes end to end: create (201/200), get, search, count,
//! batch get, PATCH, DELETE, run/409, fork, ask_agent, restart survival.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use serde_json::{Value, json};
use uuid::Uuid;

#[tokio::test]
async fn create_is_201_then_200_for_the_same_id_and_writes_the_reference_layout() {
    let env = Env::start(two_step).await;
    let id = Uuid::new_v4();
    let body = env.start_body(json!({"conversation_id": id.to_string()}));
    let (s, info) = env
        .call("POST", "/api/conversations", Some(body.clone()))
        .await;
    assert_eq!(s, 201, "{info}");
    assert_eq!(info["id"], id.to_string());
    assert_eq!(info["execution_status"], "idle");
    assert_eq!(info["agent"]["llm"]["api_key"], Value::Null);
    assert_eq!(info["runtime_info"], Value::Null);
    assert_eq!(info["tags"], json!({}));
    assert_eq!(
        info["tool_module_qualnames"]["file_editor"],
        "openhands.tools.file_editor.definition"
    );
    assert_eq!(info["client_tools"], json!([]));
    assert!(info["created_at"].as_str().unwrap().ends_with('Z'));
    for key in [
        "stats",
        "secret_registry",
        "confirmation_policy",
        "title",
        "metrics",
        "sub_conversation_ids",
    ] {
        assert!(info.get(key).is_some(), "missing {key}");
    }

    let (s, again) = env.call("POST", "/api/conversations", Some(body)).await;
    assert_eq!(s, 200, "{again}");
    assert_eq!(again["id"], id.to_string());
    assert_eq!(again["created_at"], info["created_at"]);

    // Reference layout: <root>/<hex>/meta.json + base_state.json, no events yet (lazy init).
    let dir = env.conversations_dir().join(id.simple().to_string());
    let meta: Value =
        serde_json::from_slice(&std::fs::read(dir.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["id"], id.simple().to_string());
    assert!(meta.get("agent").is_none());
    assert_eq!(meta["autotitle"], true);
    let state: Value =
        serde_json::from_slice(&std::fs::read(dir.join("base_state.json")).unwrap()).unwrap();
    let key = state["agent"]["llm"]["api_key"].as_str().unwrap();
    assert!(
        key.starts_with("gAAAA"),
        "api key must be encrypted at rest: {key}"
    );
    let (s, n) = env
        .get(&format!("/api/conversations/{id}/events/count"))
        .await;
    assert_eq!((s, n.clone()), (200, json!(0)), "{n}");
    env.stop().await;
}

#[tokio::test]
async fn get_search_count_and_batch() {
    let env = Env::start(two_step).await;
    let a = env.create(json!({})).await;
    let b = env.create(json!({})).await;
    let c = env.create(json!({})).await;
    let ids: Vec<&str> = [&a, &b, &c]
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();

    let (s, got) = env.get(&format!("/api/conversations/{}", ids[1])).await;
    assert_eq!(s, 200);
    assert_eq!(got["id"], ids[1]);
    assert_eq!(got["runtime_info"]["runtime_status"], "available");
    assert_eq!(got["runtime_info"]["can_resume"], true);

    let (s, n) = env.get("/api/conversations/count").await;
    assert_eq!((s, n), (200, json!(3)));
    let (_, n) = env.get("/api/conversations/count?status=finished").await;
    assert_eq!(n, json!(0));
    let (_, n) = env.get("/api/conversations/count?status=idle").await;
    assert_eq!(n, json!(3));

    // Default order: newest first; pages of 2 chained by next_page_id (hex).
    let (s, page) = env.get("/api/conversations/search?limit=2").await;
    assert_eq!(s, 200, "{page}");
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["id"], ids[2]);
    assert_eq!(items[1]["id"], ids[1]);
    let next = page["next_page_id"].as_str().unwrap();
    assert_eq!(next, Uuid::parse_str(ids[0]).unwrap().simple().to_string());
    let (_, page2) = env
        .get(&format!("/api/conversations/search?limit=2&page_id={next}"))
        .await;
    assert_eq!(page2["items"][0]["id"], ids[0]);
    assert_eq!(page2["next_page_id"], Value::Null);
    let (_, asc) = env
        .get("/api/conversations/search?sort_order=CREATED_AT")
        .await;
    assert_eq!(asc["items"][0]["id"], ids[0]);
    let (_, none) = env.get("/api/conversations/search?status=error").await;
    assert_eq!(none["items"], json!([]));

    let unknown = Uuid::new_v4();
    let (s, batch) = env
        .get(&format!("/api/conversations?ids={}&ids={unknown}", ids[0]))
        .await;
    assert_eq!(s, 200);
    assert_eq!(batch[0]["id"], ids[0]);
    assert_eq!(batch[1], Value::Null);
    env.stop().await;
}

#[tokio::test]
async fn patch_updates_title_and_tags() {
    let env = Env::start(two_step).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();
    let (s, body) = env
        .call(
            "PATCH",
            &format!("/api/conversations/{id}"),
            Some(json!({"title": "  My title  ", "tags": {"env": "dev"}})),
        )
        .await;
    assert_eq!((s, body), (200, json!({"success": true})));
    let (_, got) = env.get(&format!("/api/conversations/{id}")).await;
    assert_eq!(got["title"], "My title");
    assert_eq!(got["tags"], json!({"env": "dev"}));
    assert!(got["updated_at"].as_str().unwrap() >= info["updated_at"].as_str().unwrap());
    let meta: Value = serde_json::from_slice(
        &std::fs::read(
            env.conversations_dir()
                .join(id.replace('-', ""))
                .join("meta.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(meta["title"], "My title");

    let (s, err) = env
        .call(
            "PATCH",
            &format!("/api/conversations/{id}"),
            Some(json!({"title": "   "})),
        )
        .await;
    assert_eq!(s, 422);
    assert_eq!(
        err["detail"][0]["msg"],
        "Value error, title must not be blank"
    );
    let (s, err) = env
        .call(
            "PATCH",
            &format!("/api/conversations/{id}"),
            Some(json!({"tags": {"Bad": "x"}})),
        )
        .await;
    assert_eq!(s, 422, "{err}");
    let (s, err) = env
        .call(
            "PATCH",
            &format!("/api/conversations/{}", Uuid::new_v4()),
            Some(json!({"title": "x"})),
        )
        .await;
    assert_eq!((s, err), (404, json!({"detail": "Not Found"})));
    env.stop().await;
}

#[tokio::test]
async fn delete_removes_the_directory_but_keeps_the_workspace() {
    let env = Env::start(two_step).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();
    let dir = env.conversations_dir().join(id.replace('-', ""));
    assert!(dir.is_dir());
    let (s, body) = env
        .call("DELETE", &format!("/api/conversations/{id}"), None)
        .await;
    assert_eq!((s, body), (200, json!({"success": true})));
    assert!(!dir.exists());
    assert!(env.workspace().is_dir());
    let (s, _) = env.get(&format!("/api/conversations/{id}")).await;
    assert_eq!(s, 404);
    let (s, body) = env
        .call("DELETE", &format!("/api/conversations/{id}"), None)
        .await;
    assert_eq!((s, body), (404, json!({"detail": "Not Found"})));
    let (_, n) = env.get("/api/conversations/count").await;
    assert_eq!(n, json!(0));
    env.stop().await;
}

#[tokio::test]
async fn two_step_run_finishes_then_a_second_run_request_is_accepted() {
    let env = Env::start(two_step).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();
    let (s, body) = env
        .send(id, "Please create x.txt, then finish.", false)
        .await;
    assert_eq!((s, body), (200, json!({"success": true})));
    let (s, body) = env
        .post(&format!("/api/conversations/{id}/run"), json!(null))
        .await;
    assert_eq!((s, body), (200, json!({"success": true})));
    let done = env.wait_status(id, &["finished", "error", "stuck"]).await;
    assert_eq!(done["execution_status"], "finished", "{done}");
    assert_eq!(
        std::fs::read_to_string(env.workspace().join("x.txt")).unwrap(),
        "hi\n"
    );
    let (s, r) = env
        .get(&format!("/api/conversations/{id}/agent_final_response"))
        .await;
    assert_eq!((s, r), (200, json!({"response": "done"})));
    let labels: Vec<String> = env.events(id).await.iter().map(label).collect();
    assert_eq!(
        labels.first().map(String::as_str),
        Some("SystemPromptEvent")
    );
    assert!(
        labels.contains(&"Action:file_editor".to_string()),
        "{labels:?}"
    );
    assert!(labels.contains(&"Obs:finish".to_string()), "{labels:?}");
    assert_eq!(
        done["stats"]["usage_to_metrics"]["default"]["accumulated_token_usage"]["prompt_tokens"]
            .as_u64()
            .map(|n| n >= 200),
        Some(true),
        "{}",
        done["stats"]
    );
    env.stop().await;
}

#[tokio::test]
async fn run_while_running_is_409() {
    let env = Env::start(|ws| {
        let mut s = two_step(ws);
        s = s.with_script(
            "slow",
            vec![openhands_testkit::Turn::text("slow answer").with_delay_ms(1500)],
        );
        s
    })
    .await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();
    env.send(id, "[[mock:script:slow]] take your time", false)
        .await;
    let (s, _) = env
        .post(&format!("/api/conversations/{id}/run"), json!(null))
        .await;
    assert_eq!(s, 200);
    let (s, body) = env
        .post(&format!("/api/conversations/{id}/run"), json!(null))
        .await;
    assert_eq!(s, 409, "{body}");
    assert_eq!(
        body,
        json!({"detail": "Conversation already running. Wait for completion or pause first."})
    );
    let done = env.wait_status(id, &["finished", "error"]).await;
    assert_eq!(done["execution_status"], "finished");
    env.stop().await;
}

#[tokio::test]
async fn conversations_survive_a_restart() {
    let mut env = Env::start(two_step).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap().to_string();
    env.send(&id, "Please create x.txt, then finish.", true)
        .await;
    // The run's stats event follows its finished status: read the log
    // once it is there, so that it is the whole log the restart keeps.
    env.wait_finished_and_settled(&id).await;
    let before = env.events(&id).await;
    env.call(
        "PATCH",
        &format!("/api/conversations/{id}"),
        Some(json!({"title": "kept"})),
    )
    .await;

    env.restart().await;
    let (s, got) = env.get(&format!("/api/conversations/{id}")).await;
    assert_eq!(s, 200, "{got}");
    assert_eq!(got["execution_status"], "finished");
    assert_eq!(got["title"], "kept");
    assert_eq!(got["created_at"], info["created_at"]);
    let after = env.events(&id).await;
    assert_eq!(after, before);
    let (_, n) = env.get("/api/conversations/count").await;
    assert_eq!(n, json!(1));
    // The resumed agent still has its (decrypted) key: a new run reaches the LLM.
    let (s, _) = env.send(&id, "once more", true).await;
    assert_eq!(s, 200);
    let again = env.wait_status(&id, &["finished", "error"]).await;
    assert_eq!(again["execution_status"], "finished", "{again}");
    env.stop().await;
}

#[tokio::test]
async fn fork_copies_events_and_rejects_a_taken_id() {
    let env = Env::start(two_step).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();
    env.send(id, "Please create x.txt, then finish.", true)
        .await;
    env.wait_finished_and_settled(id).await;
    let source_events = env.events(id).await;

    let (s, fork) = env
        .post(
            &format!("/api/conversations/{id}/fork"),
            json!({"title": "copy"}),
        )
        .await;
    assert_eq!(s, 201, "{fork}");
    let fid = fork["id"].as_str().unwrap();
    assert_ne!(fid, id);
    assert_eq!(fork["forked_from_conversation_id"], id);
    assert_eq!(fork["title"], "copy");
    assert_eq!(fork["execution_status"], "idle");
    assert_eq!(fork["stats"], json!({"usage_to_metrics": {}}));
    let fork_events = env.events(fid).await;
    assert_eq!(fork_events.len(), source_events.len());
    assert_eq!(fork_events[0]["id"], source_events[0]["id"]);

    // Up to an event only.
    let cut = source_events[1]["id"].as_str().unwrap();
    let (s, partial) = env
        .post(
            &format!("/api/conversations/{id}/fork"),
            json!({"from_event_id": cut}),
        )
        .await;
    assert_eq!(s, 201);
    assert_eq!(partial["forked_from_event_id"], cut);
    assert_eq!(env.events(partial["id"].as_str().unwrap()).await.len(), 2);

    // Empty body is allowed; a taken id is 409; unknown event 404; unknown source 404.
    let (s, _) = env
        .call("POST", &format!("/api/conversations/{id}/fork"), None)
        .await;
    assert_eq!(s, 201);
    let (s, body) = env
        .post(&format!("/api/conversations/{id}/fork"), json!({"id": fid}))
        .await;
    assert_eq!(s, 409, "{body}");
    let (s, body) = env
        .post(
            &format!("/api/conversations/{id}/fork"),
            json!({"from_event_id": "nope"}),
        )
        .await;
    assert_eq!(
        (s, body),
        (404, json!({"detail": "Unknown from_event_id: nope"}))
    );
    let (s, body) = env
        .post(
            &format!("/api/conversations/{}/fork", Uuid::new_v4()),
            json!({}),
        )
        .await;
    assert_eq!(
        (s, body),
        (404, json!({"detail": "Source conversation not found"}))
    );
    let (_, n) = env.get("/api/conversations/count").await;
    assert_eq!(n, json!(4));
    env.stop().await;
}

#[tokio::test]
async fn ask_agent_answers_without_recording_events() {
    let env = Env::start(|ws| {
        two_step(ws).with_script("ask", vec![openhands_testkit::Turn::text("All good.")])
    })
    .await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();
    env.send(id, "hello", false).await;
    let before = env.events(id).await.len();
    let (s, body) = env
        .post(
            &format!("/api/conversations/{id}/ask_agent"),
            json!({"question": "[[mock:script:ask]] What is up?"}),
        )
        .await;
    assert_eq!((s, body), (200, json!({"response": "All good."})));
    assert_eq!(env.events(id).await.len(), before);
    let (s, body) = env
        .post(
            &format!("/api/conversations/{}/ask_agent", Uuid::new_v4()),
            json!({"question": "?"}),
        )
        .await;
    assert_eq!(
        (s, body),
        (404, json!({"detail": "Conversation not found"}))
    );
    let (s, body) = env
        .post(&format!("/api/conversations/{id}/ask_agent"), json!({}))
        .await;
    assert_eq!(s, 422, "{body}");
    env.stop().await;
}

#[tokio::test]
async fn tags_given_at_creation_are_in_the_state_and_meta() {
    let env = Env::start(two_step).await;
    let info = env.create(json!({"tags": {"team": "core"}})).await;
    assert_eq!(info["tags"], json!({"team": "core"}));
    let id = info["id"].as_str().unwrap();
    let meta: Value = serde_json::from_slice(
        &std::fs::read(
            env.conversations_dir()
                .join(id.replace('-', ""))
                .join("meta.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(meta["tags"], json!({"team": "core"}));
    let (_, filtered) = env.get("/api/conversations/search").await;
    assert_eq!(filtered["items"][0]["tags"]["team"], "core");
    env.stop().await;
}

#[tokio::test]
async fn conversation_scoped_bash_and_file_routes_work_inside_the_workspace() {
    let env = Env::start(two_step).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();
    let ws = std::fs::canonicalize(env.workspace()).unwrap();
    let (s, out) = env
        .post(
            &format!("/api/conversations/{id}/bash/execute_bash_command"),
            json!({"command": "pwd", "timeout": 10}),
        )
        .await;
    assert_eq!(s, 200, "{out}");
    let printed = std::fs::canonicalize(out["stdout"].as_str().unwrap().trim()).unwrap();
    assert_eq!(printed, ws);
    std::fs::write(env.workspace().join("inside.txt"), "in").unwrap();
    let inside = ws.join("inside.txt");
    let r = env
        .client
        .get(env.url(&format!("/api/conversations/{id}/file/download")))
        .query(&[("path", inside.to_string_lossy().to_string())])
        .header("X-Session-API-Key", KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.text().await.unwrap(), "in");
    let r = env
        .client
        .get(env.url(&format!("/api/conversations/{id}/file/download")))
        .query(&[("path", "/etc/passwd")])
        .header("X-Session-API-Key", KEY)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_client_error(), "{}", r.status());
    let (s, _) = env
        .post(
            &format!(
                "/api/conversations/{}/bash/execute_bash_command",
                Uuid::new_v4()
            ),
            json!({"command": "pwd"}),
        )
        .await;
    assert_eq!(s, 404);
    // Deleting the conversation also drops its bash service: nothing
    // recreates the removed directory.
    let dir = env.conversations_dir().join(id.replace('-', ""));
    assert!(dir.join("bash_events").is_dir());
    let (s, _) = env
        .call("DELETE", &format!("/api/conversations/{id}"), None)
        .await;
    assert_eq!(s, 200);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(!dir.exists());
    env.stop().await;
}

#[tokio::test]
async fn an_initial_message_with_run_starts_the_agent_at_creation() {
    let env = Env::start(two_step).await;
    let info = env
        .create(json!({"initial_message": {"role": "user", "content": [{"type": "text", "text": "Please create x.txt, then finish."}], "run": true}}))
        .await;
    let id = info["id"].as_str().unwrap();
    let done = env.wait_status(id, &["finished", "error"]).await;
    assert_eq!(done["execution_status"], "finished");
    let events = env.events(id).await;
    assert_eq!(events[1]["kind"], "MessageEvent");
    assert_eq!(
        events[1]["llm_message"]["content"][0]["text"],
        "Please create x.txt, then finish."
    );
    // Without run, the message is only stored.
    let idle = env
        .create(json!({"initial_message": {"content": [{"type": "text", "text": "just saying"}]}}))
        .await;
    let idle_id = idle["id"].as_str().unwrap();
    assert_eq!(idle["execution_status"], "idle");
    let (_, n) = env
        .get(&format!(
            "/api/conversations/{idle_id}/events/count?kind=MessageEvent"
        ))
        .await;
    assert_eq!(n, json!(1));
    env.stop().await;
}

#[tokio::test]
async fn openapi_documents_the_conversation_and_event_routes_with_reference_operation_ids() {
    let env = Env::start(two_step).await;
    let r = env
        .client
        .get(env.url("/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let doc: Value = r.json().await.unwrap();
    let paths = doc["paths"].as_object().unwrap();
    for (path, method, op) in [
        (
            "/api/conversations",
            "post",
            "start_conversation_api_conversations_post",
        ),
        (
            "/api/conversations",
            "get",
            "batch_get_conversations_api_conversations_get",
        ),
        (
            "/api/conversations/search",
            "get",
            "search_conversations_api_conversations_search_get",
        ),
        (
            "/api/conversations/{conversation_id}",
            "patch",
            "update_conversation_api_conversations__conversation_id__patch",
        ),
        (
            "/api/conversations/{conversation_id}/run",
            "post",
            "run_conversation_api_conversations__conversation_id__run_post",
        ),
        (
            "/api/conversations/{conversation_id}/fork",
            "post",
            "fork_conversation_api_conversations__conversation_id__fork_post",
        ),
        (
            "/api/conversations/{conversation_id}/events/search",
            "get",
            "search_conversation_events_api_conversations__conversation_id__events_search_get",
        ),
        (
            "/api/conversations/{conversation_id}/events/respond_to_confirmation",
            "post",
            "respond_to_confirmation_api_conversations__conversation_id__events_respond_to_confirmation_post",
        ),
    ] {
        assert_eq!(paths[path][method]["operationId"], op, "{method} {path}");
    }
    let start = &paths["/api/conversations"]["post"];
    assert!(start["responses"].get("201").is_some());
    assert!(start["responses"].get("429").is_some());
    assert!(
        doc["components"]["schemas"]
            .get("StartConversationRequest")
            .is_some()
    );
    // The standalone description has them too.
    let standalone = serde_json::to_value(openhands_agent_server::openapi()).unwrap();
    assert!(
        standalone["paths"]
            .get("/api/conversations/{conversation_id}/events")
            .is_some()
    );
    env.stop().await;
}

/// Top-level keys of a recorded reference answer.
fn recorded_keys(name: &str, pick: impl Fn(&Value) -> &Value) -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../compat/recorded")
        .join(name);
    let v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let mut keys: Vec<String> = pick(&v["body"])
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    keys.sort();
    keys
}

fn keys_of(v: &Value) -> Vec<String> {
    let mut keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    keys
}

#[tokio::test]
async fn answers_have_the_recorded_reference_shapes() {
    let env = Env::start(two_step).await;
    let created = env.create(json!({})).await;
    assert_eq!(
        keys_of(&created),
        recorded_keys("conversation_create.json", |b| b)
    );
    let id = created["id"].as_str().unwrap();
    env.send(id, "Please create x.txt, then finish.", true)
        .await;
    let got = env.wait_status(id, &["finished"]).await;
    assert_eq!(keys_of(&got), recorded_keys("conversation_get.json", |b| b));
    assert_eq!(
        keys_of(&got["runtime_info"]),
        recorded_keys("conversation_get.json", |b| &b["runtime_info"])
    );
    let (_, page) = env.get("/api/conversations/search?limit=10").await;
    assert_eq!(
        keys_of(&page),
        recorded_keys("conversation_search.json", |b| b)
    );
    assert_eq!(
        keys_of(&page["items"][0]),
        recorded_keys("conversation_search.json", |b| &b["items"][0])
    );
    assert_eq!(
        keys_of(&got["stats"]["usage_to_metrics"]["default"]),
        recorded_keys("conversation_get.json", |b| &b["stats"]["usage_to_metrics"]
            ["default"])
    );
    let (_, events) = env
        .get(&format!("/api/conversations/{id}/events/search?limit=3"))
        .await;
    assert_eq!(
        keys_of(&events),
        recorded_keys("events_search_page.json", |b| b)
    );
    env.stop().await;
}

#[tokio::test]
async fn children_inherit_the_parent_and_run_their_task() {
    let env = Env::start(two_step).await;
    let parent = env.create(json!({"tags": {"team": "core"}})).await;
    let pid = parent["id"].as_str().unwrap();
    let (s, child) = env
        .post(
            &format!("/api/conversations/{pid}/children"),
            json!({"task": "Please create x.txt, then finish.", "title": "sub task"}),
        )
        .await;
    assert_eq!(s, 201, "{child}");
    assert_eq!(child["parent_conversation_id"], pid);
    assert_eq!(child["isolation"], "shared");
    assert_eq!(child["title"], "sub task");
    let cid = child["conversation_id"].as_str().unwrap();
    let done = env.wait_status(cid, &["finished", "error"]).await;
    assert_eq!(done["execution_status"], "finished");
    assert_eq!(done["parent_conversation_id"], pid);
    assert_eq!(done["tags"], json!({"team": "core"}));
    let (_, p) = env.get(&format!("/api/conversations/{pid}")).await;
    assert_eq!(p["sub_conversation_ids"], json!([cid]));
    let (s, _) = env
        .post(
            &format!("/api/conversations/{pid}/children"),
            json!({"task": ""}),
        )
        .await;
    assert_eq!(s, 422);
    let (s, body) = env
        .post(
            &format!("/api/conversations/{}/children", Uuid::new_v4()),
            json!({"task": "x"}),
        )
        .await;
    assert_eq!(
        (s, body),
        (404, json!({"detail": "Parent conversation not found"}))
    );
    env.stop().await;
}

#[tokio::test]
async fn agent_settings_start_a_default_agent_whose_keys_never_leak() {
    let env = Env::start(two_step).await;
    let body = json!({
        "agent_settings": {
            "llm": {"model": "openai/mock-model", "base_url": env.mock.base_url(), "api_key": "sk-settings-key", "num_retries": 0},
            "tools": [{"name": "file_editor"}]
        },
        "workspace": {"working_dir": env.workspace().to_string_lossy()},
    });
    let (s, info) = env.post("/api/conversations", body).await;
    assert_eq!(s, 201, "{info}");
    assert_eq!(
        info["agent"]["condenser"]["kind"],
        "LLMSummarizingCondenser"
    );
    assert_eq!(info["agent"]["condenser"]["llm"]["api_key"], Value::Null);
    assert!(!info.to_string().contains("sk-settings-key"));
    let id = info["id"].as_str().unwrap();
    let state = std::fs::read_to_string(
        env.conversations_dir()
            .join(id.replace('-', ""))
            .join("base_state.json"),
    )
    .unwrap();
    assert!(!state.contains("sk-settings-key"));
    env.send(id, "Please create x.txt, then finish.", true)
        .await;
    let done = env.wait_status(id, &["finished", "error"]).await;
    assert_eq!(done["execution_status"], "finished", "{done}");
    env.stop().await;
}
