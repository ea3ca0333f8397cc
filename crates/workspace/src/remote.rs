//! A workspace behind an agent server, driven over its HTTP API.

use crate::git::{GitChange, GitDiff};
use crate::types::{CommandResult, FileOperationResult, WorkspaceError};
use openhands_client::{AgentServerClient, Answer, ClientError, TlsOptions};
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// Timeout of one HTTP request (commands are polled, so this stays short).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Pause between polls of a running command.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// A workspace on a remote agent server.
#[derive(Debug, Clone)]
pub struct RemoteWorkspace {
    working_dir: String,
    client: AgentServerClient,
}

#[derive(Deserialize)]
struct BashCommandRef {
    id: String,
}

#[derive(Deserialize)]
struct BashEventPage {
    items: Vec<Value>,
    next_page_id: Option<String>,
}

impl RemoteWorkspace {
    /// A workspace on the server at `host` (`http://127.0.0.1:8000` or
    /// `https://…`, trusting the system roots).
    pub fn new(
        host: &str,
        api_key: Option<&str>,
        working_dir: impl Into<String>,
    ) -> Result<Self, WorkspaceError> {
        Self::with_tls(host, api_key, working_dir, TlsOptions::default())
    }

    /// [`RemoteWorkspace::new`] trusting the certificates of `tls` (a
    /// private CA's bundle, for instance).
    pub fn with_tls(
        host: &str,
        api_key: Option<&str>,
        working_dir: impl Into<String>,
        tls: TlsOptions,
    ) -> Result<Self, WorkspaceError> {
        let client = AgentServerClient::builder(host)
            .session_api_key(api_key)
            .timeout(REQUEST_TIMEOUT)
            .tls(tls)
            .build()
            .map_err(|e| match e {
                ClientError::InvalidUrl(u) => {
                    WorkspaceError::Invalid(format!("host must be an http(s) URL, got '{u}'"))
                }
                other => WorkspaceError::Transport(other.to_string()),
            })?;
        Ok(Self::with_client(client, working_dir))
    }

    /// A workspace served through `client`.
    pub fn with_client(client: AgentServerClient, working_dir: impl Into<String>) -> Self {
        Self {
            working_dir: working_dir.into(),
            client,
        }
    }

    /// The working directory on the server.
    pub fn working_dir(&self) -> &str {
        &self.working_dir
    }

    /// The server URL.
    pub fn host(&self) -> &str {
        self.client.base()
    }

    /// The session API key.
    pub fn api_key(&self) -> Option<&str> {
        self.client.key()
    }

    /// The agent server's client.
    pub fn client(&self) -> &AgentServerClient {
        &self.client
    }

    fn req(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.client.request(method, path)
    }

    async fn send(&self, r: reqwest::RequestBuilder) -> Result<Answer, WorkspaceError> {
        self.client
            .send(r, "workspace request", &[])
            .await
            .map_err(|e| match e {
                ClientError::Status { status, body, .. } => WorkspaceError::Http { status, body },
                other => WorkspaceError::Transport(other.to_string()),
            })
    }

    /// Whether `GET /alive` answers.
    pub async fn alive(&self) -> bool {
        self.send(self.req(reqwest::Method::GET, "/alive"))
            .await
            .is_ok()
    }

