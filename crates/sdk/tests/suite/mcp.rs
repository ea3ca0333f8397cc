//! The agent uses a real MCP server (`@modelcontextprotocol/server-everything`
//! over stdio, installed by `scripts/test.sh` and named by
//! `OPENHANDS_TEST_MCP_EVERYTHING`): the scripted model calls its `echo`
//! tool, the result reaches the next LLM request and the event log, a killed
//! server is an error observation and the next call works again, and the
//! server ends with the conversation.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use openhands_sdk::LocalConversation;
use openhands_testkit::fixtures::{
    KillOnDrop, free_port, mcp_everything, mcp_python, pids_with_env,
};
use openhands_testkit::{Script, Turn};
use openhands_wire::event::EventBody;
use openhands_wire::state::ExecutionStatus;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

async fn wait_until(mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    f()
}

fn observations(c: &LocalConversation) -> Vec<Value> {
    c.events()
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Observation(o) => Some(o.observation.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_model_calls_an_mcp_tool_and_survives_a_killed_server() {
    let Some(index) = mcp_everything() else {
        return;
    };
    let marker = format!("OH_MCP_TEST_MARK={}", uuid::Uuid::new_v4().simple());
    let (mark_name, mark_value) = marker.split_once('=').unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let (agent, backend) = agent(Script::from_turns(vec![
        Turn::tool_call("echo", json!({"message": "first"})),
        Turn::tool_call("echo", json!({"message": "second"})),
        Turn::tool_call("echo", json!({"message": "third"})),
        Turn::text("done"),
    ]));
    let mut spec = agent.spec().clone();
    // The MCP server's `echo` replaces the test registry's.
    spec.tools.clear();
    // ${VAR} placeholders: a conversation secret, a default.
    spec.mcp_config = json!({"everything": {
        "command": "node", "args": [index, "${MCP_MODE:-stdio}"], "env": {mark_name: "${MARK_SECRET}"}
    }})
    .as_object()
    .cloned()
    .unwrap();
    let agent = openhands_sdk::Agent::with_llm(spec, agent.llm().clone(), registry());
    let c = LocalConversation::new(agent, workspace.path(), persisted(root.path())).unwrap();
    c.update_secrets(vec![(
        "MARK_SECRET".into(),
        openhands_sdk::secrets::SecretSource::Static {
            value: mark_value.to_string(),
            description: None,
        },
    )])
    .unwrap();
    c.send_message("use echo").unwrap();
    assert!(
        wait_until(|| !pids_with_env(&marker).is_empty()).await,
        "server not started"
    );
    let first_pids = pids_with_env(&marker);

    // The first call runs; before the second, the server is killed.
    let c2 = c.clone();
    let marker2 = marker.clone();
    c.add_callback(std::sync::Arc::new(
        move |e: &openhands_wire::event::Event| {
            if let EventBody::Observation(o) = &e.body
                && o.observation["content"][1]["text"] == "Echo: first"
            {
                for pid in pids_with_env(&marker2) {
                    let _ = std::process::Command::new("kill")
                        .args(["-KILL", &pid.to_string()])
                        .status();
                }
                let _ = &c2;
            }
        },
    ));
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);

    let obs = observations(&c);
    assert_eq!(obs.len(), 3, "{obs:#?}");
    assert_eq!(obs[0]["kind"], "MCPToolObservation");
    assert_eq!(obs[0]["tool_name"], "echo");
    assert_eq!(obs[0]["is_error"], false);
    assert_eq!(obs[0]["content"][0]["text"], "[Tool 'echo' executed.]");
    assert_eq!(obs[0]["content"][1]["text"], "Echo: first");
    assert_eq!(obs[1]["is_error"], true, "{:#}", obs[1]);
    assert!(
        obs[1]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("restarted on the next call"),
        "{:#}",
        obs[1]
    );
    assert_eq!(obs[2]["is_error"], false, "{:#}", obs[2]);
    assert_eq!(obs[2]["content"][1]["text"], "Echo: third");

    // Actions are the reference's MCPToolAction; the definition is MCPToolDefinition.
    let events = c.events();
    let action = events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::Action(a) => a.action.clone(),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        action,
        json!({"data": {"message": "first"}, "kind": "MCPToolAction"})
    );
    let sp = events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::SystemPrompt(sp) => Some(sp),
            _ => None,
        })
        .unwrap();
    let def = sp.tools.iter().find(|t| t.title == "echo").unwrap();
    assert_eq!(def.kind, "MCPToolDefinition");

    // The model saw the schema and the results.
    let reqs = backend.requests();
    let schema = reqs[0].tools.iter().find(|t| t.name == "echo").unwrap();
    assert_eq!(schema.parameters["properties"]["message"]["type"], "string");
    assert!(schema.parameters["properties"].get("summary").is_some());
    let seen = |i: usize| {
        reqs[i]
            .messages
            .last()
            .unwrap()
            .content
            .iter()
            .filter_map(|c| c.as_text().map(str::to_string))
            .collect::<Vec<_>>()
            .join("|")
    };
    assert!(seen(1).contains("Echo: first"), "{}", seen(1));
    assert!(
        seen(2).starts_with("[An error occurred during execution.]"),
        "{}",
        seen(2)
    );
    assert!(seen(3).contains("Echo: third"), "{}", seen(3));

    // A new server process served the third call; closing ends it.
    let now = pids_with_env(&marker);
    assert!(!now.is_empty());
    assert!(now.iter().all(|p| !first_pids.contains(p)));
    c.close().await;
    assert!(
        wait_until(|| pids_with_env(&marker).is_empty()).await,
        "server outlived close: {:?}",
        pids_with_env(&marker)
    );
}

