//! Conversation lifecycle: pause, interrupt, confirmation accept/reject,
//! run capacity (429), autotitle, idle eviction, webhooks.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::post;
use conversations_support::*;
use openhands_agent_server::config::WebhookSpec;
use openhands_testkit::{Script, Turn};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn with_slow(ws: &std::path::Path) -> Script {
    two_step(ws)
        .with_script("slow", vec![Turn::text("slow answer").with_delay_ms(1500)])
        .with_script(
            "stuck",
            vec![Turn::text("never mind").with_delay_ms(20_000)],
        )
}

#[tokio::test]
async fn pause_records_an_event_and_stops_the_run() {
    let env = Env::start(with_slow).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();
    let mut ws = env.ws(id, "").await;
    assert_eq!(ws.frame().await["key"], "full_state");
    env.send(id, "[[mock:script:slow]] go", true).await;
    // Wait until the run is under way, then pause.
    ws.until(|f| f["key"] == "execution_status" && f["value"] == "running")
        .await;
    let (s, body) = env
        .post(&format!("/api/conversations/{id}/pause"), json!(null))
        .await;
    assert_eq!((s, body), (200, json!({"success": true})));
    let frames = ws.until(|f| f["kind"] == "PauseEvent").await;
    assert_eq!(frames.last().unwrap()["source"], "user");
    let frames = ws
        .until(|f| f["key"] == "full_state" && f["value"]["execution_status"] == "paused")
        .await;
    assert!(!frames.is_empty());
    env.wait_status(id, &["paused", "finished"]).await;
    let events = env.events(id).await;
    assert!(events.iter().any(|e| e["kind"] == "PauseEvent"));
    let (s, _) = env
        .post(
            &format!("/api/conversations/{}/pause", uuid::Uuid::new_v4()),
            json!(null),
        )
        .await;
    assert_eq!(s, 404);
    env.stop().await;
}

#[tokio::test]
async fn interrupt_cancels_the_llm_call_at_once() {
    let env = Env::start(with_slow).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();
    let mut ws = env.ws(id, "").await;
    assert_eq!(ws.frame().await["key"], "full_state");
    env.send(id, "[[mock:script:stuck]] go", true).await;
    ws.until(|f| f["key"] == "execution_status" && f["value"] == "running")
        .await;
    let started = Instant::now();
    let (s, body) = env
        .post(&format!("/api/conversations/{id}/interrupt"), json!(null))
        .await;
    assert_eq!((s, body), (200, json!({"success": true})));
    let frames = ws
        .until(|f| f["key"] == "full_state" && f["value"]["execution_status"] == "paused")
        .await;
    assert!(frames.iter().any(|f| f["kind"] == "InterruptEvent"));
    // Far sooner than the scripted 20 s answer.
    assert!(started.elapsed() < Duration::from_secs(15));
    let live = env
        .service()
        .live(uuid::Uuid::parse_str(id).unwrap())
        .await
        .unwrap()
        .unwrap();
    assert!(live.wait_idle(Duration::from_secs(5)).await);
    // A new run can start afterwards.
    let (s, _) = env
        .post(&format!("/api/conversations/{id}/run"), json!(null))
        .await;
    assert_eq!(s, 200);
    env.stop().await;
}

