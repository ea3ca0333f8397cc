//! `/sockets/bash-events`: authentication, live events, replay, inbound commands.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{KEY, Options, start, start_with};
use futures::{SinkExt, StreamExt};
use openhands_agent_server::http::state::Limits;
use serde_json::{Value, json};
use std::time::Duration;
use tokio_tungstenite::connect_async;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn next_json(ws: &mut Ws) -> Value {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("no frame in time")
            .expect("socket ended")
            .expect("socket error");
        match msg {
            Message::Text(t) => return serde_json::from_str(&t).unwrap(),
            Message::Ping(_) | Message::Pong(_) => continue,
            other => panic!("unexpected frame {other:?}"),
        }
    }
}

async fn expect_close(ws: &mut Ws) -> u16 {
    loop {
        match tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("no close in time")
        {
            Some(Ok(Message::Close(Some(frame)))) => return frame.code.into(),
            Some(Ok(Message::Close(None))) | None => return 1005,
            Some(Ok(_)) => continue,
            Some(Err(e)) => panic!("socket error {e}"),
        }
    }
}

#[tokio::test]
async fn first_frame_auth_then_live_events_and_inbound_commands() {
    let s = start().await;
    let (mut ws, _) = connect_async(s.ws_url("/sockets/bash-events"))
        .await
        .unwrap();
    ws.send(Message::Text(
        json!({"type": "auth", "session_api_key": KEY})
            .to_string()
            .into(),
    ))
    .await
    .unwrap();
    // A redundant auth frame is ignored.
    ws.send(Message::Text(json!({"type": "auth"}).to_string().into()))
        .await
        .unwrap();
    // Commands started over HTTP are pushed live.
    let r = s
        .post("/api/bash/start_bash_command")
        .json(&json!({"command": "echo live"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let cmd = next_json(&mut ws).await;
    assert_eq!(cmd["kind"], "BashCommand");
    assert_eq!(cmd["command"], "echo live");
    let out = next_json(&mut ws).await;
    assert_eq!(out["kind"], "BashOutput");
    assert_eq!(out["stdout"], "live\n");
    assert_eq!(out["exit_code"], 0);
    assert_eq!(out["command_id"], cmd["id"]);

    // An inbound ExecuteBashRequest starts a command.
    ws.send(Message::Text(
        json!({"command": "echo from-socket"}).to_string().into(),
    ))
    .await
    .unwrap();
    let cmd = next_json(&mut ws).await;
    assert_eq!(cmd["command"], "echo from-socket");
    let out = next_json(&mut ws).await;
    assert_eq!(out["stdout"], "from-socket\n");

    // A bad frame is answered with a BashError, and the socket stays open.
    ws.send(Message::Text("{not json".into())).await.unwrap();
    let err = next_json(&mut ws).await;
    assert_eq!(err["kind"], "BashError");
    assert_eq!(err["code"], "JSONDecodeError");
    ws.send(Message::Text(json!({"cwd": "/"}).to_string().into()))
        .await
        .unwrap();
    let err = next_json(&mut ws).await;
    assert_eq!(err["kind"], "BashError");
    assert_eq!(err["code"], "ValidationError");
    assert!(err["detail"].as_str().unwrap().contains("command"));
    ws.send(Message::Text(
        json!({"command": "echo still-open"}).to_string().into(),
    ))
    .await
    .unwrap();
    assert_eq!(next_json(&mut ws).await["kind"], "BashCommand");
    ws.close(None).await.unwrap();
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn missing_or_wrong_auth_frame_closes_with_4001() {
    let s = start_with(Options {
        keys: vec![KEY.into()],
        limits: Some(Limits {
            ws_auth_timeout: Duration::from_millis(300),
            ..Limits::default()
        }),
        ..Options::default()
    })
    .await;
    // Silence: closed after the auth timeout.
    let (mut ws, _) = connect_async(s.ws_url("/sockets/bash-events"))
        .await
        .unwrap();
    let started = std::time::Instant::now();
    assert_eq!(expect_close(&mut ws).await, 4001);
    assert!(started.elapsed() >= Duration::from_millis(250));
    // Wrong key in the auth frame.
    let (mut ws, _) = connect_async(s.ws_url("/sockets/bash-events"))
        .await
        .unwrap();
    ws.send(Message::Text(
        json!({"type": "auth", "session_api_key": "nope"})
            .to_string()
            .into(),
    ))
    .await
    .unwrap();
    assert_eq!(expect_close(&mut ws).await, 4001);
    // A first frame that is not an auth frame.
    let (mut ws, _) = connect_async(s.ws_url("/sockets/bash-events"))
        .await
        .unwrap();
    ws.send(Message::Text(
        json!({"command": "echo sneaky"}).to_string().into(),
    ))
    .await
    .unwrap();
    assert_eq!(expect_close(&mut ws).await, 4001);
    // Nothing ran.
    let page: Value = s
        .get("/api/bash/bash_events/search")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(page["items"].as_array().unwrap().is_empty());
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn query_or_header_keys_are_checked_before_the_upgrade() {
    let s = start().await;
    let err = connect_async(s.ws_url("/sockets/bash-events?session_api_key=wrong"))
        .await
        .unwrap_err();
    match err {
        tokio_tungstenite::tungstenite::Error::Http(resp) => assert_eq!(resp.status(), 403),
        other => panic!("expected an HTTP rejection, got {other}"),
    }
    let (mut ws, _) =
        connect_async(s.ws_url(&format!("/sockets/bash-events?session_api_key={KEY}")))
            .await
            .unwrap();
    ws.send(Message::Text(
        json!({"command": "echo via-query"}).to_string().into(),
    ))
    .await
    .unwrap();
    assert_eq!(next_json(&mut ws).await["command"], "echo via-query");
    // Wait for its output so the second socket does not see it.
    assert_eq!(next_json(&mut ws).await["stdout"], "via-query\n");
    let mut req = s
        .ws_url("/sockets/bash-events")
        .into_client_request()
        .unwrap();
    req.headers_mut()
        .insert("X-Session-API-Key", KEY.parse().unwrap());
    let (mut ws2, _) = connect_async(req).await.unwrap();
    ws2.send(Message::Text(
        json!({"command": "echo via-header"}).to_string().into(),
    ))
    .await
    .unwrap();
    let v = next_json(&mut ws2).await;
    assert_eq!(v["command"], "echo via-header");
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn resend_mode_all_replays_stored_events_first() {
    let s = start_with(Options::default()).await;
    let out: Value = s
        .client
        .post(s.url("/api/bash/execute_bash_command"))
        .json(&json!({"command": "echo earlier"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(out["exit_code"], 0);
    // Without keys no auth frame is needed.
    let (mut ws, _) = connect_async(s.ws_url("/sockets/bash-events?resend_mode=all"))
        .await
        .unwrap();
    let first = next_json(&mut ws).await;
    assert_eq!(first["kind"], "BashCommand");
    assert_eq!(first["command"], "echo earlier");
    let second = next_json(&mut ws).await;
    assert_eq!(second["stdout"], "earlier\n");
    let (mut quiet, _) = connect_async(s.ws_url("/sockets/bash-events"))
        .await
        .unwrap();
    ws.send(Message::Text(
        json!({"command": "echo next"}).to_string().into(),
    ))
    .await
    .unwrap();
    assert_eq!(
        next_json(&mut quiet).await["command"],
        "echo next",
        "no replay without resend_mode"
    );
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn server_shutdown_closes_sockets() {
    let s = start_with(Options::default()).await;
    let (mut ws, _) = connect_async(s.ws_url("/sockets/bash-events"))
        .await
        .unwrap();
    let t = std::time::Instant::now();
    s.handle.shutdown().await.unwrap();
    assert!(t.elapsed() < Duration::from_secs(10));
    assert_eq!(expect_close(&mut ws).await, 1001);
}

#[tokio::test]
async fn subscribers_beyond_the_limit_are_turned_away_with_1013() {
    let s = start_with(Options::default()).await;
    let mut open = Vec::new();
    for _ in 0..50 {
        let (ws, _) = connect_async(s.ws_url("/sockets/bash-events"))
            .await
            .unwrap();
        open.push(ws);
    }
    // Subscriptions happen after the upgrade: give them a moment.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (mut extra, _) = connect_async(s.ws_url("/sockets/bash-events"))
        .await
        .unwrap();
    assert_eq!(expect_close(&mut extra).await, 1013);
    // Closing one frees a slot.
    let mut first = open.remove(0);
    first.close(None).await.unwrap();
    drop(first);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (mut again, _) = connect_async(s.ws_url("/sockets/bash-events"))
        .await
        .unwrap();
    again
        .send(Message::Text(
            json!({"command": "echo slot"}).to_string().into(),
        ))
        .await
        .unwrap();
    assert_eq!(next_json(&mut again).await["command"], "echo slot");
    s.handle.shutdown().await.unwrap();
}
