//! MCP costs with the reference MCP server (`server-everything` over stdio,
//! named by `OPENHANDS_TEST_MCP_EVERYTHING`):
//!
//! * start-up: from `LocalConversation::new` to the first LLM request, with
//!   and without one stdio server (a zero-latency scripted LLM);
//! * per call: the mean `echo` round trip through our client, and through a
//!   minimal hand-written JSON-RPC loop on the same kind of child (newline
//!   JSON on its pipes) — the difference is our client's overhead beyond
//!   the server's own time.
//!
//! Run: `cargo bench -p openhands-sdk --bench mcp`.

#![allow(
    clippy::disallowed_methods,
    reason = "benchmarks start the external programs they compare against"
)]
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use openhands_llm::Llm;
use openhands_mcp::{McpClient, McpConfig, McpSession, StartOptions, UnknownFields};
use openhands_sdk::tool::ToolRegistry;
use openhands_sdk::{Agent, LocalConversation};
use openhands_testkit::{ScriptedLlm, Turn};
use openhands_wire::LlmConfig;
use openhands_wire::agent::AgentSpec;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const CALLS: usize = 2000;
const STARTS: usize = 5;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn first_request(index: Option<&str>) -> Duration {
    let ws = tempfile::tempdir().unwrap();
    let config = LlmConfig::new("openai/scripted");
    let backend = Arc::new(ScriptedLlm::new(openhands_testkit::Script::from_turns(
        vec![Turn::text("done")],
    )));
    let llm = Llm::with_backend(config.clone(), backend.clone());
    let mut spec = AgentSpec::new(config, vec![]);
    if let Some(index) = index {
        spec.mcp_config = json!({"everything": {"command": "node", "args": [index, "stdio"]}})
            .as_object()
            .cloned()
            .unwrap();
    }
    let t0 = Instant::now();
    let c = LocalConversation::new(
        Agent::with_llm(spec, llm, ToolRegistry::new()),
        ws.path(),
        Default::default(),
    )
    .unwrap();
    c.send_message("hi").unwrap();
    c.run().await.unwrap();
    let elapsed = t0.elapsed();
    assert_eq!(backend.requests().len(), 1);
    c.close().await;
    elapsed
}

async fn client_calls(index: &str) -> Duration {
    let cfg = McpConfig::parse(
        &json!({"everything": {"command": "node", "args": [index, "stdio"]}}),
        UnknownFields::Refuse,
    )
    .unwrap();
    let started = McpSession::start(&cfg, StartOptions::new(std::env::temp_dir())).await;
    let s = started.session;
    let args = json!({"message": "x"}).as_object().cloned().unwrap();
    for _ in 0..100 {
        s.call_tool("echo", args.clone()).await.unwrap();
    }
    let t0 = Instant::now();
    for _ in 0..CALLS {
        s.call_tool("echo", args.clone()).await.unwrap();
    }
    let per = t0.elapsed() / CALLS as u32;
    s.close().await;
    per
}

/// The same calls by a minimal JSON-RPC loop: write a line, read lines
/// until the answer with that id.
async fn raw_calls(index: &str) -> Duration {
    let mut child = tokio::process::Command::new("node")
        .args([index, "stdio"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    async fn ask(
        stdin: &mut tokio::process::ChildStdin,
        lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
        msg: Value,
    ) {
        let id = msg["id"].clone();
        let mut text = msg.to_string();
        text.push('\n');
        stdin.write_all(text.as_bytes()).await.unwrap();
        if id.is_null() {
            return;
        }
        while let Some(line) = lines.next_line().await.unwrap() {
            let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if v["id"] == id {
                return;
            }
        }
    }
    ask(
        &mut stdin,
        &mut lines,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "0"}}}),
    )
    .await;
    ask(
        &mut stdin,
        &mut lines,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    let call = |id: usize| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "echo", "arguments": {"message": "x"}}})
    };
    for i in 1..=100 {
        ask(&mut stdin, &mut lines, call(i)).await;
    }
    let t0 = Instant::now();
    for i in 0..CALLS {
        ask(&mut stdin, &mut lines, call(1000 + i)).await;
    }
    t0.elapsed() / CALLS as u32
}

fn main() {
    let Ok(index) = std::env::var("OPENHANDS_TEST_MCP_EVERYTHING") else {
        eprintln!(
            "SKIPPED: set OPENHANDS_TEST_MCP_EVERYTHING to server-everything's dist/index.js"
        );
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut without = Vec::new();
    let mut with = Vec::new();
    for _ in 0..STARTS {
        without.push(rt.block_on(first_request(None)));
        with.push(rt.block_on(first_request(Some(&index))));
    }
    println!("conversation creation -> first LLM request (median of {STARTS})");
    println!(
        "  no MCP server:          {:>8.1} ms",
        median(without).as_secs_f64() * 1e3
    );
    println!(
        "  one stdio MCP server:   {:>8.1} ms",
        median(with).as_secs_f64() * 1e3
    );
    let ours = rt.block_on(client_calls(&index));
    let raw = rt.block_on(raw_calls(&index));
    println!("echo round trip, mean of {CALLS} calls");
    println!(
        "  our client:             {:>8.1} us",
        ours.as_secs_f64() * 1e6
    );
    println!(
        "  minimal JSON-RPC loop:  {:>8.1} us",
        raw.as_secs_f64() * 1e6
    );
    println!(
        "  our overhead:           {:>8.1} us",
        (ours.as_secs_f64() - raw.as_secs_f64()) * 1e6
    );
}