#[tokio::test]
async fn an_unreachable_server_is_an_error_event_not_a_hang() {
    let workspace = tempfile::tempdir().unwrap();
    let (agent, backend) = agent(Script::from_turns(vec![Turn::text("ok")]));
    let mut spec = agent.spec().clone();
    let port = free_port();
    spec.mcp_config = json!({"mcpServers": {"down": {
        "url": format!("http://127.0.0.1:{port}/mcp"),
        "headers": {"X-Key": "sk-mcp-secret"},
        "auth": {"strategy": "oauth2", "state": {
            "tokens": {"access_token": "oauth-access-secret", "refresh_token": "oauth-refresh-secret"},
            "client_info": {"client_id": "c"}}}
    }}})
    .as_object()
    .cloned()
    .unwrap();
    let agent = openhands_sdk::Agent::with_llm(spec, agent.llm().clone(), registry());
    let root = tempfile::tempdir().unwrap();
    let c = LocalConversation::new(agent, workspace.path(), persisted(root.path())).unwrap();
    let t0 = Instant::now();
    c.send_message("hi").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    assert!(t0.elapsed() < Duration::from_secs(20));
    let errors: Vec<String> = c
        .events()
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ConversationError(x) => Some(format!("{}: {}", x.code, x.detail)),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("MCPError: MCP server 'down'"),
        "{errors:?}"
    );
    // The model is told, in the system prompt's dynamic context.
    let system = backend.requests()[0].messages[0]
        .content
        .iter()
        .filter_map(|c| c.as_text().map(str::to_string))
        .collect::<Vec<_>>()
        .join("");
    assert!(system.contains("MCP server 'down'"), "{system}");
    // MCP header and env values and OAuth tokens are secrets: never
    // written in clear.
    let state = std::fs::read_to_string(
        root.path()
            .join(c.id().simple().to_string())
            .join("base_state.json"),
    )
    .unwrap();
    assert!(!state.contains("sk-mcp-secret"));
    assert!(!state.contains("oauth-access-secret") && !state.contains("oauth-refresh-secret"));
    assert!(state.contains("X-Key") && state.contains("access_token"));
}

