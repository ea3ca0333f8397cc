//! `RemoteConversation` against our agent server started in process, the
//! model being the scripted mock LLM over HTTP: a two-step run driven
//! remotely with its events streamed, pause and interrupt, confirmation,
//! fork, secrets and ask_agent, a socket that reconnects after its
//! connection is cut, typed errors, and the `Conversation` entry point
//! picking remote from the workspace.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures::StreamExt;
use openhands_agent_server::{AppState, Config, ServerHandle};
use openhands_protocol::conversations::{ForkConversationRequest, StartConversationRequest};
use openhands_sdk::remote::SocketState;
use openhands_sdk::{
    Agent, Conversation, ConversationOptions, RemoteConversation, RemoteError, RemoteOptions,
};
use openhands_testkit::{MockLlmServer, Script, Turn};
use openhands_wire::event::{Event, EventBody};
use openhands_wire::state::{ConfirmationPolicy, ExecutionStatus};
use openhands_workspace::Workspace;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};

const KEY: &str = "remote-key";

struct Env {
    _dir: tempfile::TempDir,
    server: ServerHandle,
    mock: openhands_testkit::MockLlmHandle,
    work: PathBuf,
}

async fn env(turns: Vec<Turn>) -> Env {
    openhands_agent_server::install_tls_provider();
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("project");
    std::fs::create_dir_all(&work).unwrap();
    let config = Config {
        session_api_keys: vec![KEY.into()],
        conversations_path: dir.path().join("conversations"),
        workspace_path: work.clone(),
        bash_events_dir: dir.path().join("bash_events"),
        ..Config::default()
    };
    let state = openhands_agent_server::http::setup::attach_default(AppState::new(config))
        .await
        .unwrap();
    let server = openhands_agent_server::spawn(state.shared(), "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let mock = MockLlmServer::start(
        Script::from_turns(turns).with_toolless_reply(Turn::text("A title")),
        0,
    )
    .await
    .unwrap();
    Env {
        _dir: dir,
        server,
        mock,
        work,
    }
}

fn agent_json(mock_url: &str) -> Value {
    json!({
        "kind": "Agent",
        "llm": {"model": "openai/mock-model", "base_url": mock_url, "api_key": "k", "num_retries": 0},
        "tools": [{"name": "terminal"}],
    })
}

fn request(e: &Env) -> StartConversationRequest {
    StartConversationRequest::new(agent_json(&e.mock.base_url()), e.work.to_string_lossy())
}

fn quick() -> RemoteOptions {
    RemoteOptions {
        request_timeout: Duration::from_secs(20),
        ready_timeout: Duration::from_secs(10),
        run_timeout: Duration::from_secs(90),
        poll_interval: Duration::from_millis(500),
        terminal_fallback: Duration::from_secs(30),
        unreachable_timeout: Duration::from_secs(3),
        delete_on_close: false,
        ..RemoteOptions::default()
    }
}

fn kinds(events: &[Event]) -> Vec<&str> {
    events.iter().map(|e| e.body.kind()).collect()
}

fn two_steps(file: &str) -> Vec<Turn> {
    vec![
        Turn::tool_call(
            "terminal",
            json!({"command": format!("echo remote-hello > {file}")}),
        ),
        Turn::tool_call("finish", json!({"message": "done"})),
    ]
}