    /// Starts the command on the server and polls its output events until it
    /// exits or `timeout` passes (then it is stopped).
    pub async fn execute_command(
        &self,
        command: &str,
        cwd: Option<&str>,
        timeout: Duration,
    ) -> Result<CommandResult, WorkspaceError> {
        let body = json!({
            "command": command,
            "cwd": cwd.unwrap_or(&self.working_dir),
            "timeout": timeout.as_secs().max(1),
        });
        let started: BashCommandRef = self
            .send(
                self.req(reqwest::Method::POST, "/api/bash/start_bash_command")
                    .json(&body),
            )
            .await?
            .json("workspace request")
            .map_err(|e| WorkspaceError::Transport(e.to_string()))?;
        let started_at = Instant::now();
        let deadline = started_at + timeout + Duration::from_secs(2);
        let mut stdout = String::new();
        let mut stderr = String::new();
        let mut seen = 0usize;
        loop {
            let outputs = self.outputs(&started.id).await?;
            let mut exit: Option<i32> = None;
            for o in outputs.iter().skip(seen) {
                if let Some(s) = o.get("stdout").and_then(Value::as_str) {
                    stdout.push_str(s);
                }
                if let Some(s) = o.get("stderr").and_then(Value::as_str) {
                    stderr.push_str(s);
                }
                if let Some(code) = o.get("exit_code").and_then(Value::as_i64) {
                    exit = Some(i32::try_from(code).unwrap_or(-1));
                }
            }
            seen = outputs.len();
            if let Some(code) = exit {
                // The server kills commands at their timeout and reports -1.
                let timed_out = code == -1 && started_at.elapsed() >= timeout;
                return Ok(CommandResult {
                    command: command.to_string(),
                    exit_code: code,
                    stdout,
                    stderr,
                    timeout_occurred: timed_out,
                });
            }
            if Instant::now() >= deadline {
                let _ = self
                    .send(self.req(
                        reqwest::Method::POST,
                        &format!("/api/bash/bash_commands/{}/stop", started.id),
                    ))
                    .await;
                return Ok(CommandResult {
                    command: command.to_string(),
                    exit_code: -1,
                    stdout,
                    stderr,
                    timeout_occurred: true,
                });
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    async fn outputs(&self, command_id: &str) -> Result<Vec<Value>, WorkspaceError> {
        let mut items = Vec::new();
        let mut page: Option<String> = None;
        loop {
            let mut q: Vec<(&str, String)> = vec![
                ("command_id__eq", command_id.to_string()),
                ("kind__eq", "BashOutput".to_string()),
                ("sort_order", "TIMESTAMP".to_string()),
                ("limit", "100".to_string()),
            ];
            if let Some(p) = &page {
                q.push(("page_id", p.clone()));
            }
            let p: BashEventPage = self
                .send(
                    self.req(reqwest::Method::GET, "/api/bash/bash_events/search")
                        .query(&q),
                )
                .await?
                .json("GET /api/bash/bash_events/search")
                .map_err(|e| WorkspaceError::Transport(e.to_string()))?;
            items.extend(p.items);
            match p.next_page_id {
                Some(n) => page = Some(n),
                None => break,
            }
        }
        items.sort_by_key(|o| o.get("order").and_then(Value::as_i64).unwrap_or(0));
        Ok(items)
    }

    /// Uploads a local file to `destination` on the server.
    pub async fn file_upload(&self, source: &Path, destination: &str) -> FileOperationResult {
        let src = source.to_string_lossy().into_owned();
        let bytes = match tokio::fs::read(source).await {
            Ok(b) => b,
            Err(e) => return FileOperationResult::failed(&src, destination, e.to_string()),
        };
        let size = bytes.len() as u64;
        let name = source
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "file".into());
        let part = reqwest::multipart::Part::bytes(bytes).file_name(name);
        let form = reqwest::multipart::Form::new().part("file", part);
        let dest = self.absolute(destination);
        let r = self
            .req(reqwest::Method::POST, "/api/file/upload")
            .query(&[("path", dest.as_str())])
            .multipart(form);
        match self.send(r).await {
            Ok(_) => FileOperationResult::ok(&src, destination, size),
            Err(e) => FileOperationResult::failed(&src, destination, e.to_string()),
        }
    }

    /// Downloads `source` from the server into a local file.
    pub async fn file_download(&self, source: &str, destination: &Path) -> FileOperationResult {
        let dest = destination.to_string_lossy().into_owned();
        let path = self.absolute(source);
        let r = self
            .req(reqwest::Method::GET, "/api/file/download")
            .query(&[("path", path.as_str())]);
        let bytes = match self.send(r).await {
            Ok(answer) => answer.body,
            Err(e) => return FileOperationResult::failed(source, &dest, e.to_string()),
        };
        if let Some(parent) = destination.parent()
            && let Err(e) = tokio::fs::create_dir_all(parent).await
        {
            return FileOperationResult::failed(source, &dest, e.to_string());
        }
        match tokio::fs::write(destination, &bytes).await {
            Ok(()) => FileOperationResult::ok(source, &dest, bytes.len() as u64),
            Err(e) => FileOperationResult::failed(source, &dest, e.to_string()),
        }
    }

    /// Git changes of the repository at `path` on the server.
    pub async fn git_changes(&self, path: &str) -> Result<Vec<GitChange>, WorkspaceError> {
        let p = self.absolute(path);
        self.send(
            self.req(reqwest::Method::GET, "/api/git/changes")
                .query(&[("path", p.as_str())]),
        )
        .await?
        .json("workspace git request")
        .map_err(|e| WorkspaceError::Transport(e.to_string()))
    }

    /// Git diff of the file at `path` on the server.
    pub async fn git_diff(&self, path: &str) -> Result<GitDiff, WorkspaceError> {
        let p = self.absolute(path);
        self.send(
            self.req(reqwest::Method::GET, "/api/git/diff")
                .query(&[("path", p.as_str())]),
        )
        .await?
        .json("workspace git request")
        .map_err(|e| WorkspaceError::Transport(e.to_string()))
    }

    fn absolute(&self, p: &str) -> String {
        if p.starts_with('/') {
            p.to_string()
        } else {
            format!("{}/{}", self.working_dir.trim_end_matches('/'), p)
        }
    }
}
