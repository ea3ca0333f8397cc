//! The client against a real ACP implementation: the reference's Python ACP
//! library driving `fixtures/scripted_peer.py` (skipped when the compat
//! venv's python is not configured: `OPENHANDS_TEST_MCP_PYTHON`).

#![allow(
    clippy::disallowed_methods,
    reason = "tests start real programs, stage files and read fixture locations from the environment"
)]

use openhands_acp::{
    AcpAgentConfig, AcpClient, AcpError, LaunchOptions, PromptOutcome, TurnAccumulator,
    discover_models,
};
use openhands_workspace::exec::EnvPolicy;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn python() -> Option<String> {
    std::env::var("OPENHANDS_TEST_MCP_PYTHON")
        .ok()
        .filter(|p| std::path::Path::new(p).exists())
}

fn peer_script() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/scripted_peer.py")
        .to_string_lossy()
        .into_owned()
}

fn config(python: &str, mode: &str) -> AcpAgentConfig {
    let mut c = AcpAgentConfig::new(vec![python.into(), peer_script(), mode.into()]);
    c.startup_timeout = Duration::from_secs(30);
    c.prompt_timeout = Duration::from_secs(30);
    c
}

fn launch(dir: &std::path::Path) -> LaunchOptions {
    LaunchOptions {
        cwd: dir.to_path_buf(),
        env: EnvPolicy::default().child_env(),
        sandbox: None,
        prior_session: None,
        mcp_servers: Vec::new(),
    }
}

fn text(t: &str) -> Vec<Value> {
    vec![json!({"type": "text", "text": t})]
}

#[tokio::test]
async fn a_prompt_streams_updates_and_the_model_switch_reaches_the_peer() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(&py, "normal");
    cfg.model = Some("alpha".into());
    let client = AcpClient::start(&cfg, launch(dir.path())).await.unwrap();
    let state = client.state();
    assert_eq!(state.agent_name, "scripted-peer");
    assert_eq!(state.session_id, "sess-1");
    assert!(state.via_config_option);
    assert!(state.model_override_applied);
    assert_eq!(state.current_model_id.as_deref(), Some("alpha"));
    assert_eq!(state.available_models.as_ref().map(Vec::len), Some(3));
    assert!(!state.supports_runtime_model_switch());

    let mut acc = TurnAccumulator::default();
    let mut reported = Vec::new();
    let cancel = CancellationToken::new();
    let out = client
        .prompt(text("hello"), &cancel, &mut |p| {
            if let Some(e) = acc.apply(p, &|_| {}) {
                reported.push(e);
            }
        })
        .await
        .unwrap();
    assert!(
        matches!(out, PromptOutcome::Completed { ref stop_reason, .. } if stop_reason.as_deref() == Some("end_turn"))
    );
    assert_eq!(
        acc.response_text(),
        "You said: hello; model=alpha; permission=allow-1"
    );
    assert_eq!(acc.thought_text(), "Thinking about it.");
    let seen: Vec<_> = reported
        .iter()
        .map(|e| (e.tool_call_id.as_str(), e.status.as_deref()))
        .collect();
    assert_eq!(
        seen,
        [
            ("t1", Some("pending")),
            ("t1", Some("completed")),
            ("t2", Some("in_progress"))
        ]
    );
    assert_eq!(reported[1].raw_output, Some(json!("a.txt\nb.txt")));
    assert_eq!(acc.close_open_calls("completed").len(), 1);

    client.set_model("beta").await.unwrap();
    assert_eq!(client.state().current_model_id.as_deref(), Some("beta"));
    let e = client.set_model("nope").await.unwrap_err();
    assert!(
        matches!(e, AcpError::Invalid(ref m) if m.contains("rejected")),
        "{e}"
    );
    let mut acc = TurnAccumulator::default();
    client
        .prompt(text("again"), &cancel, &mut |p| {
            acc.apply(p, &|_| {});
        })
        .await
        .unwrap();
    assert!(acc.response_text().contains("model=beta"));
    client.close().await;
    assert!(!client.is_alive());
}

#[tokio::test]
async fn a_peer_dying_mid_prompt_is_an_error_not_a_hang() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let client = AcpClient::start(&config(&py, "die"), launch(dir.path()))
        .await
        .unwrap();
    let mut acc = TurnAccumulator::default();
    let e = tokio::time::timeout(
        Duration::from_secs(20),
        client.prompt(text("x"), &CancellationToken::new(), &mut |p| {
            acc.apply(p, &|_| {});
        }),
    )
    .await
    .expect("no hang")
    .unwrap_err();
    assert_eq!(e.turn_code(), "ACPPromptError", "{e}");
    assert!(!client.is_alive());
    assert_eq!(acc.close_open_calls("failed").len(), 1);
    client.close().await;
}

#[tokio::test]
async fn cancel_and_idle_timeout_end_a_hanging_prompt() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let client = AcpClient::start(&config(&py, "hang"), launch(dir.path()))
        .await
        .unwrap();
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        c2.cancel();
    });
    let out = client
        .prompt(text("x"), &cancel, &mut |_| {})
        .await
        .unwrap();
    assert_eq!(out, PromptOutcome::Cancelled);
    client.close().await;

    let mut cfg = config(&py, "hang");
    cfg.prompt_timeout = Duration::from_secs(1);
    let client = AcpClient::start(&cfg, launch(dir.path())).await.unwrap();
    let e = client
        .prompt(text("x"), &CancellationToken::new(), &mut |_| {})
        .await
        .unwrap_err();
    assert!(matches!(e, AcpError::IdleTimeout(_)), "{e}");
    client.close().await;
}