#[test]
fn a_malformed_mcp_config_fails_agent_setup_naming_the_server() {
    let (agent, _) = agent(Script::from_turns(vec![]));
    let mut spec = agent.spec().clone();
    spec.mcp_config = json!({"fs": {"transport": "stdio"}})
        .as_object()
        .cloned()
        .unwrap();
    let agent = openhands_sdk::Agent::with_llm(spec, agent.llm().clone(), registry());
    let e = agent
        .materialize(&openhands_sdk::tool::ToolEnv::new("/tmp"))
        .err()
        .unwrap();
    assert!(e.to_string().contains("MCP server 'fs'"), "{e}");
}

/// A server announcing a new tool (`notifications/tools/list_changed`):
/// the next LLM request offers it and the model can call it. The server is
/// the Python SSE fixture of crates/mcp (the `mcp` package from PyPI, run
/// by `OPENHANDS_TEST_MCP_PYTHON`).
#[tokio::test]
async fn tools_announced_by_list_changed_reach_the_model() {
    let Some(python) = mcp_python() else {
        return;
    };
    let port = free_port();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../mcp/tests/fixtures/sse_server.py"
    );
    let child = std::process::Command::new(python)
        .arg(script)
        .arg(port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _guard = KillOnDrop(child);
    assert!(
        wait_until(|| std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()).await,
        "the SSE server did not start"
    );
    let workspace = tempfile::tempdir().unwrap();
    let (agent, backend) = agent(Script::from_turns(vec![
        Turn::tool_call("unlock", json!({})),
        // A step later, so the re-listing has surely landed.
        Turn::tool_call("add", json!({"a": 1, "b": 2})),
        Turn::tool_call("secret", json!({})),
        Turn::text("done"),
    ]));
    let mut spec = agent.spec().clone();
    spec.tools.clear();
    spec.mcp_config = json!({"py": {"url": format!("http://127.0.0.1:{port}/sse")}})
        .as_object()
        .cloned()
        .unwrap();
    let agent = openhands_sdk::Agent::with_llm(spec, agent.llm().clone(), registry());
    let c = LocalConversation::new(agent, workspace.path(), Default::default()).unwrap();
    c.send_message("unlock it").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let obs = observations(&c);
    assert_eq!(obs.len(), 3, "{obs:#?}");
    assert_eq!(obs[2]["tool_name"], "secret");
    assert_eq!(obs[2]["content"][1]["text"], "the secret", "{:#}", obs[2]);
    let offered = |i: usize| -> Vec<String> {
        backend.requests()[i]
            .tools
            .iter()
            .map(|t| t.name.clone())
            .collect()
    };
    assert!(!offered(0).contains(&"secret".to_string()));
    assert!(
        offered(2).contains(&"secret".to_string()),
        "{:?}",
        offered(2)
    );
    c.close().await;
}

/// Plays the user's browser: opens the authorization URL (approved at once
/// by the stand-in) and follows its redirect to the loopback callback.
async fn give_consent(url: String) {
    #[allow(clippy::disallowed_methods)]
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    assert!(url.contains("code_challenge_method=S256"), "{url}");
    let resp = browser.get(&url).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 302, "{:?}", resp.text().await);
    let location = resp.headers()["location"].to_str().unwrap().to_string();
    assert!(location.starts_with("http://localhost:"), "{location}");
    assert!(
        browser
            .get(&location)
            .send()
            .await
            .unwrap()
            .status()
            .is_success()
    );
}

/// A consent prompt handing each URL to the test.
struct ToTest(tokio::sync::mpsc::UnboundedSender<(String, String)>);

impl openhands_mcp::oauth::ConsentPrompt for ToTest {
    fn show(&self, server: &str, url: &str) {
        let _ = self.0.send((server.to_string(), url.to_string()));
    }
}

