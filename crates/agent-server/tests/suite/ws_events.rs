//! The event WebSocket: auth, unknown ids, the two-step run observed frame by
//! frame, resend modes, inbound messages, error frames, slow clients.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use futures::SinkExt;
use serde_json::{Value, json};
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;
use uuid::Uuid;

#[tokio::test]
async fn two_step_run_streams_every_event_in_order_between_full_state_snapshots() {
    let env = Env::start(two_step).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();
    let mut ws = env.ws(id, "").await;
    let first = ws.frame().await;
    assert_eq!(first["kind"], "ConversationStateUpdateEvent");
    assert_eq!(first["key"], "full_state");
    assert_eq!(first["source"], "environment");
    assert_eq!(first["value"]["execution_status"], "idle");
    assert_eq!(first["value"]["id"], id);
    assert_eq!(first["value"]["agent"]["llm"]["api_key"], "**********");
    assert!(first["value"].get("stuck_detection_thresholds").is_none());

    env.send(id, "Please create x.txt, then finish.", false)
        .await;
    let (s, _) = env
        .post(&format!("/api/conversations/{id}/run"), json!(null))
        .await;
    assert_eq!(s, 200);
    let frames = ws.until(is_settled_full_state).await;
    let labels: Vec<String> = frames.iter().map(label).collect();
    let expected_core = [
        "SystemPromptEvent",
        "MessageEvent",
        "CSUE:last_user_message_id",
        "CSUE:execution_status",
        "Action:file_editor",
        "Obs:file_editor",
        "Action:finish",
        "Obs:finish",
    ];
    let mut pos = 0;
    for l in &labels {
        if pos < expected_core.len() && l == expected_core[pos] {
            pos += 1;
        }
    }
    assert_eq!(pos, expected_core.len(), "order wrong: {labels:?}");
    assert_eq!(labels.last().map(String::as_str), Some("CSUE:full_state"));
    let last = frames.last().unwrap();
    assert_eq!(last["value"]["execution_status"], "finished");
    assert!(
        labels.iter().filter(|l| *l == "CSUE:stats").count() >= 1,
        "{labels:?}"
    );

    // Every persisted frame is the stored event, byte for byte as JSON.
    let stored = env.events(id).await;
    let persisted: Vec<&Value> = frames.iter().filter(|f| f["key"] != "full_state").collect();
    assert_eq!(persisted.len(), stored.len(), "{labels:?}");
    for (frame, event) in persisted.iter().zip(stored.iter()) {
        assert_eq!(*frame, event);
    }
    // ... and the event files on disk hold the same JSON.
    let dir = env
        .conversations_dir()
        .join(id.replace('-', ""))
        .join("events");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert_eq!(files.len(), persisted.len());
    for (file, frame) in files.iter().zip(persisted.iter()) {
        let on_disk: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
        assert_eq!(&on_disk, *frame);
    }
    env.stop().await;
}

