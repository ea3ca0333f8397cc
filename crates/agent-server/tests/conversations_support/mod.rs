//! A server with the conversation service on 127.0.0.1:0, a scripted mock
//! LLM, scratch directories, and small HTTP / WebSocket helpers.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use futures::{SinkExt, StreamExt};
use openhands_agent_server::{AppState, Config, ServerHandle};
use openhands_testkit::{MockLlmHandle, MockLlmServer, Script, Turn};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tempfile::TempDir;
use tokio_tungstenite::tungstenite::Message;

/// The session key of test servers.
pub const KEY: &str = "test-key";

/// A server, its mock LLM and its directories.
pub struct Env {
    pub mock: MockLlmHandle,
    pub dir: TempDir,
    pub server: Option<ServerHandle>,
    pub client: reqwest::Client,
    tweak: Arc<dyn Fn(&mut Config) + Send + Sync>,
}

/// A two-step script: create `<workspace>/x.txt`, then finish with "done".
pub fn two_step(workspace: &std::path::Path) -> Script {
    let path = workspace.join("x.txt");
    Script::from_turns([
        Turn::tool_call(
            "file_editor",
            json!({"command": "create", "path": path.to_string_lossy(), "file_text": "hi\n"}),
        ),
        Turn::tool_call("finish", json!({"message": "done"})),
    ])
    .with_toolless_reply(Turn::text("A short title"))
}

impl Env {
    /// Starts with `script` and default settings.
    pub async fn start(script: impl FnOnce(&std::path::Path) -> Script) -> Env {
        Self::start_with(script, |_| {}).await
    }