#[tokio::test]
async fn discovery_reports_models_or_the_start_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = AcpAgentConfig::new(vec!["/nonexistent/acp-server".into()]);
    let d = discover_models(&missing, launch(dir.path())).await;
    assert_eq!(
        d.error.as_ref().map(|e| e.code.as_str()),
        Some("ACPSpawnError")
    );
    let Some(py) = python() else { return };
    let d = discover_models(&config(&py, "normal"), launch(dir.path())).await;
    assert_eq!(d.error, None);
    assert_eq!(d.agent_name.as_deref(), Some("scripted-peer"));
    assert_eq!(d.current_model_id.as_deref(), Some("peer-default"));
    let ids: Vec<_> = d
        .available_models
        .iter()
        .map(|m| m.model_id.as_str())
        .collect();
    assert_eq!(ids, ["peer-default", "alpha", "beta"]);
    // A server that never answers `initialize` hits the startup limit.
    let mut silent = AcpAgentConfig::new(vec!["sleep".into(), "30".into()]);
    silent.startup_timeout = Duration::from_millis(300);
    let d = discover_models(&silent, launch(dir.path())).await;
    assert_eq!(
        d.error.map(|e| e.code),
        Some("ACPStartupTimeout".to_string())
    );
}

fn strip_credentials(env: &mut openhands_workspace::exec::ChildEnv) {
    for k in [
        "CODEX_HOME",
        "OPENAI_API_KEY",
        "CODEX_API_KEY",
        "GEMINI_API_KEY",
        "GEMINI_BASE_URL",
        "GOOGLE_APPLICATION_CREDENTIALS",
    ] {
        env.remove(k);
    }
}

async fn report(
    py: &str,
    dir: &std::path::Path,
    vars: &[(&str, &str)],
) -> Result<String, AcpError> {
    let mut opts = launch(dir);
    strip_credentials(&mut opts.env);
    for (k, v) in vars {
        opts.env
            .set(k, *v)
            .map_err(|e| AcpError::Invalid(e.to_string()))?;
    }
    let mut cfg = config(py, "report");
    cfg.command.push("NONE".into());
    let client = AcpClient::start(&cfg, opts).await?;
    let mut acc = TurnAccumulator::default();
    let out = client
        .prompt(text("x"), &CancellationToken::new(), &mut |p| {
            acc.apply(p, &|_| {});
        })
        .await;
    client.close().await;
    out.map(|_| acc.response_text())
}

#[tokio::test]
async fn the_auth_method_follows_the_credentials_present() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let methods = ("PEER_AUTH_METHODS", "chat-gpt,api-key,gemini-api-key");
    let required = ("PEER_REQUIRE_AUTH", "1");
    // An OpenAI key selects codex's api-key method.
    let out = report(
        &py,
        dir.path(),
        &[methods, required, ("OPENAI_API_KEY", "k")],
    )
    .await
    .unwrap();
    assert!(out.starts_with("auth=api-key; meta=null"), "{out}");
    // A ChatGPT login file under CODEX_HOME wins over the key.
    let codex = dir.path().join("codex");
    std::fs::create_dir_all(&codex).unwrap();
    std::fs::write(
        codex.join("auth.json"),
        r#"{"tokens": {"refresh_token": "rt"}}"#,
    )
    .unwrap();
    let out = report(
        &py,
        dir.path(),
        &[
            methods,
            required,
            ("OPENAI_API_KEY", "k"),
            ("CODEX_HOME", codex.to_str().unwrap()),
        ],
    )
    .await
    .unwrap();
    assert!(out.starts_with("auth=chat-gpt;"), "{out}");
    // gemini-cli gets its gateway base URL with the API-key method.
    let out = report(
        &py,
        dir.path(),
        &[
            ("PEER_AUTH_METHODS", "gemini-api-key"),
            ("PEER_AGENT_NAME", "gemini-cli-peer"),
            ("GEMINI_API_KEY", "g"),
            ("GEMINI_BASE_URL", "http://proxy.local"),
        ],
    )
    .await
    .unwrap();
    assert!(
        out.starts_with(
            r#"auth=gemini-api-key; meta={"gateway": {"baseUrl": "http://proxy.local"}}"#
        ),
        "{out}"
    );
}

#[tokio::test]
async fn no_fitting_auth_method_fails_the_start_naming_what_is_missing() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let e = report(
        &py,
        dir.path(),
        &[
            ("PEER_AUTH_METHODS", "chat-gpt,login:terminal"),
            ("PEER_REQUIRE_AUTH", "1"),
            ("CODEX_HOME", dir.path().join("none").to_str().unwrap()),
        ],
    )
    .await
    .unwrap_err();
    assert_eq!(e.init_code(), "ACPAuthRequired");
    let detail = e.detail();
    assert!(detail.contains("[-32000]"), "{detail}");
    assert!(
        detail.contains("offers auth methods [chat-gpt, login] but no matching credential"),
        "{detail}"
    );
    assert!(detail.contains("none/auth.json is missing"), "{detail}");
    assert!(
        detail.contains("login needs an interactive terminal"),
        "{detail}"
    );
    // Without a requirement the session starts anyway (the warning is logged).
    let out = report(&py, dir.path(), &[("PEER_AUTH_METHODS", "chat-gpt")])
        .await
        .unwrap();
    assert!(out.starts_with("auth=None;"), "{out}");
}