async fn wait_for(what: &str, secs: u64, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_two_step_run_is_driven_remotely_and_its_events_streamed() {
    let e = env(two_steps("out.txt")).await;
    let conv = RemoteConversation::create(&e.server.url(), Some(KEY), &request(&e), quick())
        .await
        .unwrap();
    assert_eq!(conv.socket_state(), SocketState::Ready(1));
    let streamed = conv.subscribe();
    conv.send_message("write the file").await.unwrap();
    let status = conv.run().await.unwrap();
    assert_eq!(status, ExecutionStatus::Finished);
    assert_eq!(conv.status(), ExecutionStatus::Finished);

    assert_eq!(
        std::fs::read_to_string(e.work.join("out.txt"))
            .unwrap()
            .trim(),
        "remote-hello"
    );
    let events = conv.events();
    let k = kinds(&events);
    for want in [
        "SystemPromptEvent",
        "MessageEvent",
        "ActionEvent",
        "ObservationEvent",
    ] {
        assert!(k.contains(&want), "{want} missing from {k:?}");
    }
    let tools: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Action(a) => Some(a.tool_name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(tools, ["terminal", "finish"]);
    // Each event once, in the server's order.
    let ids: std::collections::HashSet<&str> = events.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids.len(), events.len());
    let (_, page) = reqwest_get(
        &e,
        &format!("/api/conversations/{}/events/search?limit=100", conv.id()),
    )
    .await;
    let server_ids: Vec<String> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_string())
        .collect();
    let client_ids: Vec<String> = events.iter().map(|e| e.id.clone()).collect();
    assert_eq!(client_ids, server_ids);
    // The live stream saw the run's events and the post-run snapshot.
    let live: Vec<Event> = streamed
        .take_until(tokio::time::sleep(Duration::from_millis(300)))
        .collect()
        .await;
    let live_ids: std::collections::HashSet<&str> = live.iter().map(|e| e.id.as_str()).collect();
    for ev in events
        .iter()
        .filter(|e| matches!(e.body, EventBody::Action(_) | EventBody::Observation(_)))
    {
        assert!(
            live_ids.contains(ev.id.as_str()),
            "{} not streamed",
            ev.body.kind()
        );
    }
    assert!(
        live.iter()
            .any(|e| matches!(&e.body, EventBody::StateUpdate(u) if u.key == "full_state"))
    );

    // A second client attached later gets the whole history.
    let other = RemoteConversation::attach(&e.server.url(), Some(KEY), conv.id(), quick())
        .await
        .unwrap();
    assert_eq!(other.events().len(), events.len());
    assert_eq!(other.status(), ExecutionStatus::Finished);
    conv.close().await.unwrap();
}

async fn reqwest_get(e: &Env, path: &str) -> (u16, Value) {
    let r = reqwest::Client::new()
        .get(format!("{}{path}", e.server.url()))
        .header("X-Session-API-Key", KEY)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn pause_and_interrupt_end_a_remote_run_early() {
    // Slow model turns: the run is still in its first step when paused.
    let e = env(vec![
        Turn::tool_call("terminal", json!({"command": "echo one"})).with_delay_ms(1500),
        Turn::tool_call("terminal", json!({"command": "echo two"})).with_delay_ms(1500),
        Turn::tool_call("finish", json!({"message": "done"})).with_delay_ms(20_000),
    ])
    .await;
    let conv = RemoteConversation::create(&e.server.url(), Some(KEY), &request(&e), quick())
        .await
        .unwrap();
    conv.send_message("go").await.unwrap();
    let runner = tokio::spawn({
        let c = conv.clone();
        async move { c.run().await }
    });
    wait_for("running", 20, || conv.status() == ExecutionStatus::Running).await;
    conv.pause().await.unwrap();
    let status = tokio::time::timeout(Duration::from_secs(30), runner)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(status, ExecutionStatus::Paused);

    // Resume, then interrupt the model call of the long last turn.
    let runner = tokio::spawn({
        let c = conv.clone();
        async move { c.run().await }
    });
    wait_for("the finish turn", 30, || {
        e.mock.requests().len() >= 3 && conv.status() == ExecutionStatus::Running
    })
    .await;
    let t = Instant::now();
    conv.interrupt().await.unwrap();
    let status = tokio::time::timeout(Duration::from_secs(15), runner)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_ne!(status, ExecutionStatus::Running);
    assert_ne!(status, ExecutionStatus::Finished);
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "interrupt waited for the model"
    );
}

