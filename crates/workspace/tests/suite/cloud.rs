//! `OpenHandsCloudWorkspace` against the Cloud API stand-in of
//! `openhands-testkit` (no cloud is reachable here: the stand-in answers
//! exactly the reference client's calls), with our agent server in
//! process as the sandbox's agent server: a sandbox is started, polled
//! until running, used (commands, files), its account's LLM and secrets
//! fetched, and deleted on close — each call checked for the reference's
//! path, query and headers.

use openhands_agent_server::{AppState, Config};
use openhands_testkit::cloud::{CloudAccount, CloudStandIn};
use openhands_workspace::{OpenHandsCloudWorkspace, OpenHandsCloudWorkspaceOptions};
use serde_json::{Map, json};
use std::path::Path;
use std::time::Duration;

const SESSION_KEY: &str = "sandbox-session-key";
const CLOUD_KEY: &str = "cloud-api-key";

async fn agent_server(dir: &Path) -> openhands_agent_server::ServerHandle {
    openhands_agent_server::install_tls_provider();
    let config = Config {
        session_api_keys: vec![SESSION_KEY.into()],
        conversations_path: dir.join("conversations"),
        workspace_path: dir.join("project"),
        bash_events_dir: dir.join("bash_events"),
        ..Config::default()
    };
    openhands_agent_server::spawn(
        AppState::new(config).shared(),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap()
}

fn account(server: &str) -> CloudAccount {
    CloudAccount {
        api_key: CLOUD_KEY.into(),
        agent_server_url: format!("{server}/"),
        session_api_key: SESSION_KEY.into(),
        user: json!({
            "llm_model": "openai/gpt-test",
            "llm_api_key": "sk-account",
            "llm_base_url": "",
            "llm_profiles": {"profiles": {"fast": {"model": "openai/fast", "temperature": 0.0}}},
            "mcp_config": {"shttp_servers": [{"url": "http://mcp", "api_key": "m"}]},
        }),
        secrets: vec![
            (
                "GITHUB_TOKEN".into(),
                Some("repo access".into()),
                "ghp_value".into(),
            ),
            ("OTHER".into(), None, "other-value".into()),
        ],
        starting_polls: 2,
    }
}

fn options(cloud: &CloudStandIn, work: &Path) -> OpenHandsCloudWorkspaceOptions {
    OpenHandsCloudWorkspaceOptions {
        sandbox_spec_id: Some("spec-1".into()),
        working_dir: work.to_string_lossy().into_owned(),
        poll_interval: Duration::from_millis(50),
        init_timeout: Duration::from_secs(20),
        ..OpenHandsCloudWorkspaceOptions::new(format!("{}/", cloud.url()), CLOUD_KEY)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cloud_sandbox_is_started_used_and_deleted_with_the_reference_calls() {
    let dir = tempfile::tempdir().unwrap();
    let server = agent_server(dir.path()).await;
    let cloud = CloudStandIn::start(account(&server.url())).await.unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();

    let ws = OpenHandsCloudWorkspace::start(options(&cloud, &work))
        .await
        .unwrap();
    assert_eq!(ws.sandbox_id(), Some("sandbox-1"));
    assert_eq!(ws.host(), server.url().trim_end_matches('/'));
    assert_eq!(ws.api_key(), Some(SESSION_KEY));
    let r = ws
        .workspace()
        .execute_command(
            "echo hello > hi.txt; cat hi.txt",
            None,
            Duration::from_secs(10),
        )
        .await
        .unwrap();
    assert_eq!(r.stdout.trim(), "hello");
    assert!(work.join("hi.txt").is_file());

    // The account's LLM, a profile, overrides.
    let llm = ws.get_llm(None, Map::new()).await.unwrap();
    assert_eq!(
        llm,
        json!({"model": "openai/gpt-test", "api_key": "sk-account"})
    );
    let mut over = Map::new();
    over.insert("temperature".into(), json!(0.5));
    let fast = ws.get_llm(Some("fast"), over).await.unwrap();
    assert_eq!(
        fast,
        json!({"model": "openai/fast", "temperature": 0.5, "usage_id": "profile:fast"})
    );
    let err = ws.get_llm(Some("nope"), Map::new()).await.unwrap_err();
    assert!(err.to_string().contains("'nope' not found"), "{err}");

    // Secrets become lookups of the sandbox settings API with the session
    // key; the stand-in answers their values to that key.
    let secrets = ws.get_secrets(None, None).await.unwrap();
    assert_eq!(secrets.len(), 2);
    let gh = &secrets["GITHUB_TOKEN"];
    let url = format!(
        "{}/api/v1/sandboxes/sandbox-1/settings/secrets/GITHUB_TOKEN",
        cloud.url()
    );
    assert_eq!(
        gh,
        &json!({"kind": "LookupSecret", "url": url, "headers": {"X-Session-API-Key": SESSION_KEY}, "description": "repo access"})
    );
    let value = reqwest::Client::new()
        .get(&url)
        .header("X-Session-API-Key", SESSION_KEY)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(value, "ghp_value");
    let some = ws.get_secrets(Some(&["OTHER"]), Some("p1")).await.unwrap();
    assert_eq!(some.keys().collect::<Vec<_>>(), vec!["OTHER"]);
    assert!(some["OTHER"].get("description").is_none());

    let mcp = ws.get_mcp_config().await.unwrap();
    assert_eq!(
        mcp["shttp_0"],
        json!({"url": "http://mcp", "transport": "streamable-http", "headers": {"Authorization": "Bearer m"}})
    );
    assert!(ws.pause().await.unwrap_err().to_string().contains("pause"));

    ws.close().await.unwrap();
    assert_eq!(
        cloud.sandboxes(),
        vec![("sandbox-1".to_string(), "DELETED".to_string())]
    );

    // What was sent: the reference client's paths, queries and headers.
    let calls = cloud.calls();
    let bearer = Some(format!("Bearer {CLOUD_KEY}"));
    let seen: Vec<(String, String, String)> = calls
        .iter()
        .map(|c| (c.method.clone(), c.path.clone(), c.query.clone()))
        .collect();
    let s = |m: &str, p: &str, q: &str| (m.to_string(), p.to_string(), q.to_string());
    assert_eq!(
        seen[0],
        s("POST", "/api/v1/sandboxes", "sandbox_spec_id=spec-1")
    );
    // Two STARTING answers, then RUNNING.
    for c in &seen[1..4] {
        assert_eq!(c, &s("GET", "/api/v1/sandboxes", "id=sandbox-1"));
    }
    assert!(seen.contains(&s("GET", "/api/v1/users/me", "expose_secrets=true")));
    assert!(seen.contains(&s(
        "GET",
        "/api/v1/sandboxes/sandbox-1/settings/secrets",
        "agent_profile_id=p1"
    )));
    assert!(seen.contains(&s("GET", "/api/v1/users/me", "")));
    assert_eq!(
        seen.last().unwrap(),
        &s(
            "DELETE",
            "/api/v1/sandboxes/sandbox-1",
            "sandbox_id=sandbox-1"
        )
    );
    for c in &calls {
        if c.path.contains("/settings/") {
            // Settings calls: the session key only.
            assert_eq!(c.authorization, None, "{c:?}");
            assert_eq!(c.session_api_key.as_deref(), Some(SESSION_KEY), "{c:?}");
        } else {
            assert_eq!(c.authorization, bearer, "{c:?}");
        }
        if c.path == "/api/v1/users/me" {
            assert_eq!(c.session_api_key.as_deref(), Some(SESSION_KEY), "{c:?}");
        }
    }
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_is_resumed_by_id_and_kept_alive_and_a_wrong_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = agent_server(dir.path()).await;
    let cloud = CloudStandIn::start(account(&server.url())).await.unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();

    // A wrong Cloud key: the start is refused with the answer's status.
    let err = OpenHandsCloudWorkspace::start(OpenHandsCloudWorkspaceOptions {
        cloud_api_key: "wrong".into(),
        ..options(&cloud, &work)
    })
    .await
    .unwrap_err();
    assert!(err.to_string().contains("401"), "{err}");
    assert!(cloud.sandboxes().is_empty());

    // keep_alive leaves the sandbox on close.
    let ws = OpenHandsCloudWorkspace::start(OpenHandsCloudWorkspaceOptions {
        keep_alive: true,
        ..options(&cloud, &work)
    })
    .await
    .unwrap();
    ws.close().await.unwrap();
    assert_eq!(cloud.sandboxes()[0].1, "RUNNING");

    // Paused by the Cloud, then resumed by id (`sandbox_id`).
    cloud.set_status("sandbox-1", "PAUSED");
    let ws = OpenHandsCloudWorkspace::start(OpenHandsCloudWorkspaceOptions {
        sandbox_id: Some("sandbox-1".into()),
        ..options(&cloud, &work)
    })
    .await
    .unwrap();
    assert_eq!(cloud.sandboxes()[0].1, "RUNNING");
    let r = ws
        .workspace()
        .execute_command("echo resumed", None, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(r.stdout.trim(), "resumed");
    assert!(
        cloud
            .calls()
            .iter()
            .any(|c| c.method == "POST" && c.path == "/api/v1/sandboxes/sandbox-1/resume")
    );
    ws.close().await.unwrap();
    assert_eq!(cloud.sandboxes()[0].1, "DELETED");

    // A sandbox that is gone is an error naming it, not a hang.
    let err = OpenHandsCloudWorkspace::start(OpenHandsCloudWorkspaceOptions {
        sandbox_id: Some("sandbox-9".into()),
        ..options(&cloud, &work)
    })
    .await
    .unwrap_err();
    assert!(err.to_string().contains("404"), "{err}");
    server.shutdown().await.unwrap();
}

/// The reference client from the compat venv against the stand-in: it
/// works there, and it makes the same calls (method, path, query, auth
/// headers, in order, polls aside) as ours.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_client_makes_the_same_calls_to_the_stand_in() {
    let venv = std::env::var_os("COMPAT_VENV")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "/var/cache/openhands-rs/compat-venv".into());
    let python = venv.join("bin/python");
    if !python.is_file() {
        eprintln!(
            "\n*** SKIPPED: no compat venv at {} (run compat/setup.sh)\n",
            venv.display()
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = agent_server(dir.path()).await;
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../compat/scripts/cloud_workspace_client.py");
    // A stand-in answering one STARTING poll, so the reference's backoff
    // (2 s first) stays short.
    let calls_of = |cloud: &CloudStandIn| {
        let mut v = cloud.calls();
        // Polls differ in number with the backoff: keep one.
        v.dedup();
        v
    };

    let theirs = {
        let cloud = CloudStandIn::start(CloudAccount {
            starting_polls: 1,
            ..account(&server.url())
        })
        .await
        .unwrap();
        let (url, work) = (cloud.url(), work.to_string_lossy().into_owned());
        let out = tokio::task::spawn_blocking(move || {
            std::process::Command::new(python)
                .arg(script)
                .args([&url, CLOUD_KEY, &work])
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        assert!(
            out.status.success(),
            "the reference client failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: serde_json::Value = serde_json::from_slice(
            out.stdout
                .rsplit(|b| *b == b'\n')
                .find(|l| !l.is_empty())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(got["stdout"], "from-reference");
        assert_eq!(got["model"], "openai/gpt-test");
        assert_eq!(
            got["secrets"]["GITHUB_TOKEN"]["url"],
            format!(
                "{}/api/v1/sandboxes/sandbox-1/settings/secrets/GITHUB_TOKEN",
                cloud.url()
            )
        );
        assert_eq!(cloud.sandboxes()[0].1, "DELETED");
        calls_of(&cloud)
    };

    let ours = {
        let cloud = CloudStandIn::start(CloudAccount {
            starting_polls: 1,
            ..account(&server.url())
        })
        .await
        .unwrap();
        let ws = OpenHandsCloudWorkspace::start(options(&cloud, &work))
            .await
            .unwrap();
        ws.workspace()
            .execute_command("echo from-ours", None, Duration::from_secs(10))
            .await
            .unwrap();
        ws.get_llm(None, Map::new()).await.unwrap();
        ws.get_secrets(None, None).await.unwrap();
        ws.close().await.unwrap();
        calls_of(&cloud)
    };
    assert_eq!(ours, theirs);
    server.shutdown().await.unwrap();
}