    /// Starts with `script`; `tweak` adjusts the configuration (also on
    /// restarts).
    pub async fn start_with(
        script: impl FnOnce(&std::path::Path) -> Script,
        tweak: impl Fn(&mut Config) + Send + Sync + 'static,
    ) -> Env {
        openhands_agent_server::install_tls_provider();
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("project")).unwrap();
        let mock = MockLlmServer::start(script(&dir.path().join("project")), 0)
            .await
            .unwrap();
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        let mut env = Env {
            mock,
            dir,
            server: None,
            client,
            tweak: Arc::new(tweak),
        };
        env.boot().await;
        env
    }

    pub fn config(&self) -> Config {
        let d = self.dir.path();
        let mut c = Config {
            session_api_keys: vec![KEY.into()],
            conversations_path: d.join("conversations"),
            workspace_path: d.join("project"),
            bash_events_dir: d.join("bash_events"),
            persistence_dir: d.join("persistence"),
            secret_key: Some(openhands_wire::SecretString::new("test-secret-key")),
            ..Config::default()
        };
        (self.tweak)(&mut c);
        c
    }

    async fn boot(&mut self) {
        let config = self.config();
        let state = if config.deferred_init {
            openhands_agent_server::http::setup::dormant(config)
        } else {
            openhands_agent_server::http::setup::attach_default(AppState::new(config))
                .await
                .unwrap()
        };
        let handle = openhands_agent_server::spawn(state.shared(), "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        self.server = Some(handle);
    }

    /// Stops the server and starts a new one on the same directories.
    pub async fn restart(&mut self) {
        if let Some(h) = self.server.take() {
            h.shutdown().await.unwrap();
        }
        self.boot().await;
    }

    pub async fn stop(mut self) {
        if let Some(h) = self.server.take() {
            h.shutdown().await.unwrap();
        }
    }

    /// The running conversation service.
    pub fn service(&self) -> openhands_agent_server::service::conversations::ConversationService {
        self.server
            .as_ref()
            .unwrap()
            .state
            .conversations
            .clone()
            .unwrap()
    }

    pub fn workspace(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    pub fn conversations_dir(&self) -> PathBuf {
        self.dir.path().join("conversations")
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.as_ref().unwrap().url())
    }

    pub fn ws_url(&self, path: &str) -> String {
        format!("{}{path}", self.server.as_ref().unwrap().ws_url())
    }

    /// The agent JSON with the given tools, talking to the mock LLM.
    pub fn agent(&self, tools: &[&str]) -> Value {
        json!({
            "kind": "Agent",
            "llm": {"model": "openai/mock-model", "base_url": self.mock.base_url(), "api_key": "k", "num_retries": 0},
            "tools": tools.iter().map(|t| json!({"name": t})).collect::<Vec<_>>(),
        })
    }

    /// A start request body (`extra` fields merged in).
    pub fn start_body(&self, extra: Value) -> Value {
        let mut body = json!({
            "agent": self.agent(&["file_editor"]),
            "workspace": {"kind": "LocalWorkspace", "working_dir": self.workspace().to_string_lossy()},
        });
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                b.insert(k.clone(), v.clone());
            }
        }
        body
    }

    /// Creates a conversation; returns its info (panics unless 201).
    pub async fn create(&self, extra: Value) -> Value {
        let (status, info) = self
            .call("POST", "/api/conversations", Some(self.start_body(extra)))
            .await;
        assert_eq!(status, 201, "{info}");
        info
    }

    /// One authenticated JSON request; returns the status and the body.
    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .client
            .request(method.parse().unwrap(), self.url(path))
            .header("X-Session-API-Key", KEY);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value)
    }

    /// A request with a raw body and content type.
    pub async fn raw(&self, method: &str, path: &str, body: &'static str) -> (u16, Value) {
        let resp = self
            .client
            .request(method.parse().unwrap(), self.url(path))
            .header("X-Session-API-Key", KEY)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.call("GET", path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call("POST", path, Some(body)).await
    }

    /// Sends a user message.
    pub async fn send(&self, id: &str, text: &str, run: bool) -> (u16, Value) {
        self.post(
            &format!("/api/conversations/{id}/events"),
            json!({"role": "user", "content": [{"type": "text", "text": text}], "run": run}),
        )
        .await
    }

    /// Waits for `finished` and for the stats update the run commits after
    /// it (the stats of its last LLM call), so later reads of the event log
    /// all see the same events.
    /// Creates a conversation (the start body with `extra`), runs the
    /// two-step task (see [`two_step`]) to its end and returns the id.
    pub async fn run_two_step(&self, extra: Value) -> String {
        let info = self.create(extra).await;
        let id = info["id"].as_str().unwrap().to_string();
        self.send(&id, "Please create x.txt, then finish.", true)
            .await;
        self.wait_finished_and_settled(&id).await;
        id
    }

    pub async fn wait_finished_and_settled(&self, id: &str) {
        self.wait_status(id, &["finished"]).await;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let events = self.events(id).await;
            let finished = events
                .iter()
                .position(|e| e["key"] == "execution_status" && e["value"] == "finished");
            if finished.is_some_and(|f| events[f..].iter().any(|e| e["key"] == "stats")) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no stats after finished"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// Polls the conversation until its status is one of `want`.
    pub async fn wait_status(&self, id: &str, want: &[&str]) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (s, info) = self.get(&format!("/api/conversations/{id}")).await;
            assert_eq!(s, 200, "{info}");
            let status = info["execution_status"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if want.contains(&status.as_str()) {
                return info;
            }
            assert!(
                Instant::now() < deadline,
                "status stayed {status}, wanted {want:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// All events of a conversation (ascending).
    pub async fn events(&self, id: &str) -> Vec<Value> {
        let mut out = Vec::new();
        let mut page: Option<String> = None;
        loop {
            let path = match &page {
                Some(p) => format!("/api/conversations/{id}/events/search?limit=100&page_id={p}"),
                None => format!("/api/conversations/{id}/events/search?limit=100"),
            };
            let (s, body) = self.get(&path).await;
            assert_eq!(s, 200, "{body}");
            out.extend(body["items"].as_array().unwrap().iter().cloned());
            match body["next_page_id"].as_str() {
                Some(p) => page = Some(p.to_string()),
                None => return out,
            }
        }
    }

    /// Opens the event socket and authenticates with the first frame.
    pub async fn ws(&self, id: &str, query: &str) -> Ws {
        let url = self.ws_url(&format!("/sockets/events/{id}{query}"));
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
}

/// A short name for an event: `kind` or `CSUE:<key>`.
pub fn label(e: &Value) -> String {
    match e["kind"].as_str() {
        Some("ConversationStateUpdateEvent") => format!("CSUE:{}", e["key"].as_str().unwrap_or("")),
        Some("ActionEvent") => format!("Action:{}", e["tool_name"].as_str().unwrap_or("")),
        Some("ObservationEvent") => format!("Obs:{}", e["tool_name"].as_str().unwrap_or("")),
        Some(k) => k.to_string(),
        None => "?".into(),
    }
}

/// A client of the event socket.
pub struct Ws {
    pub stream: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
}

/// What the socket produced next.
#[derive(Debug)]
pub enum WsItem {
    Frame(Value),
    Closed(Option<u16>),
    Timeout,
}

impl Ws {
    /// The next JSON frame, a close, or a timeout.
    pub async fn next(&mut self, within: Duration) -> WsItem {
        loop {
            match tokio::time::timeout(within, self.stream.next()).await {
                Err(_) => return WsItem::Timeout,
                Ok(None) => return WsItem::Closed(None),
                Ok(Some(Err(_))) => return WsItem::Closed(None),
                Ok(Some(Ok(Message::Text(t)))) => {
                    return WsItem::Frame(serde_json::from_str(&t).unwrap());
                }
                Ok(Some(Ok(Message::Close(c)))) => {
                    return WsItem::Closed(c.map(|f| u16::from(f.code)));
                }
                Ok(Some(Ok(_))) => continue,
            }
        }
    }

    /// The next frame (panics on close or timeout).
    pub async fn frame(&mut self) -> Value {
        match self.next(Duration::from_secs(30)).await {
            WsItem::Frame(v) => v,
            other => panic!("expected a frame, got {other:?}"),
        }
    }

    /// Frames until (and including) the first one matching `done`.
    pub async fn until(&mut self, done: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let f = self.frame().await;
            let stop = done(&f);
            out.push(f);
            if stop {
                return out;
            }
        }
    }

    pub async fn send_json(&mut self, v: Value) {
        self.stream
            .send(Message::Text(v.to_string().into()))
            .await
            .unwrap();
    }
}

/// True for a `full_state` snapshot whose status is not `running`.
pub fn is_settled_full_state(f: &Value) -> bool {
    f["kind"] == "ConversationStateUpdateEvent"
        && f["key"] == "full_state"
        && f["value"]["execution_status"] != "running"
        && f["value"]["execution_status"] != "idle"
}
