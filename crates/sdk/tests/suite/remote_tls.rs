//! `RemoteConversation` and `RemoteWorkspace` over `https://` and `wss://`:
//! our agent server serves TLS itself from `tls_cert_file`/`tls_key_file`
//! with a certificate signed by a CA generated here; the client trusts that
//! CA through its bundle option (and refuses the server without it). The
//! model is the scripted mock LLM over plain HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_agent_server::{AppState, Config, ServerHandle};
use openhands_client::{AgentServerClient, ClientError, TlsOptions};
use openhands_protocol::conversations::StartConversationRequest;
use openhands_sdk::remote::SocketState;
use openhands_sdk::{RemoteConversation, RemoteError, RemoteOptions};
use openhands_testkit::{MockLlmServer, Script, Turn};
use openhands_wire::event::EventBody;
use openhands_wire::state::ExecutionStatus;
use openhands_workspace::RemoteWorkspace;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;

const KEY: &str = "tls-key";

struct Env {
    _dir: tempfile::TempDir,
    server: ServerHandle,
    mock: openhands_testkit::MockLlmHandle,
    work: PathBuf,
    ca_file: PathBuf,
}

async fn env(turns: Vec<Turn>) -> Env {
    openhands_agent_server::install_tls_provider();
    let dir = tempfile::tempdir().unwrap();
    let openhands_testkit::tls::TestCertificates {
        ca: ca_file,
        cert: cert_file,
        key: key_file,
    } = openhands_testkit::tls::certificates(dir.path()).unwrap();
    let work = dir.path().join("project");
    std::fs::create_dir_all(&work).unwrap();
    let config = Config {
        session_api_keys: vec![KEY.into()],
        conversations_path: dir.path().join("conversations"),
        workspace_path: work.clone(),
        bash_events_dir: dir.path().join("bash_events"),
        tls_cert_file: Some(cert_file),
        tls_key_file: Some(key_file),
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
        ca_file,
    }
}

fn options(ca_file: &Path) -> RemoteOptions {
    RemoteOptions {
        request_timeout: Duration::from_secs(20),
        ready_timeout: Duration::from_secs(10),
        run_timeout: Duration::from_secs(90),
        poll_interval: Duration::from_millis(500),
        unreachable_timeout: Duration::from_secs(3),
        tls: TlsOptions::with_ca_file(ca_file),
        ..RemoteOptions::default()
    }
}

#[tokio::test]
async fn a_conversation_runs_over_https_and_wss_with_a_private_ca() {
    let e = env(vec![
        Turn::tool_call("terminal", json!({"command": "echo over-tls > tls.txt"})),
        Turn::tool_call("finish", json!({"message": "done"})),
    ])
    .await;
    let url = e.server.url();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let agent = json!({
        "kind": "Agent",
        "llm": {"model": "openai/mock-model", "base_url": e.mock.base_url(), "api_key": "k", "num_retries": 0},
        "tools": [{"name": "terminal"}],
    });
    let request = StartConversationRequest::new(agent, e.work.to_string_lossy());
    let conv = RemoteConversation::create(&url, Some(KEY), &request, options(&e.ca_file))
        .await
        .unwrap();
    // The event socket subscribed over wss.
    assert_eq!(conv.socket_state(), SocketState::Ready(1));
    conv.send_message("write the file").await.unwrap();
    assert_eq!(conv.run().await.unwrap(), ExecutionStatus::Finished);
    assert_eq!(
        std::fs::read_to_string(e.work.join("tls.txt"))
            .unwrap()
            .trim(),
        "over-tls"
    );
    let actions: Vec<String> = conv
        .events()
        .iter()
        .filter_map(|ev| match &ev.body {
            EventBody::Action(a) => Some(a.tool_name.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(actions, ["terminal", "finish"]);

    // The typed client reads the same conversation over https.
    let client = AgentServerClient::builder(&url)
        .session_api_key(Some(KEY))
        .ca_file(&e.ca_file)
        .build()
        .unwrap();
    let info = client.conversation(conv.id()).await.unwrap();
    assert_eq!(info.id, conv.id());
    assert_eq!(info.execution_status, ExecutionStatus::Finished);
    assert_eq!(client.alive().await.unwrap().status, "ok");

    // A workspace on the same server, over https.
    let ws = RemoteWorkspace::with_tls(
        &url,
        Some(KEY),
        e.work.to_string_lossy(),
        TlsOptions::with_ca_file(&e.ca_file),
    )
    .unwrap();
    let out = ws
        .execute_command("cat tls.txt", None, Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(out.exit_code, 0);
    assert_eq!(out.stdout.trim(), "over-tls");
    conv.close().await.unwrap();
}

#[tokio::test]
async fn a_server_whose_ca_is_not_trusted_is_refused() {
    let e = env(vec![]).await;
    let untrusted = TlsOptions::default();
    let client = AgentServerClient::builder(&e.server.url())
        .session_api_key(Some(KEY))
        .tls(untrusted.clone())
        .build()
        .unwrap();
    let err = client.alive().await.unwrap_err();
    assert!(
        matches!(&err, ClientError::Unreachable { detail, .. } if detail.to_lowercase().contains("certificate")),
        "{err}"
    );
    let agent = json!({"kind": "Agent", "llm": {"model": "openai/mock-model", "base_url": e.mock.base_url()}});
    let request = StartConversationRequest::new(agent, e.work.to_string_lossy());
    let opts = RemoteOptions {
        tls: untrusted,
        ..options(&e.ca_file)
    };
    let err = RemoteConversation::create(&e.server.url(), Some(KEY), &request, opts)
        .await
        .unwrap_err();
    assert!(matches!(err, RemoteError::Unreachable { .. }), "{err}");
    // Plain HTTP to the TLS port gets no answer either.
    let plain = e.server.url().replace("https://", "http://");
    let client = AgentServerClient::builder(&plain)
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    assert!(client.alive().await.is_err());
}
