//! The Rust `RemoteConversation` against the reference server
//! (`python -m openhands.agent_server`, 1.58.2, from the compat venv named
//! by `OPENHANDS_TEST_REFERENCE_PYTHON`, which scripts/test.sh sets): create,
//! a scripted run to `finished` with its events streamed, confirmation,
//! pause and fork — the same client code that drives our server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_protocol::conversations::{ForkConversationRequest, StartConversationRequest};
use openhands_sdk::{RemoteConversation, RemoteOptions};
use openhands_testkit::{MockLlmServer, Script, Turn};
use openhands_wire::event::EventBody;
use openhands_wire::state::{ConfirmationPolicy, ExecutionStatus};
use openhands_workspace::exec::{EnvPolicy, GroupChild, ProcessSpec};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

const KEY: &str = "reference-key";

/// The reference server in its own process group (killed on drop).
struct Reference {
    child: GroupChild,
    url: String,
}

impl Drop for Reference {
    fn drop(&mut self) {
        self.child.kill_group();
    }
}

async fn start_reference(python: &str, run: &Path) -> Reference {
    for sub in [
        "conversations",
        "project",
        "bash_events",
        "persistence",
        "tmux",
        "home",
    ] {
        std::fs::create_dir_all(run.join(sub)).unwrap();
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let p = |s: &str| run.join(s).to_string_lossy().into_owned();
    let mut vars: BTreeMap<String, String> = [
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("HOME", p("home")),
        ("OH_SESSION_API_KEYS_0", KEY.into()),
        ("OH_ENABLE_VSCODE", "0".into()),
        ("OH_PRELOAD_TOOLS", "0".into()),
        ("OH_ENABLE_BROWSER", "0".into()),
        ("OH_LEASE_TTL_SECONDS", "0".into()),
        ("OH_CONVERSATIONS_PATH", p("conversations")),
        ("OH_WORKSPACE_PATH", p("project")),
        ("OH_BASH_EVENTS_DIR", p("bash_events")),
        ("OH_PERSISTENCE_DIR", p("persistence")),
        ("OPENHANDS_AGENT_SERVER_CONFIG_PATH", p("config.json")),
        ("TMUX_TMPDIR", p("tmux")),
        ("DO_NOT_TRACK", "1".into()),
        ("LITELLM_LOCAL_MODEL_COST_MAP", "True".into()),
        ("LITELLM_TELEMETRY", "False".into()),
        ("HF_HUB_OFFLINE", "1".into()),
        ("OPENHANDS_SUPPRESS_BANNER", "1".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    vars.insert("COLUMNS".into(), "200".into());
    // The policy withholds the server's own keys from agent processes; the
    // reference needs its key, so it is passed on the command line's env.
    let env = EnvPolicy::new().child_env_from(vars);
    let cmd = format!(
        "OH_SESSION_API_KEYS_0={KEY} exec '{python}' -m openhands.agent_server --host 127.0.0.1 --port {port} > '{}' 2>&1",
        p("server.log")
    );
    let child = GroupChild::spawn(&ProcessSpec::bash(&cmd, env).cwd(run)).unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if let Ok(r) = client.get(format!("{url}/ready")).send().await
            && r.status().is_success()
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "reference server not ready: {}",
            std::fs::read_to_string(run.join("server.log")).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Reference { child, url }
}

fn options() -> RemoteOptions {
    RemoteOptions {
        request_timeout: Duration::from_secs(60),
        ready_timeout: Duration::from_secs(30),
        run_timeout: Duration::from_secs(180),
        poll_interval: Duration::from_millis(500),
        terminal_fallback: Duration::from_secs(30),
        unreachable_timeout: Duration::from_secs(60),
        delete_on_close: false,
        ..RemoteOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_conversation_drives_the_reference_server() {
    let Ok(python) = std::env::var("OPENHANDS_TEST_REFERENCE_PYTHON") else {
        eprintln!(
            "SKIPPED: OPENHANDS_TEST_REFERENCE_PYTHON does not name the compat venv's Python \
             (scripts/test.sh sets it)"
        );
        return;
    };
    openhands_agent_server::install_tls_provider();
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlmServer::start(
        Script::from_turns([
            Turn::tool_call("terminal", json!({"command": "echo from-rust > ref.txt"})),
            Turn::tool_call("terminal", json!({"command": "echo second > second.txt"})),
            Turn::tool_call("finish", json!({"message": "done"})),
        ])
        .with_toolless_reply(Turn::text("A title")),
        0,
    )
    .await
    .unwrap();
    let server = start_reference(&python, dir.path()).await;
    let work = dir.path().join("project");
    let agent = json!({
        "kind": "Agent",
        "llm": {"model": "openai/mock-model", "base_url": mock.base_url(), "api_key": "k",
                "api_mode": "chat", "num_retries": 0},
        "tools": [{"name": "terminal"}],
    });
    let mut req = StartConversationRequest::new(agent, work.to_string_lossy());
    req.confirmation_policy = ConfirmationPolicy::AlwaysConfirm;
    let conv = RemoteConversation::create(&server.url, Some(KEY), &req, options())
        .await
        .unwrap();
    let streamed = conv.subscribe();

    conv.send_message("write the files").await.unwrap();
    assert_eq!(
        conv.run().await.unwrap(),
        ExecutionStatus::WaitingForConfirmation
    );
    conv.respond_to_confirmation(true, None).await.unwrap();
    assert_eq!(
        conv.run().await.unwrap(),
        ExecutionStatus::WaitingForConfirmation
    );
    assert_eq!(
        std::fs::read_to_string(work.join("ref.txt"))
            .unwrap()
            .trim(),
        "from-rust"
    );
    conv.respond_to_confirmation(true, None).await.unwrap();
    let status = conv.run().await.unwrap();
    assert_eq!(status, ExecutionStatus::Finished);
    assert!(work.join("second.txt").exists());

    let events = conv.events();
    let tools: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Action(a) => Some(a.tool_name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(tools, ["terminal", "terminal", "finish"]);
    drop(streamed);

    // Pause on an idle conversation is accepted and reported.
    conv.pause().await.unwrap();
    let fork = conv
        .fork(&ForkConversationRequest {
            reset_metrics: true,
            ..ForkConversationRequest::default()
        })
        .await
        .unwrap();
    assert_ne!(fork.id(), conv.id());
    let fork_tools = fork
        .events()
        .iter()
        .filter(|e| matches!(e.body, EventBody::Action(_)))
        .count();
    assert_eq!(fork_tools, 3);
    conv.close().await.unwrap();
}