#[tokio::test]
async fn confirmation_fork_secrets_and_ask_agent_work_remotely() {
    let e = env(vec![
        Turn::tool_call("terminal", json!({"command": "echo yes > confirmed.txt"})),
        Turn::tool_call("terminal", json!({"command": "echo no > rejected.txt"})),
        Turn::tool_call("finish", json!({"message": "done"})),
    ])
    .await;
    let mut req = request(&e);
    req.confirmation_policy = ConfirmationPolicy::AlwaysConfirm;
    let conv = RemoteConversation::create(&e.server.url(), Some(KEY), &req, quick())
        .await
        .unwrap();
    conv.update_secrets(Map::from_iter([("TOKEN".to_string(), json!("s3cret"))]))
        .await
        .unwrap();
    conv.send_message("write the files").await.unwrap();
    assert_eq!(
        conv.run().await.unwrap(),
        ExecutionStatus::WaitingForConfirmation
    );
    assert!(!e.work.join("confirmed.txt").exists());
    conv.respond_to_confirmation(true, None).await.unwrap();
    assert_eq!(
        conv.run().await.unwrap(),
        ExecutionStatus::WaitingForConfirmation
    );
    assert!(e.work.join("confirmed.txt").exists());
    conv.respond_to_confirmation(false, Some("no".into()))
        .await
        .unwrap();
    wait_for("the rejection", 10, || {
        conv.events()
            .iter()
            .any(|e| e.body.kind() == "UserRejectObservation")
    })
    .await;
    assert!(!e.work.join("rejected.txt").exists());
    let (_, info) = reqwest_get(&e, &format!("/api/conversations/{}", conv.id())).await;
    assert!(
        info.to_string().contains("TOKEN"),
        "secret registered: {info}"
    );

    let fork = conv
        .fork(&ForkConversationRequest {
            title: Some("forked".into()),
            reset_metrics: true,
            ..ForkConversationRequest::default()
        })
        .await
        .unwrap();
    assert_ne!(fork.id(), conv.id());
    assert!(fork.events().len() >= conv.events().len() - 1);
    assert_eq!(fork.events()[0].body.kind(), conv.events()[0].body.kind());

    conv.set_title("remote title").await.unwrap();
    assert_eq!(conv.info().await.unwrap()["title"], "remote title");

    // The HEAD moves on the server; unknown events are refused.
    let first = conv.events()[1].id.clone();
    assert_eq!(
        conv.navigate_to(Some(&first)).await.unwrap().as_deref(),
        Some(first.as_str())
    );
    assert_eq!(conv.info().await.unwrap()["leaf_event_id"], first.as_str());
    let err = conv.navigate_to(Some("nope")).await.unwrap_err();
    assert_eq!(err.status(), Some(404), "{err}");
    let err = conv.condense().await.unwrap_err();
    assert!(
        err.status().is_some_and(|s| s >= 400),
        "no condenser: {err}"
    );

    // ask_agent reaches the model and records nothing.
    let (llm_calls, events) = (e.mock.requests().len(), conv.events().len());
    conv.ask_agent("what did you do?").await.unwrap();
    assert_eq!(e.mock.requests().len(), llm_calls + 1);
    conv.reconcile().await.unwrap();
    assert_eq!(conv.events().len(), events);

    let id = fork.id();
    fork.delete().await.unwrap();
    let err = RemoteConversation::attach(&e.server.url(), Some(KEY), id, quick())
        .await
        .unwrap_err();
    assert!(matches!(err, RemoteError::NotFound(_)), "{err}");
}

/// A TCP relay to the server whose connections can be cut and new ones refused.
struct Relay {
    url: String,
    blocked: Arc<AtomicBool>,
    conns: Arc<parking_lot::Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl Relay {
    async fn start(target: std::net::SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let blocked = Arc::new(AtomicBool::new(false));
        let conns: Arc<parking_lot::Mutex<Vec<tokio::task::AbortHandle>>> = Arc::default();
        let (b, c) = (blocked.clone(), conns.clone());
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if b.load(Ordering::SeqCst) {
                    drop(inbound);
                    continue;
                }
                let task = tokio::spawn(async move {
                    if let Ok(mut out) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut out).await;
                    }
                });
                c.lock().push(task.abort_handle());
            }
        });
        Self {
            url,
            blocked,
            conns,
        }
    }

    fn cut(&self, block: bool) {
        self.blocked.store(block, Ordering::SeqCst);
        for h in self.conns.lock().drain(..) {
            h.abort();
        }
    }
}