#[tokio::test]
async fn confirmation_reject_goes_idle_and_accept_runs_the_actions() {
    let env = Env::start(two_step).await;
    let info = env
        .create(json!({"confirmation_policy": {"kind": "AlwaysConfirm"}}))
        .await;
    assert_eq!(info["confirmation_policy"]["kind"], "AlwaysConfirm");
    let id = info["id"].as_str().unwrap();
    env.send(id, "Please create x.txt, then finish.", true)
        .await;
    env.wait_status(id, &["waiting_for_confirmation"]).await;
    assert!(!env.workspace().join("x.txt").exists());

    let (s, body) = env
        .post(
            &format!("/api/conversations/{id}/events/respond_to_confirmation"),
            json!({"accept": false, "reason": "nope"}),
        )
        .await;
    assert_eq!((s, body), (200, json!({"success": true})));
    let idle = env.wait_status(id, &["idle"]).await;
    assert_eq!(idle["execution_status"], "idle");
    let events = env.events(id).await;
    let reject = events
        .iter()
        .find(|e| e["kind"] == "UserRejectObservation")
        .unwrap();
    assert_eq!(reject["rejection_reason"], "nope");
    assert_eq!(reject["rejection_source"], "user");

    // A finish needs no confirmation: the next message ends the conversation
    // without creating the file.
    env.send(id, "Please try again.", true).await;
    env.wait_status(id, &["finished"]).await;
    assert!(!env.workspace().join("x.txt").exists());

    // Accepting runs the pending action.
    let other = env
        .create(json!({"confirmation_policy": {"kind": "AlwaysConfirm"}}))
        .await;
    let other_id = other["id"].as_str().unwrap();
    env.send(other_id, "Please create x.txt, then finish.", true)
        .await;
    env.wait_status(other_id, &["waiting_for_confirmation"])
        .await;
    let (s, _) = env
        .post(
            &format!("/api/conversations/{other_id}/events/respond_to_confirmation"),
            json!({"accept": true}),
        )
        .await;
    assert_eq!(s, 200);
    env.wait_status(other_id, &["finished"]).await;
    assert!(env.workspace().join("x.txt").exists());

    // The policy can be changed.
    let (s, _) = env
        .post(
            &format!("/api/conversations/{id}/confirmation_policy"),
            json!({"policy": {"kind": "NeverConfirm"}}),
        )
        .await;
    assert_eq!(s, 200);
    let (_, got) = env.get(&format!("/api/conversations/{id}")).await;
    assert_eq!(got["confirmation_policy"], json!({"kind": "NeverConfirm"}));
    let (s, err) = env
        .post(
            &format!("/api/conversations/{id}/confirmation_policy"),
            json!({"policy": {"kind": "Sometimes"}}),
        )
        .await;
    assert_eq!(s, 422, "{err}");
    env.stop().await;
}

#[tokio::test]
async fn a_full_run_capacity_answers_429_and_keeps_the_message() {
    let env = Env::start_with(with_slow, |c| c.max_concurrent_runs = 1).await;
    let a = env.create(json!({})).await;
    let b = env.create(json!({})).await;
    let a_id = a["id"].as_str().unwrap();
    let b_id = b["id"].as_str().unwrap();
    env.send(a_id, "[[mock:script:slow]] hold the slot", true)
        .await;
    env.wait_status(a_id, &["running"]).await;

    let (s, body) = env
        .send(b_id, "Please create x.txt, then finish.", true)
        .await;
    assert_eq!(s, 429, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .starts_with("Message saved"),
        "{body}"
    );
    let (_, n) = env
        .get(&format!(
            "/api/conversations/{b_id}/events/count?kind=MessageEvent"
        ))
        .await;
    assert_eq!(n, json!(1));
    let (s, body) = env
        .post(&format!("/api/conversations/{b_id}/run"), json!(null))
        .await;
    assert_eq!(
        (s, body),
        (
            429,
            json!({"detail": "Conversation run limit reached. Retry the request later."})
        )
    );
    let (s, _) = env
        .call(
            "POST",
            "/api/conversations",
            Some(env.start_body(json!({}))),
        )
        .await;
    assert_eq!(s, 429);

    env.wait_status(a_id, &["finished"]).await;
    // The slot is free again: the saved message runs.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (s, _) = env
            .post(&format!("/api/conversations/{b_id}/run"), json!(null))
            .await;
        if s == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "slot never freed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    env.wait_status(b_id, &["finished"]).await;
    env.stop().await;
}

#[tokio::test]
async fn autotitle_sets_a_title_after_the_first_message_and_patch_overrides_it() {
    let env = Env::start(two_step).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();
    assert_eq!(info["title"], Value::Null);
    env.send(id, "Please create x.txt", false).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, got) = env.get(&format!("/api/conversations/{id}")).await;
        if got["title"] == "A short title" {
            break;
        }
        assert!(Instant::now() < deadline, "no title: {}", got["title"]);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    env.call(
        "PATCH",
        &format!("/api/conversations/{id}"),
        Some(json!({"title": "Mine"})),
    )
    .await;
    let (_, got) = env.get(&format!("/api/conversations/{id}")).await;
    assert_eq!(got["title"], "Mine");

    let off = env.create(json!({"autotitle": false})).await;
    let off_id = off["id"].as_str().unwrap();
    env.send(off_id, "hello there", false).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, got) = env.get(&format!("/api/conversations/{off_id}")).await;
    assert_eq!(got["title"], Value::Null);
    env.stop().await;
}