#[tokio::test]
async fn authentication_and_unknown_conversations() {
    let env = Env::start(two_step).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();

    // Wrong first frame: closed with 4001.
    let url = env.ws_url(&format!("/sockets/events/{id}"));
    let (mut s, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
    s.send(Message::Text(
        json!({"type": "auth", "session_api_key": "wrong"})
            .to_string()
            .into(),
    ))
    .await
    .unwrap();
    let mut ws = Ws { stream: s };
    assert!(matches!(
        ws.next(Duration::from_secs(5)).await,
        WsItem::Closed(Some(4001))
    ));

    // A wrong key in the query string is refused before the upgrade.
    let bad = env.ws_url(&format!("/sockets/events/{id}?session_api_key=wrong"));
    assert!(tokio_tungstenite::connect_async(&bad).await.is_err());

    // A right key in the query string works without an auth frame.
    let good = env.ws_url(&format!("/sockets/events/{id}?session_api_key={KEY}"));
    let (s, _) = tokio_tungstenite::connect_async(&good).await.unwrap();
    let mut ws = Ws { stream: s };
    let f = ws.frame().await;
    assert_eq!(f["key"], "full_state");

    // Unknown conversation: 4004 after auth.
    let mut ws = env.ws(&Uuid::new_v4().to_string(), "").await;
    assert!(matches!(
        ws.next(Duration::from_secs(5)).await,
        WsItem::Closed(Some(4004))
    ));

    // No REST call without the key either.
    let r = env
        .client
        .get(env.url("/api/conversations/search"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    env.stop().await;
}

#[tokio::test]
async fn resend_all_replays_history_and_since_filters_by_time() {
    let env = Env::start(two_step).await;
    // No title: its update could land after the events are read.
    let info = env.create(json!({"autotitle": false})).await;
    let id = info["id"].as_str().unwrap();
    env.send(id, "Please create x.txt, then finish.", true)
        .await;
    // The run's last stats update is committed after `finished`.
    env.wait_finished_and_settled(id).await;
    let stored = env.events(id).await;

    let mut ws = env.ws(id, "?resend_mode=all").await;
    let snapshot = ws.frame().await;
    assert_eq!(snapshot["key"], "full_state");
    assert_eq!(snapshot["value"]["execution_status"], "finished");
    for event in &stored {
        assert_eq!(&ws.frame().await, event);
    }
    assert!(matches!(
        ws.next(Duration::from_millis(300)).await,
        WsItem::Timeout
    ));

    let cut = stored[3]["timestamp"].as_str().unwrap();
    let mut ws = env
        .ws(id, &format!("?resend_mode=since&after_timestamp={cut}"))
        .await;
    assert_eq!(ws.frame().await["key"], "full_state");
    let expected: Vec<&Value> = stored
        .iter()
        .filter(|e| e["timestamp"].as_str().unwrap() >= cut)
        .collect();
    for event in expected {
        assert_eq!(&ws.frame().await, event);
    }
    assert!(matches!(
        ws.next(Duration::from_millis(300)).await,
        WsItem::Timeout
    ));
    env.stop().await;
}

#[tokio::test]
async fn inbound_messages_start_a_run_and_bad_frames_get_server_errors() {
    let env = Env::start(two_step).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();
    let mut ws = env.ws(id, "").await;
    assert_eq!(ws.frame().await["key"], "full_state");

    ws.send_json(json!({"type": "auth", "session_api_key": KEY}))
        .await; // ignored
    ws.stream
        .send(Message::Text("{not json".into()))
        .await
        .unwrap();
    let err = ws.frame().await;
    assert_eq!(err["kind"], "ServerErrorEvent");
    assert_eq!(err["code"], "JSONDecodeError");
    assert_eq!(err["source"], "environment");
    ws.send_json(json!({"role": "nobody", "content": []})).await;
    let err = ws.frame().await;
    assert_eq!(err["kind"], "ServerErrorEvent");
    assert_eq!(err["code"], "ValidationError");

    // Far larger than the server's WebSocket read buffer: read whole.
    let long = format!(
        "Please create x.txt, then finish. {}",
        "x".repeat(64 * 1024)
    );
    ws.send_json(json!({"role": "user", "content": [{"type": "text", "text": long}]}))
        .await;
    let frames = ws.until(is_settled_full_state).await;
    assert_eq!(
        frames.last().unwrap()["value"]["execution_status"],
        "finished"
    );
    assert!(frames.iter().any(|f| f["kind"] == "MessageEvent"
        && f["source"] == "user"
        && f["llm_message"]["content"][0]["text"] == long.as_str()));
    env.stop().await;
}

#[tokio::test]
async fn a_client_that_never_reads_does_not_block_the_agent_or_other_clients() {
    let env = Env::start(two_step).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();
    // This client authenticates and then never reads a frame.
    let _stalled = env.ws(id, "").await;
    let mut reader = env.ws(id, "").await;
    assert_eq!(reader.frame().await["key"], "full_state");
    env.send(id, "Please create x.txt, then finish.", true)
        .await;
    let frames = reader.until(is_settled_full_state).await;
    assert_eq!(
        frames.last().unwrap()["value"]["execution_status"],
        "finished"
    );
    env.wait_status(id, &["finished"]).await;
    // Deleting the conversation closes the sockets with 1001.
    let (s, _) = env
        .call("DELETE", &format!("/api/conversations/{id}"), None)
        .await;
    assert_eq!(s, 200);
    assert!(matches!(
        reader.next(Duration::from_secs(5)).await,
        WsItem::Closed(Some(1001))
    ));
    env.stop().await;
}

#[tokio::test]
async fn a_flooded_stalled_client_is_dropped_while_the_server_keeps_going() {
    let env = Env::start(two_step).await;
    let info = env.create(json!({"autotitle": false})).await;
    let id = info["id"].as_str().unwrap();
    let mut stalled = env.ws(id, "").await;
    let mut reader = env.ws(id, "").await;
    assert_eq!(reader.frame().await["key"], "full_state");
    // ~600 frames of ~40 KB: more than the hub keeps and than socket buffers hold.
    let big = "y".repeat(40_000);
    let reading = tokio::spawn(async move {
        let mut n = 0usize;
        while n < 600 {
            let f = reader.frame().await;
            if f["kind"] == "MessageEvent" {
                n += 1;
            }
        }
        n
    });
    for _ in 0..600 {
        let (s, _) = env.send(id, &big, false).await;
        assert_eq!(s, 200);
    }
    assert_eq!(reading.await.unwrap(), 600);
    // The stalled client gets what fitted in the buffers, then a 1013 close.
    let mut closed = None;
    for _ in 0..2000 {
        match stalled.next(Duration::from_secs(10)).await {
            WsItem::Frame(_) => continue,
            WsItem::Closed(code) => {
                closed = code;
                break;
            }
            WsItem::Timeout => break,
        }
    }
    assert_eq!(closed, Some(1013));
    let (_, n) = env
        .get(&format!(
            "/api/conversations/{id}/events/count?kind=MessageEvent"
        ))
        .await;
    assert_eq!(n, json!(600));
    env.stop().await;
}

#[tokio::test]
async fn the_full_state_snapshot_has_the_recorded_reference_keys() {
    let env = Env::start(two_step).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();
    let mut ws = env.ws(id, "").await;
    let first = ws.frame().await;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../compat/recorded/ws_events_frames.json");
    let recorded: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let reference = &recorded["frames"][0];
    let keys = |v: &Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(&first), keys(reference));
    assert_eq!(keys(&first["value"]), keys(&reference["value"]));
    env.stop().await;
}
