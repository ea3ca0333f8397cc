//! The browser in a sandboxed conversation: Chromium runs under the
//! conversation's bubblewrap sandbox (host read-only, private `/tmp`, the
//! workspace writable) and is still driven over DevTools. Skipped (saying
//! so) only when no Chromium is installed; bubblewrap is required.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_browser::ops::BrowserOp;
use openhands_browser::{
    BROWSER_TOOL_SET_NAME, BrowserConfig, BrowserSession, browser_tool_set, find_chromium,
};
use openhands_llm::Llm;
use openhands_sdk::tool::ToolRegistry;
use openhands_sdk::{Agent, ConversationOptions, LocalConversation};
use openhands_testkit::site::TestSite;
use openhands_testkit::{ScriptedLlm, Turn};
use openhands_wire::LlmConfig;
use openhands_wire::agent::AgentSpec;
use openhands_wire::event::EventBody;
use openhands_wire::state::ExecutionStatus;
use openhands_wire::tool::ToolSpec;
use openhands_workspace::exec::{ExecPolicy, Sandbox, SandboxConfig};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

fn chromium_or_skip(test: &str) -> bool {
    if find_chromium().is_some() {
        return true;
    }
    eprintln!("SKIPPED {test}: no Chromium installed (apt-get install chromium)");
    false
}

/// A file in the host's `/tmp`, which a sandbox does not show.
fn host_tmp_file(marker: &str) -> tempfile::NamedTempFile {
    let f = tempfile::Builder::new()
        .suffix(".html")
        .tempfile_in("/tmp")
        .unwrap();
    std::fs::write(
        f.path(),
        format!("<html><body><p>{marker}</p></body></html>"),
    )
    .unwrap();
    f
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_conversation_browses_from_inside_its_sandbox() {
    if !chromium_or_skip("a_sandboxed_conversation_browses_from_inside_its_sandbox") {
        return;
    }
    let site = TestSite::start().await.unwrap();
    let ws = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(
        ws.path().join("page.html"),
        "<html><body><h1>inside the workspace</h1></body></html>",
    )
    .unwrap();
    let secret = host_tmp_file("host-only-secret-7f3a");
    let turns = vec![
        Turn::tool_call("browser_navigate", json!({"url": site.url("/")})),
        Turn::tool_call("browser_get_content", json!({})),
        Turn::tool_call(
            "browser_navigate",
            json!({"url": format!("file://{}", ws.path().join("page.html").display())}),
        ),
        Turn::tool_call("browser_get_content", json!({})),
        Turn::tool_call(
            "browser_navigate",
            json!({"url": format!("file://{}", secret.path().display())}),
        ),
        Turn::tool_call("browser_get_content", json!({})),
        Turn::tool_call("finish", json!({"message": "done"})),
    ];
    let mut config = LlmConfig::new("openai/scripted");
    config.usage_id = "agent".into();
    let llm = Llm::with_backend(config.clone(), Arc::new(ScriptedLlm::from_turns(turns)));
    let spec = AgentSpec::new(config, vec![ToolSpec::named(BROWSER_TOOL_SET_NAME)]);
    let mut registry = ToolRegistry::new();
    registry.register_factory(BROWSER_TOOL_SET_NAME, Arc::new(browser_tool_set));
    let agent = Agent::with_llm(spec, llm, registry);
    let sandbox = Sandbox::new(SandboxConfig::default(), ws.path()).expect("bwrap works here");
    let c = LocalConversation::new(
        agent,
        ws.path(),
        ConversationOptions {
            persistence_dir: Some(root.path().to_path_buf()),
            agent: openhands_sdk::conversation::AgentOptions {
                exec_policy: ExecPolicy {
                    sandbox: Some(sandbox),
                    ..ExecPolicy::default()
                },
                ..Default::default()
            },
            ..ConversationOptions::default()
        },
    )
    .unwrap();
    c.send_message("Browse from the sandbox").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let obs: Vec<Value> = c
        .events()
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Observation(o) if o.tool_name.starts_with("browser_") => {
                Some(o.observation.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(obs.len(), 6);
    let text = |i: usize| obs[i]["content"][0]["text"].as_str().unwrap().to_string();
    for o in &obs[..4] {
        assert_eq!(o["is_error"], false, "{o}");
    }
    // The network is shared: the site on the host's loopback answers.
    assert!(
        text(1).contains("# Welcome to the test site"),
        "{}",
        text(1)
    );
    // The workspace is visible inside the sandbox...
    assert!(text(3).contains("inside the workspace"), "{}", text(3));
    // ...the host's /tmp is not.
    assert!(!text(5).contains("host-only-secret-7f3a"), "{}", text(5));
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_tmp_is_visible_without_a_sandbox_and_a_sandbox_without_network_is_refused() {
    if !chromium_or_skip(
        "the_host_tmp_is_visible_without_a_sandbox_and_a_sandbox_without_network_is_refused",
    ) {
        return;
    }
    let cancel = CancellationToken::new();
    // Without a sandbox the same kind of file is read: the check above means
    // something.
    let secret = host_tmp_file("host-visible-marker-51c2");
    let plain = BrowserSession::new(BrowserConfig::default());
    plain
        .run(
            BrowserOp::Navigate {
                url: format!("file://{}", secret.path().display()),
                new_tab: false,
            },
            &cancel,
        )
        .await
        .unwrap();
    let content = plain
        .run(
            BrowserOp::GetContent {
                links: false,
                start: 0,
            },
            &cancel,
        )
        .await
        .unwrap();
    assert!(
        content.text.contains("host-visible-marker-51c2"),
        "{}",
        content.text
    );
    plain.close().await;

    let ws = tempfile::tempdir().unwrap();
    let offline = Sandbox::new(
        SandboxConfig {
            network: false,
            ..SandboxConfig::default()
        },
        ws.path(),
    )
    .expect("bwrap works here");
    let session = BrowserSession::new(BrowserConfig {
        exec: ExecPolicy {
            sandbox: Some(offline),
            ..ExecPolicy::default()
        },
        ..BrowserConfig::default()
    });
    let err = session.run(BrowserOp::ListTabs, &cancel).await.unwrap_err();
    assert!(err.to_string().contains("sandbox has no network"), "{err}");
    assert!(!session.is_running().await);
}
