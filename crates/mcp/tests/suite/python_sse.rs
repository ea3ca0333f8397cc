//! The client against an MCP server built with the `mcp` package from PyPI
//! over the legacy SSE transport (`tests/fixtures/sse_server.py`, run by
//! the Python named in `OPENHANDS_TEST_MCP_PYTHON`, which scripts/test.sh
//! sets to the compat venv's).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_mcp::{McpClient, McpConfig, McpContent, McpSession, StartOptions, UnknownFields};
use openhands_testkit::fixtures::{KillOnDrop, free_port, mcp_python};
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::test]
async fn python_sse_server_lists_calls_with_the_bearer_token_and_announces_new_tools() {
    let Some(python) = mcp_python() else {
        return;
    };
    let port = free_port();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/sse_server.py");
    let child = std::process::Command::new(python)
        .arg(script)
        .arg(port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _guard = KillOnDrop(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the SSE server did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // No `transport`: a URL path ending in /sse selects SSE, as in FastMCP.
    let cfg = McpConfig::parse(
        &json!({"py": {"url": format!("http://127.0.0.1:{port}/sse"),
                       "auth": {"strategy": "bearer", "value": "tok-123"}}}),
        UnknownFields::Refuse,
    )
    .unwrap();
    let started = McpSession::start(&cfg, StartOptions::new(std::env::temp_dir())).await;
    assert!(started.failures.is_empty(), "{:?}", started.failures);
    let s = started.session;
    let add = s.tools().into_iter().find(|t| t.name == "add").unwrap();
    assert_eq!(add.description.as_deref(), Some("Add two integers."));
    assert_eq!(add.input_schema["properties"]["a"]["type"], "integer");
    let r = s
        .call_tool(
            "add",
            json!({"a": 2, "b": 40}).as_object().cloned().unwrap(),
        )
        .await
        .unwrap();
    assert!(!r.is_error, "{r:?}");
    assert_eq!(
        r.content,
        vec![McpContent::Text("42 (auth: Bearer tok-123)".into())]
    );

    // tools/list_changed: the new tool is listed and callable.
    assert!(s.tools().iter().all(|t| t.name != "secret"));
    let generation = s.generation();
    s.call_tool("unlock", serde_json::Map::new()).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.generation() == generation && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        s.generation() > generation,
        "tools/list_changed not observed"
    );
    assert!(s.tools().iter().any(|t| t.name == "secret"));
    let r = s.call_tool("secret", serde_json::Map::new()).await.unwrap();
    assert_eq!(r.content, vec![McpContent::Text("the secret".into())]);
    s.close().await;
}
