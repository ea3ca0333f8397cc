//! The client against the real reference MCP server,
//! `@modelcontextprotocol/server-everything` from npm (installed by
//! `scripts/test.sh`; its `dist/index.js` is named by
//! `OPENHANDS_TEST_MCP_EVERYTHING`), over stdio and streamable HTTP, plus
//! servers that cannot be reached.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_mcp::{
    McpClient, McpConfig, McpContent, McpError, McpSession, StartOptions, UnknownFields,
};
use openhands_testkit::fixtures::{KillOnDrop, free_port, mcp_everything};
use serde_json::{Map, Value, json};
use std::time::{Duration, Instant};

fn config(v: Value) -> McpConfig {
    McpConfig::parse(&v, UnknownFields::Refuse).unwrap()
}

fn opts() -> StartOptions {
    StartOptions::new(std::env::temp_dir())
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

fn text(r: &openhands_mcp::CallResult) -> String {
    r.content
        .iter()
        .filter_map(|c| match c {
            McpContent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn alive(pid: u32) -> bool {
    // A zombie is dead for our purpose.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false)
}

#[tokio::test]
async fn stdio_calls_tools_restarts_after_a_kill_and_ends_the_child_on_close() {
    let Some(index) = mcp_everything() else {
        return;
    };
    let cfg = config(json!({"everything": {"command": "node", "args": [index, "stdio"]}}));
    let started = McpSession::start(&cfg, opts()).await;
    assert!(started.failures.is_empty(), "{:?}", started.failures);
    let s = started.session;
    let names: Vec<String> = s.tools().iter().map(|t| t.name.clone()).collect();
    assert!(names.contains(&"echo".to_string()), "{names:?}");
    let echo = s.tools().into_iter().find(|t| t.name == "echo").unwrap();
    assert_eq!(echo.input_schema["properties"]["message"]["type"], "string");
    assert_eq!(echo.annotations.as_ref().unwrap()["readOnlyHint"], true);
    assert_eq!(echo.wire["name"], "echo");

    let r = s
        .call_tool("echo", args(json!({"message": "hi"})))
        .await
        .unwrap();
    assert!(!r.is_error);
    assert_eq!(text(&r), "Echo: hi");
    let img = s.call_tool("get-tiny-image", Map::new()).await.unwrap();
    assert!(
        img.content
            .iter()
            .any(|c| matches!(c, McpContent::Image { mime_type, .. } if mime_type == "image/png")),
        "{img:?}"
    );
    let bad = s.call_tool("echo", Map::new()).await;
    match bad {
        Ok(r) => assert!(r.is_error, "{r:?}"),
        Err(e) => assert!(matches!(e, McpError::Call { .. }), "{e:?}"),
    }
    assert!(matches!(
        s.call_tool("nope", Map::new()).await,
        Err(McpError::UnknownTool(_))
    ));

    // Killed: reported once, then started again by the next call.
    let pid = s.pids().await[0].1;
    let st = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .status()
        .unwrap();
    assert!(st.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let e = s
        .call_tool("echo", args(json!({"message": "x"})))
        .await
        .unwrap_err();
    assert!(matches!(e, McpError::Stopped { .. }), "{e:?}");
    assert!(e.to_string().contains("restarted on the next call"), "{e}");
    let r = s
        .call_tool("echo", args(json!({"message": "again"})))
        .await
        .unwrap();
    assert_eq!(text(&r), "Echo: again");
    let new_pid = s.pids().await[0].1;
    assert_ne!(new_pid, pid);

    s.close().await;
    assert!(!alive(new_pid), "the server outlived close");
    assert!(matches!(
        s.call_tool("echo", Map::new()).await,
        Err(McpError::Closed)
    ));
}

#[tokio::test]
async fn two_servers_prefix_their_tools_and_a_broken_one_is_reported() {
    let Some(index) = mcp_everything() else {
        return;
    };
    let cfg = config(json!({"mcpServers": {
        "a": {"command": "node", "args": [index, "stdio"]},
        "b": {"command": "definitely-not-a-program-xyz"}
    }}));
    let started = McpSession::start(&cfg, opts()).await;
    assert_eq!(started.failures.len(), 1);
    assert_eq!(started.failures[0].server, "b");
    assert!(
        started.failures[0]
            .error
            .to_string()
            .contains("MCP server 'b'"),
        "{}",
        started.failures[0].error
    );
    let s = started.session;
    let names: Vec<String> = s.tools().iter().map(|t| t.name.clone()).collect();
    assert!(names.contains(&"a_echo".to_string()), "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("a_")), "{names:?}");
    let r = s
        .call_tool("a_echo", args(json!({"message": "p"})))
        .await
        .unwrap();
    assert_eq!(text(&r), "Echo: p");
    s.close().await;
}

#[tokio::test]
async fn streamable_http_lists_and_calls() {
    let Some(index) = mcp_everything() else {
        return;
    };
    let port = free_port();
    let child = std::process::Command::new("node")
        .args([index.as_str(), "streamableHttp"])
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _guard = KillOnDrop(child);
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the HTTP server did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let cfg = config(json!({"web": {
        "url": format!("http://127.0.0.1:{port}/mcp"),
        "headers": {"X-Test": "1"},
        "auth": {"strategy": "bearer", "value": "not-checked"}
    }}));
    let started = McpSession::start(&cfg, opts()).await;
    assert!(started.failures.is_empty(), "{:?}", started.failures);
    let s = started.session;
    assert!(s.tools().iter().any(|t| t.name == "get-sum"));
    let r = s
        .call_tool("get-sum", args(json!({"a": 2, "b": 3})))
        .await
        .unwrap();
    assert!(text(&r).contains('5'), "{r:?}");
    s.close().await;
}

#[tokio::test]
async fn unreachable_and_silent_servers_fail_within_the_startup_timeout() {
    let port = free_port();
    let cfg = config(json!({
        "down": {"url": format!("http://127.0.0.1:{port}/mcp")},
        "mute": {"command": "sleep", "args": ["30"]}
    }));
    let mut o = opts();
    o.startup_timeout = Duration::from_secs(2);
    let t0 = Instant::now();
    let started = McpSession::start(&cfg, o).await;
    assert!(t0.elapsed() < Duration::from_secs(6), "{:?}", t0.elapsed());
    let mut failed: Vec<&str> = started.failures.iter().map(|f| f.server.as_str()).collect();
    failed.sort();
    assert_eq!(failed, ["down", "mute"]);
    let mute = started
        .failures
        .iter()
        .find(|f| f.server == "mute")
        .unwrap();
    assert!(
        matches!(mute.error, McpError::Timeout { .. }),
        "{:?}",
        mute.error
    );
    assert!(started.session.tools().is_empty());
}

#[test]
fn blocking_start_works_outside_any_runtime() {
    let cfg = config(json!({"gone": {"command": "definitely-not-a-program-xyz"}}));
    let started = McpSession::start_blocking(&cfg, opts());
    assert_eq!(started.failures.len(), 1);
    assert!(matches!(started.failures[0].error, McpError::Start { .. }));
}