#[tokio::test]
async fn idle_conversations_leave_memory_and_come_back_on_access() {
    let env = Env::start_with(two_step, |c| c.conversation_idle_ttl_seconds = Some(0.3)).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();
    env.send(id, "Please create x.txt, then finish.", true)
        .await;
    // The run's last event (its stats) comes after the finished status.
    env.wait_finished_and_settled(id).await;
    let before = env.events(id).await;
    let svc = env.service();
    let deadline = Instant::now() + Duration::from_secs(10);
    while svc.loaded_count() > 0 {
        assert!(Instant::now() < deadline, "never evicted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        env.conversations_dir()
            .join(id.replace('-', ""))
            .join("meta.json")
            .is_file()
    );
    let (s, got) = env.get(&format!("/api/conversations/{id}")).await;
    assert_eq!(s, 200);
    assert_eq!(got["execution_status"], "finished");
    assert_eq!(env.events(id).await, before);
    assert_eq!(svc.loaded_count(), 1);
    // A connected socket keeps it loaded.
    let mut ws = env.ws(id, "").await;
    assert_eq!(ws.frame().await["key"], "full_state");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(svc.loaded_count(), 1);
    env.stop().await;
}

/// One received webhook POST: path (after the base), session key, body.
type Post = (String, Option<String>, Value);

#[derive(Clone, Default)]
struct Received {
    posts: Arc<Mutex<Vec<Post>>>,
}

async fn receiver() -> (String, Received) {
    let received = Received::default();
    async fn events(
        State(r): State<Received>,
        Path(id): Path<String>,
        headers: HeaderMap,
        body: axum::Json<Value>,
    ) {
        let key = headers
            .get("x-session-api-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        r.posts.lock().push((format!("events/{id}"), key, body.0));
    }
    async fn conversations(State(r): State<Received>, headers: HeaderMap, body: axum::Json<Value>) {
        let key = headers
            .get("x-session-api-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        r.posts.lock().push(("conversations".into(), key, body.0));
    }
    let app = Router::new()
        .route("/hook/events/{id}", post(events))
        .route("/hook/conversations", post(conversations))
        .with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, received)
}

#[tokio::test]
async fn webhooks_receive_batched_events_and_conversation_updates() {
    let (url, received) = receiver().await;
    let env = Env::start_with(two_step, move |c| {
        c.webhooks = vec![WebhookSpec {
            base_url: url.clone(),
            event_buffer_size: 4,
            flush_delay: 0.2,
            num_retries: 1,
            retry_delay: 0,
            ..WebhookSpec::default()
        }];
    })
    .await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();
    let hex = id.replace('-', "");
    env.send(id, "Please create x.txt, then finish.", true)
        .await;
    env.wait_status(id, &["finished"]).await;
    // The run's last state updates (its stats) may be committed after the
    // status reads `finished`: compare once the log and the deliveries
    // agree, reading both again until then.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let stored = env.events(id).await;
        let delivered: Vec<Value> = received
            .posts
            .lock()
            .iter()
            .filter(|(p, _, _)| *p == format!("events/{hex}"))
            .flat_map(|(_, _, b)| b.as_array().cloned().unwrap_or_default())
            .filter(|e| e["key"] != "full_state")
            .collect();
        if delivered == stored {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the deliveries never matched the log: {} delivered, {} stored\n{delivered:#?}\n{stored:#?}",
            delivered.len(),
            stored.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let posts = received.posts.lock().clone();
    assert!(posts.iter().all(|(_, key, _)| key.as_deref() == Some(KEY)));
    assert!(
        posts
            .iter()
            .filter(|(p, _, _)| p.starts_with("events/"))
            .all(|(_, _, b)| b.as_array().is_some_and(|a| !a.is_empty() && a.len() <= 4))
    );
    let created = posts.iter().find(|(p, _, _)| p == "conversations").unwrap();
    assert_eq!(created.2["id"], id);

    env.call("DELETE", &format!("/api/conversations/{id}"), None)
        .await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let deleting = received
            .posts
            .lock()
            .iter()
            .any(|(p, _, b)| p == "conversations" && b["execution_status"] == "deleting");
        if deleting {
            break;
        }
        assert!(Instant::now() < deadline, "no deleting notification");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    env.stop().await;
}

#[tokio::test]
async fn deleting_a_running_conversation_stops_it_and_leaves_nothing_behind() {
    let env = Env::start_with(with_slow, |c| c.max_concurrent_runs = 1).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();
    env.send(id, "[[mock:script:stuck]] take forever", true)
        .await;
    env.wait_status(id, &["running"]).await;
    let started = Instant::now();
    let (s, body) = env
        .call("DELETE", &format!("/api/conversations/{id}"), None)
        .await;
    assert_eq!((s, body), (200, json!({"success": true})));
    assert!(started.elapsed() < Duration::from_secs(15));
    let dir = env.conversations_dir().join(id.replace('-', ""));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!dir.exists());
    let (s, _) = env.get(&format!("/api/conversations/{id}")).await;
    assert_eq!(s, 404);
    // The run slot was given back.
    let other = env.create(json!({})).await;
    let (s, _) = env
        .send(
            other["id"].as_str().unwrap(),
            "Please create x.txt, then finish.",
            true,
        )
        .await;
    assert_eq!(s, 200);
    env.stop().await;
}

#[tokio::test]
async fn a_run_cut_by_a_shutdown_can_be_resumed_after_the_restart() {
    let mut env = Env::start(with_slow).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap().to_string();
    env.send(&id, "[[mock:script:stuck]] take forever", true)
        .await;
    env.wait_status(&id, &["running"]).await;
    env.restart().await;
    let (s, got) = env.get(&format!("/api/conversations/{id}")).await;
    assert_eq!(s, 200);
    assert_ne!(got["execution_status"], "running", "{got}");
    let (_, n) = env.get("/api/conversations/count?status=running").await;
    assert_eq!(n, json!(0));
    // The saved message is still there and a new run is accepted.
    let events = env.events(&id).await;
    assert!(events.iter().any(|e| e["kind"] == "MessageEvent"));
    let (s, body) = env
        .post(&format!("/api/conversations/{id}/run"), json!(null))
        .await;
    assert_eq!(s, 200, "{body}");
    env.wait_status(&id, &["running"]).await;
    env.stop().await;
}

/// The list as `(id, title, execution_status)`, newest first.
async fn listed(env: &Env) -> Vec<(String, Value, Value)> {
    let (s, page) = env.get("/api/conversations/search?limit=100").await;
    assert_eq!(s, 200, "{page}");
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["id"].as_str().unwrap().to_string(),
                i["title"].clone(),
                i["execution_status"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn stored_conversations_are_listed_and_opened_whatever_state_the_index_is_in() {
    let mut env = Env::start(two_step).await;
    let ran = env.run_two_step(json!({})).await;
    let other = env.create(json!({})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (s, _) = env
        .call(
            "PATCH",
            &format!("/api/conversations/{other}"),
            Some(json!({"title": "Renamed"})),
        )
        .await;
    assert_eq!(s, 200);
    let before = listed(&env).await;
    assert_eq!(before.len(), 2);
    let events = env.events(&ran).await;
    let index = env.conversations_dir().join(".index");

    // A clean restart reads the index written at shutdown.
    env.restart().await;
    assert!(index.join("catalog.json").is_file());
    assert_eq!(listed(&env).await, before);

    // Without an index (as stored by a server that had none), the
    // directories are scanned.
    halt(&mut env).await;
    std::fs::remove_dir_all(&index).unwrap();
    env.restart().await;
    assert_eq!(listed(&env).await, before);
    let (s, got) = env.get(&format!("/api/conversations/{ran}")).await;
    assert_eq!(s, 200);
    assert_eq!(got["execution_status"], "finished");
    assert_eq!(env.events(&ran).await, events);

    // A corrupt index, and an index left open by a crash that misses a
    // conversation, are not trusted either.
    halt(&mut env).await;
    std::fs::write(index.join("catalog.json"), b"{\"version\":1,").unwrap();
    env.restart().await;
    assert_eq!(listed(&env).await, before);
    let (_, n) = env.get("/api/conversations/count").await;
    assert_eq!(n, json!(2));
    halt(&mut env).await;
    let text = std::fs::read_to_string(index.join("catalog.json")).unwrap();
    let mut file: Value = serde_json::from_str(&text).unwrap();
    file["rows"] = json!([]);
    std::fs::write(index.join("catalog.json"), file.to_string()).unwrap();
    std::fs::write(index.join("open"), b"").unwrap();
    env.restart().await;
    assert_eq!(listed(&env).await, before);

    // A conversation directory added while no server ran (copied from
    // another) is found, and a deleted one stays deleted.
    halt(&mut env).await;
    let copy = uuid::Uuid::new_v4();
    let from = env.conversations_dir().join(ran.replace('-', ""));
    let to = env.conversations_dir().join(copy.simple().to_string());
    let ran_uuid = uuid::Uuid::try_parse(&ran).unwrap();
    copy_conversation(&from, &to, ran_uuid, copy);
    env.restart().await;
    let (s, got) = env.get(&format!("/api/conversations/{copy}")).await;
    assert_eq!(s, 200, "{got}");
    assert_eq!(listed(&env).await.len(), 3);
    let (s, _) = env
        .call("DELETE", &format!("/api/conversations/{copy}"), None)
        .await;
    assert_eq!(s, 200);
    env.restart().await;
    assert_eq!(listed(&env).await, before);
    env.stop().await;
}

/// A stored conversation's info is answered the same from the second list
/// on (kept in memory), and as its files are now when they change behind
/// the server's back.
#[tokio::test]
async fn a_stored_conversation_is_listed_as_its_files_are_now() {
    let mut env = Env::start(two_step).await;
    let ran = env.run_two_step(json!({})).await;
    let other = env.create(json!({})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    env.restart().await;
    let list = "/api/conversations/search?limit=100";
    let (s, first) = env.get(list).await;
    assert_eq!(s, 200, "{first}");
    assert_eq!(first["items"].as_array().map(Vec::len), Some(2));
    assert_eq!(env.get(list).await.1, first);
    let (_, got) = env.get(&format!("/api/conversations/{ran}")).await;
    assert_eq!(env.get(&format!("/api/conversations/{ran}")).await.1, got);
    assert_eq!(got["execution_status"], "finished");

    // meta.json replaced (as any writer replaces it) while not loaded.
    let dir = env.conversations_dir().join(other.replace('-', ""));
    let mut meta: Value =
        serde_json::from_slice(&std::fs::read(dir.join("meta.json")).unwrap()).unwrap();
    meta["title"] = json!("Edited on disk");
    std::fs::write(dir.join("meta.json.new"), meta.to_string()).unwrap();
    #[allow(clippy::disallowed_methods)]
    std::fs::rename(dir.join("meta.json.new"), dir.join("meta.json")).unwrap();
    let (_, after) = env.get(list).await;
    let item = after["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == json!(other))
        .unwrap()
        .clone();
    assert_eq!(item["title"], "Edited on disk");
    let (_, got) = env.get(&format!("/api/conversations/{other}")).await;
    assert_eq!(got["title"], "Edited on disk");
    env.stop().await;
}

/// Stops the server (a later `restart` starts a new one).
async fn halt(env: &mut Env) {
    if let Some(h) = env.server.take() {
        h.shutdown().await.unwrap();
    }
}

/// Copies a stored conversation to `to`, renamed from `old` to `new`.
fn copy_conversation(
    from: &std::path::Path,
    to: &std::path::Path,
    old: uuid::Uuid,
    new: uuid::Uuid,
) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_conversation(&entry.path(), &target, old, new);
            continue;
        }
        std::fs::create_dir_all(to).unwrap();
        let bytes = std::fs::read(entry.path()).unwrap();
        let Ok(text) = String::from_utf8(bytes.clone()) else {
            // The head index: binary, naming no conversation.
            std::fs::write(target, bytes).unwrap();
            continue;
        };
        let text = text
            .replace(&old.simple().to_string(), &new.simple().to_string())
            .replace(&old.hyphenated().to_string(), &new.hyphenated().to_string());
        std::fs::write(target, text).unwrap();
    }
}
