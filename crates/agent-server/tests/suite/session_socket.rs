//! The session socket (`/sockets/session/{id}`): envelope frames, `sync`
//! first, durable frames numbered by log index, resume with `after_seq`,
//! inbound messages and error frames, auth and close codes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use futures::SinkExt;
use serde_json::{Value, json};
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;
use uuid::Uuid;

/// Connects with first-frame auth.
async fn session(env: &Env, id: &str, query: &str) -> Ws {
    let url = env.ws_url(&format!("/sockets/session/{id}{query}"));
    let (mut stream, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    stream
        .send(Message::Text(
            json!({"type": "auth", "session_api_key": KEY})
                .to_string()
                .into(),
        ))
        .await
        .unwrap();
    Ws { stream }
}

fn is_settled(f: &Value) -> bool {
    f["type"] == "transient" && is_settled_full_state(&f["event"])
}

fn durables(frames: &[Value]) -> Vec<&Value> {
    frames.iter().filter(|f| f["type"] == "durable").collect()
}

/// Every frame until the socket is quiet for `quiet`.
async fn drain(ws: &mut Ws, quiet: Duration) -> Vec<Value> {
    let mut out = Vec::new();
    while let WsItem::Frame(f) = ws.next(quiet).await {
        out.push(f);
    }
    out
}

#[tokio::test]
async fn sync_first_live_durables_then_resume_with_exactly_the_missed_frames() {
    let env = Env::start(two_step).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();

    // Live only: sync without from_seq, then the state snapshot.
    let mut ws = session(&env, id, "").await;
    let sync = ws.frame().await;
    assert_eq!(sync["type"], "sync");
    assert!(sync.get("from_seq").is_none(), "{sync}");
    let snap = ws.frame().await;
    assert_eq!(snap["type"], "transient");
    assert_eq!(snap["event"]["key"], "full_state");

    // A message sent over the socket runs the conversation.
    ws.send_json(json!({"role": "user", "content": [{"type": "text", "text": "Create x.txt, then finish."}]}))
        .await;
    let frames = ws.until(is_settled).await;
    let stored = env.events(id).await;
    let live = durables(&frames);
    assert!(!live.is_empty());
    // Durable frames carry the log index and the stored event.
    for f in &live {
        let seq = f["seq"].as_u64().unwrap() as usize;
        assert_eq!(f["event"], stored[seq], "seq {seq}");
    }
    let seqs: Vec<u64> = live.iter().map(|f| f["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    assert_eq!(*seqs.last().unwrap() as usize, stored.len() - 1);
    // Streaming deltas never ride this channel; every frame is an envelope.
    assert!(
        frames
            .iter()
            .all(|f| f["type"] == "durable" || f["type"] == "transient")
    );
    drop(ws);

    // Resume from the middle: exactly the events after the cursor.
    let cursor = seqs[seqs.len() / 2];
    let mut ws = session(&env, id, &format!("?after_seq={cursor}")).await;
    let sync = ws.frame().await;
    assert_eq!(
        sync,
        json!({"type": "sync", "from_seq": cursor, "through_seq": stored.len() - 1})
    );
    let rest = drain(&mut ws, Duration::from_millis(700)).await;
    let replayed = durables(&rest);
    let expected: Vec<u64> = ((cursor + 1)..stored.len() as u64).collect();
    assert_eq!(
        replayed
            .iter()
            .map(|f| f["seq"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        expected
    );
    for f in &replayed {
        assert_eq!(f["event"], stored[f["seq"].as_u64().unwrap() as usize]);
    }
    // The replay comes before the snapshot, and nothing is sent twice.
    assert_eq!(rest.last().unwrap()["type"], "transient");
    assert_eq!(rest.len(), replayed.len() + 1, "{rest:?}");

    // -1 is the whole history.
    let mut ws = session(&env, id, "?after_seq=-1").await;
    assert_eq!(ws.frame().await["from_seq"], -1);
    let all = drain(&mut ws, Duration::from_millis(700)).await;
    assert_eq!(durables(&all).len(), stored.len());
    env.stop().await;
}

#[tokio::test]
async fn a_reconnect_while_running_gets_every_event_once() {
    let env = Env::start(two_step).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();
    env.send(id, "Create x.txt, then finish.", true).await;
    // Connect with full history while (or after) the run goes on: replay
    // and live frames together hold each log index exactly once.
    let mut ws = session(&env, id, "?after_seq=-1").await;
    assert_eq!(ws.frame().await["type"], "sync");
    env.wait_status(id, &["finished"]).await;
    let frames = drain(&mut ws, Duration::from_millis(800)).await;
    let stored = env.events(id).await;
    let mut seqs: Vec<u64> = durables(&frames)
        .iter()
        .map(|f| f["seq"].as_u64().unwrap())
        .collect();
    let n = seqs.len();
    seqs.dedup();
    assert_eq!(seqs.len(), n, "a seq was sent twice");
    assert_eq!(seqs, (0..stored.len() as u64).collect::<Vec<_>>());
    env.stop().await;
}

#[tokio::test]
async fn bad_inbound_frames_get_error_frames_and_the_connection_stays() {
    let env = Env::start(two_step).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();
    let mut ws = session(&env, id, "").await;
    assert_eq!(ws.frame().await["type"], "sync");
    assert_eq!(ws.frame().await["type"], "transient");
    ws.stream
        .send(Message::Text("not json".into()))
        .await
        .unwrap();
    let e = ws.frame().await;
    assert_eq!(e["type"], "error");
    assert_eq!(e["code"], "JSONDecodeError");
    ws.send_json(json!({"role": "nobody"})).await;
    let e = ws.frame().await;
    assert_eq!(e["code"], "ValidationError");
    // A redundant auth frame is ignored.
    ws.send_json(json!({"type": "auth", "session_api_key": KEY}))
        .await;
    assert!(matches!(
        ws.next(Duration::from_millis(300)).await,
        WsItem::Timeout
    ));
    env.stop().await;
}

#[tokio::test]
async fn auth_unknown_conversations_and_bad_cursors() {
    let env = Env::start(two_step).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();

    let url = env.ws_url(&format!("/sockets/session/{id}"));
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

    let bad = env.ws_url(&format!("/sockets/session/{id}?session_api_key=wrong"));
    assert!(tokio_tungstenite::connect_async(&bad).await.is_err());
    let good = env.ws_url(&format!("/sockets/session/{id}?session_api_key={KEY}"));
    let (s, _) = tokio_tungstenite::connect_async(&good).await.unwrap();
    let mut ws = Ws { stream: s };
    assert_eq!(ws.frame().await["type"], "sync");

    let mut ws = session(&env, &Uuid::new_v4().to_string(), "").await;
    assert!(matches!(
        ws.next(Duration::from_secs(5)).await,
        WsItem::Closed(Some(4004))
    ));

    let bad_cursor = env.ws_url(&format!(
        "/sockets/session/{id}?after_seq=abc&session_api_key={KEY}"
    ));
    assert!(tokio_tungstenite::connect_async(&bad_cursor).await.is_err());
    env.stop().await;
}