#[tokio::test]
async fn the_event_socket_reconnects_and_catches_up() {
    let e = env(two_steps("late.txt")).await;
    let relay = Relay::start(e.server.addr).await;
    let conv = RemoteConversation::create(&relay.url, Some(KEY), &request(&e), quick())
        .await
        .unwrap();
    let before = conv.events().len();
    relay.cut(true);
    wait_for("the socket to notice", 10, || {
        conv.socket_state() == SocketState::Connecting
    })
    .await;
    // A message recorded while the client is disconnected (sent directly).
    let r = reqwest::Client::new()
        .post(format!(
            "{}/api/conversations/{}/events",
            e.server.url(),
            conv.id()
        ))
        .header("X-Session-API-Key", KEY)
        .json(&json!({"role": "user", "content": [{"type": "text", "text": "while away"}]}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success());
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        conv.events().len(),
        before,
        "nothing can arrive while cut off"
    );
    relay.cut(false);
    wait_for(
        "the reconnect",
        20,
        || matches!(conv.socket_state(), SocketState::Ready(n) if n >= 2),
    )
    .await;
    wait_for("the missed message", 10, || {
        conv.events().iter().any(|e| matches!(&e.body, EventBody::Message(m) if m.llm_message.text().contains("while away")))
    })
    .await;
    // And the conversation still runs to the end through the relay.
    assert_eq!(conv.run().await.unwrap(), ExecutionStatus::Finished);
    assert!(e.work.join("late.txt").exists());
}

#[tokio::test]
async fn bad_hosts_keys_and_ids_are_typed_errors() {
    let e = env(two_steps("x.txt")).await;
    let err = RemoteConversation::create("http://127.0.0.1:9", Some(KEY), &request(&e), quick())
        .await
        .unwrap_err();
    assert!(matches!(err, RemoteError::Unreachable { .. }), "{err}");
    let err = RemoteConversation::create(&e.server.url(), Some("wrong"), &request(&e), quick())
        .await
        .unwrap_err();
    assert!(matches!(err, RemoteError::Unauthorized { .. }), "{err}");
    let id = uuid::Uuid::new_v4();
    let err = RemoteConversation::attach(&e.server.url(), Some(KEY), id, quick())
        .await
        .unwrap_err();
    assert!(matches!(err, RemoteError::NotFound(i) if i == id), "{err}");
    let err = RemoteConversation::create("ftp://x", None, &request(&e), quick())
        .await
        .unwrap_err();
    assert!(matches!(err, RemoteError::InvalidUrl(_)), "{err}");
    // https:// is accepted (see remote_tls); nothing listens there.
    let err = RemoteConversation::create("https://127.0.0.1:9", None, &request(&e), quick())
        .await
        .unwrap_err();
    assert!(matches!(err, RemoteError::Unreachable { .. }), "{err}");
}

#[tokio::test]
async fn the_entry_point_picks_remote_from_the_workspace() {
    let e = env(two_steps("entry.txt")).await;
    let spec = serde_json::from_value(agent_json(&e.mock.base_url())).unwrap();
    let agent = Agent::new(spec, openhands_sdk::tool::ToolRegistry::new()).unwrap();
    let ws = Workspace::new(e.work.to_string_lossy(), Some(&e.server.url()), Some(KEY)).unwrap();
    let conv =
        Conversation::with_options(agent.clone(), &ws, ConversationOptions::default(), quick())
            .await
            .unwrap();
    assert!(conv.is_remote());
    conv.send_message("write it").await.unwrap();
    assert_eq!(conv.run().await.unwrap(), ExecutionStatus::Finished);
    assert!(e.work.join("entry.txt").exists());
    assert!(
        conv.events()
            .iter()
            .any(|e| e.body.kind() == "ObservationEvent")
    );
    // Local-only options are refused by name, not ignored.
    let opts = ConversationOptions {
        persistence_dir: Some(Path::new("/tmp/x").to_path_buf()),
        ..ConversationOptions::default()
    };
    let err = Conversation::with_options(agent, &ws, opts, quick())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("persistence_dir"), "{err}");
}

#[tokio::test]
async fn a_server_that_goes_away_mid_run_ends_run_with_an_error() {
    let e = env(vec![
        Turn::tool_call("terminal", json!({"command": "echo one"})).with_delay_ms(30_000),
    ])
    .await;
    let relay = Relay::start(e.server.addr).await;
    let conv = RemoteConversation::create(&relay.url, Some(KEY), &request(&e), quick())
        .await
        .unwrap();
    conv.send_message("go").await.unwrap();
    let runner = tokio::spawn({
        let c = conv.clone();
        async move { c.run().await }
    });
    wait_for("running", 20, || conv.status() == ExecutionStatus::Running).await;
    let t = Instant::now();
    relay.cut(true);
    let err = tokio::time::timeout(Duration::from_secs(20), runner)
        .await
        .expect("run() must not hang when the server is gone")
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, RemoteError::Run { .. }), "{err}");
    assert!(err.to_string().contains("unreachable"), "{err}");
    assert!(t.elapsed() >= Duration::from_secs(3));
    assert_eq!(conv.socket_state(), SocketState::Connecting);
}