/// A plain SDK conversation whose agent has an OAuth MCP server
/// (`"auth": "oauth"`) authorizes it when the servers start — discovery,
/// dynamic registration, PKCE, the loopback callback — keeps the tokens
/// encrypted in the user's store, and a later conversation (a new store
/// over the same files, as a later run) uses them without asking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sdk_conversation_authorizes_an_oauth_mcp_server_and_keeps_its_tokens() {
    let Some((_oauth, url)) =
        openhands_testkit::fixtures::mcp_oauth_server("streamable-http", 3600).await
    else {
        return;
    };
    let user_dir = tempfile::tempdir().unwrap();
    let run = |consent: openhands_mcp::oauth::Consent| {
        let (agent, _) = agent(Script::from_turns(vec![
            Turn::tool_call("whoami", json!({})),
            Turn::text("done"),
        ]));
        let mut spec = agent.spec().clone();
        spec.tools.clear();
        spec.mcp_config = json!({"secure": {"url": url, "auth": "oauth"}})
            .as_object()
            .cloned()
            .unwrap();
        let agent = openhands_sdk::Agent::with_llm(spec, agent.llm().clone(), registry());
        let store = openhands_sdk::mcp_oauth::user_store(user_dir.path(), None).unwrap();
        let mut options = persisted(user_dir.path());
        options.agent.mcp_oauth_states = Some(std::sync::Arc::new(store));
        options.agent.mcp_oauth_consent = Some(consent);
        LocalConversation::new(agent, user_dir.path(), options).unwrap()
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let consent = openhands_mcp::oauth::Consent {
        prompt: std::sync::Arc::new(ToTest(tx)),
        limit: Duration::from_secs(30),
    };
    let browser = tokio::spawn(async move {
        let (server, url) = rx.recv().await.unwrap();
        assert_eq!(server, "secure");
        give_consent(url).await;
        rx
    });
    let c = run(consent.clone());
    c.send_message("who am i").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let obs = observations(&c);
    assert_eq!(obs[0]["is_error"], false, "{:#}", obs[0]);
    assert!(obs[0].to_string().contains("token 1 of 1"), "{:#}", obs[0]);
    c.close().await;
    let mut rx = browser.await.unwrap();

    // Encrypted at rest, owner-only.
    let tokens = std::fs::read_to_string(user_dir.path().join("mcp_oauth.json")).unwrap();
    assert!(
        !tokens.contains("access-") && !tokens.contains("refresh-"),
        "{tokens}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(user_dir.path().join("mcp_oauth.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
    }

    // A later conversation: the kept token, no consent asked.
    let c = run(consent);
    c.send_message("who am i").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let obs = observations(&c);
    assert!(obs[0].to_string().contains("token 1 of 1"), "{:#}", obs[0]);
    assert!(rx.try_recv().is_err(), "consent asked again");
    c.close().await;
}

/// `user_defaults` leaves options that name a store alone (the agent
/// server's: its settings, no consent), and agents without OAuth servers.
#[test]
fn user_defaults_leave_explicit_stores_and_plain_agents_alone() {
    let mut options = openhands_sdk::conversation::AgentOptions {
        mcp_oauth_states: Some(std::sync::Arc::new(
            openhands_mcp::oauth::MemoryStates::new(),
        )),
        ..Default::default()
    };
    let config = json!({"secure": {"url": "http://127.0.0.1:9/mcp", "auth": "oauth"}});
    openhands_sdk::mcp_oauth::user_defaults(&mut options, config.as_object().unwrap()).unwrap();
    assert!(options.mcp_oauth_consent.is_none());
    // Nor is anything set for an agent without OAuth servers.
    let mut plain = openhands_sdk::conversation::AgentOptions::default();
    let config = json!({"local": {"command": "true"}});
    openhands_sdk::mcp_oauth::user_defaults(&mut plain, config.as_object().unwrap()).unwrap();
    assert!(plain.mcp_oauth_states.is_none() && plain.mcp_oauth_consent.is_none());
}
