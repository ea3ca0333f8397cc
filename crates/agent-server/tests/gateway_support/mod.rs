//! A server with the conversation service, LLM profiles under a private
//! persistence directory, and a scripted mock LLM, for the gateway and
//! profile tests.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use openhands_agent_server::{AppState, Config, ServerHandle};
use openhands_testkit::{MockLlmHandle, MockLlmServer, Script, Turn};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// The session key of authenticated test servers.
pub const KEY: &str = "gw-key";
/// The secret key encrypting profile secrets.
pub const SECRET: &str = "gw-secret-key";

/// How a test server is set up.
#[derive(Clone)]
pub struct Setup {
    pub keys: Vec<String>,
    pub secret_key: Option<String>,
    pub previous_secret_keys: Vec<String>,
    pub timeout: Option<Duration>,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            keys: vec![KEY.into()],
            secret_key: Some(SECRET.into()),
            previous_secret_keys: Vec::new(),
            timeout: None,
        }
    }
}

/// The scripts the tests select with `[[mock:script:NAME]]` markers.
pub fn scripts() -> Script {
    Script::from_turns([Turn::text("Default answer.")])
        .with_script(
            "chat",
            vec![Turn::text("First answer."), Turn::text("Second answer.")],
        )
        .with_script("stream", vec![Turn::text("Streamed answer.")])
        .with_script("responses", vec![Turn::text("Responses answer.")])
        .with_script("slow", vec![Turn::text("Slow answer.").with_delay_ms(1500)])
        .with_script(
            "tool",
            vec![
                Turn::tool_call("terminal", json!({"command": "echo gateway > made.txt"})),
                Turn::tool_call("finish", json!({"message": "Made the file."})),
            ],
        )
        .with_script("broken", vec![Turn::error(400).with_text("unused")])
        .with_toolless_reply(Turn::text("pong"))
}

/// A server, its mock LLM and its directories.
pub struct Gw {
    pub mock: MockLlmHandle,
    pub dir: TempDir,
    pub server: ServerHandle,
    pub client: reqwest::Client,
    pub setup: Setup,
}

pub fn config(dir: &std::path::Path, setup: &Setup) -> Config {
    Config {
        session_api_keys: setup.keys.clone(),
        conversations_path: dir.join("conversations"),
        workspace_path: dir.join("project"),
        bash_events_dir: dir.join("bash_events"),
        persistence_dir: dir.join("persistence"),
        secret_key: setup
            .secret_key
            .clone()
            .map(openhands_wire::SecretString::new),
        previous_secret_keys: setup
            .previous_secret_keys
            .iter()
            .map(|k| openhands_wire::SecretString::new(k.clone()))
            .collect(),
        ..Config::default()
    }
}

impl Gw {
    pub async fn start() -> Gw {
        Self::start_with(Setup::default()).await
    }

    pub async fn start_with(setup: Setup) -> Gw {
        let dir = tempfile::tempdir().unwrap();
        Self::start_in(dir, setup, scripts()).await
    }

    /// Starts on an existing directory (for files prepared beforehand).
    pub async fn start_in(dir: TempDir, setup: Setup, script: Script) -> Gw {
        openhands_agent_server::install_tls_provider();
        std::fs::create_dir_all(dir.path().join("project")).unwrap();
        let mock = MockLlmServer::start(script, 0).await.unwrap();
        let mut config = config(dir.path(), &setup);
        if let Some(t) = setup.timeout {
            config.gateway_timeout_seconds = t.as_secs_f64();
        }
        let state = openhands_agent_server::http::setup::attach_default(AppState::new(config))
            .await
            .unwrap();
        let server = openhands_agent_server::spawn(state.shared(), "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        Gw {
            mock,
            dir,
            server,
            client,
            setup,
        }
    }

    pub async fn stop(self) {
        self.server.shutdown().await.unwrap();
        self.mock.shutdown().await;
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.url())
    }

    pub fn profiles_dir(&self) -> PathBuf {
        self.dir.path().join("persistence").join("profiles")
    }

    pub fn workspace(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    /// The LLM block of a profile talking to the mock.
    pub fn llm(&self) -> Value {
        json!({
            "model": "openai/mock-model",
            "base_url": self.mock.base_url(),
            "api_key": "sk-mock-123",
            "api_mode": "chat",
            "num_retries": 0,
        })
    }

    /// A request with the session key in `X-Session-API-Key`.
    pub fn req(&self, method: &str, path: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method.parse().unwrap(), self.url(path))
            .header("X-Session-API-Key", KEY)
    }

    /// A request authenticated like an OpenAI client.
    pub fn openai(&self, method: &str, path: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method.parse().unwrap(), self.url(path))
            .header("Authorization", format!("Bearer {KEY}"))
    }

    pub async fn send(rb: reqwest::RequestBuilder) -> (u16, reqwest::header::HeaderMap, Value) {
        let resp = rb.send().await.unwrap();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().await.unwrap();
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, headers, value)
    }

    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut rb = self.req(method, path);
        if let Some(b) = body {
            rb = rb.json(&b);
        }
        let (s, _, v) = Self::send(rb).await;
        (s, v)
    }

    /// Saves a profile pointing at the mock; panics unless 201.
    pub async fn save_profile(&self, name: &str) {
        let (s, v) = self
            .call(
                "POST",
                &format!("/api/profiles/{name}"),
                Some(json!({"llm": self.llm(), "include_secrets": true})),
            )
            .await;
        assert_eq!(s, 201, "{v}");
    }

    /// A chat completion; returns status, conversation header and body.
    pub async fn chat(
        &self,
        body: Value,
        conversation: Option<&str>,
    ) -> (u16, Option<String>, Value) {
        let mut rb = self.openai("POST", "/v1/chat/completions").json(&body);
        if let Some(c) = conversation {
            rb = rb.header("X-OpenHands-ServerConversation-ID", c);
        }
        let (s, h, v) = Self::send(rb).await;
        let id = h
            .get("x-openhands-serverconversation-id")
            .map(|v| v.to_str().unwrap().to_string());
        (s, id, v)
    }

    /// Polls a conversation until its status is one of `want`.
    pub async fn wait_status(&self, id: &str, want: &[&str]) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (s, info) = self
                .call("GET", &format!("/api/conversations/{id}"), None)
                .await;
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

    /// Ids of every conversation on the server.
    pub async fn conversation_ids(&self) -> Vec<String> {
        let (s, page) = self
            .call("GET", "/api/conversations/search?limit=100", None)
            .await;
        assert_eq!(s, 200, "{page}");
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap().to_string())
            .collect()
    }

    /// Completion requests the mock received whose messages mention `marker`.
    pub fn llm_requests_with(&self, marker: &str) -> Vec<Value> {
        self.mock
            .completion_requests()
            .into_iter()
            .map(|r| r.body)
            .filter(|b| b.to_string().contains(marker))
            .collect()
    }
}

/// The text of a chat message's content (string or parts).
pub fn content_text(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The system message and the last user message of a Chat request body.
pub fn system_and_user(body: &Value) -> (String, String) {
    let msgs = body["messages"].as_array().unwrap();
    let system = msgs
        .iter()
        .filter(|m| m["role"] == "system")
        .map(content_text)
        .collect::<Vec<_>>()
        .join("\n");
    let user = msgs
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(content_text)
        .unwrap_or_default();
    (system, user)
}