#[tokio::test]
async fn client_tools_travel_to_a_remote_conversation() {
    let e = env(vec![
        Turn::tool_call("notify_user", json!({"text": "half way"})),
        Turn::tool_call("finish", json!({"message": "done"})),
    ])
    .await;
    let spec = serde_json::from_value(agent_json(&e.mock.base_url())).unwrap();
    let agent = Agent::new(spec, openhands_sdk::tool::ToolRegistry::new()).unwrap();
    let ws = Workspace::new(e.work.to_string_lossy(), Some(&e.server.url()), Some(KEY)).unwrap();
    let notify = openhands_sdk::client_tool::ClientToolSpec::new("notify_user", "Show a note.")
        .with_parameters(
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
            .as_object()
            .unwrap()
            .clone(),
    );
    let opts = ConversationOptions {
        agent: openhands_sdk::conversation::AgentOptions {
            client_tools: vec![notify],
            ..Default::default()
        },
        ..ConversationOptions::default()
    };
    let conv = Conversation::with_options(agent, &ws, opts, quick())
        .await
        .unwrap();
    conv.send_message("go").await.unwrap();
    assert_eq!(conv.run().await.unwrap(), ExecutionStatus::Finished);
    let events = conv.events();
    let action = events
        .iter()
        .find_map(|e| match &e.body {
            openhands_wire::event::EventBody::Action(a) if a.tool_name == "notify_user" => {
                a.action.clone()
            }
            _ => None,
        })
        .expect("the client tool's action arrives");
    assert_eq!(
        action,
        json!({"text": "half way", "kind": "ClientAction_notify_user"})
    );
}

#[tokio::test]
async fn execute_tool_runs_the_servers_tool_outside_the_agent_loop() {
    let e = env(vec![]).await;
    let conv = RemoteConversation::create(&e.server.url(), Some(KEY), &request(&e), quick())
        .await
        .unwrap();
    let observation = conv
        .execute_tool(
            "terminal",
            json!({"command": "echo direct > direct.txt && cat direct.txt"}),
        )
        .await
        .unwrap();
    assert_eq!(observation["kind"], "TerminalObservation", "{observation}");
    assert!(observation.to_string().contains("direct"), "{observation}");
    assert_eq!(
        std::fs::read_to_string(e.work.join("direct.txt")).unwrap(),
        "direct\n"
    );
    // The agent was made ready on the server; the call left no event.
    let (status, page) = reqwest_get(
        &e,
        &format!("/api/conversations/{}/events/search", conv.id()),
    )
    .await;
    assert_eq!(status, 200);
    let recorded: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|ev| ev["kind"].as_str())
        .collect();
    assert_eq!(recorded, vec!["SystemPromptEvent"]);

    let err = conv.execute_tool("nope", json!({})).await.unwrap_err();
    assert!(
        matches!(&err, RemoteError::ToolRefused { status: 404, detail }
            if detail.starts_with("Tool 'nope' not found. Available tools: [")
                && detail.contains("'terminal'")),
        "{err}"
    );
    let err = conv
        .execute_tool("terminal", json!({"timeout": 5}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RemoteError::ToolRefused { status: 422, detail }
            if detail.starts_with("Error validating arguments of tool 'terminal'")),
        "{err}"
    );
    // The entry point reaches the same route.
    let any = Conversation::Remote(conv.clone());
    let observation = any
        .execute_tool("terminal", json!({"command": "echo via-entry"}))
        .await
        .unwrap();
    assert!(
        observation.to_string().contains("via-entry"),
        "{observation}"
    );

    conv.delete().await.unwrap();
    let err = conv
        .execute_tool("terminal", json!({"command": "true"}))
        .await
        .unwrap_err();
    assert!(
        matches!(err, RemoteError::NotFound(id) if id == conv.id()),
        "{err}"
    );
}
