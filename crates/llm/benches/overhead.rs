//! Measures the crate's own CPU cost per call: building a request with 20
//! tool schemas and a realistic history, serializing it, and parsing a
//! ~4 KB reply, for each protocol, without network. Then an end-to-end
//! round trip against the local scripted mock server.
//!
//! Run: `cargo bench -p openhands-llm --bench overhead`. Goal: < 1 ms per
//! call of our own work.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_llm::openai_chat::ChatStream;
use openhands_llm::routing::{self, Route};
use openhands_llm::{Llm, LlmRequest, ToolSchema, anthropic, openai_chat, openai_responses};
use openhands_testkit::{MockLlmServer, Script, Turn};
use openhands_wire::LlmConfig;
use openhands_wire::content::Content;
use openhands_wire::llm_config::ApiMode;
use openhands_wire::message::{Message, MessageToolCall, Role, ToolCallOrigin};
use serde_json::{Value, json};
use std::hint::black_box;
use std::time::Instant;

fn tools() -> Vec<ToolSchema> {
    (0..20)
        .map(|i| ToolSchema {
            name: format!("tool_{i}"),
            description: "Performs one well-described operation on the workspace. ".repeat(6),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command to run, verbatim."},
                    "path": {"type": "string", "description": "Absolute path of the file."},
                    "timeout": {"type": "number", "description": "Seconds before giving up."},
                    "mode": {"type": "string", "enum": ["view", "create", "str_replace", "insert"]},
                    "security_risk": {"type": "string", "enum": ["UNKNOWN", "LOW", "MEDIUM", "HIGH"]},
                    "summary": {"type": "string", "description": "One-line summary of the action."}
                },
                "required": ["command"]
            }),
        })
        .collect()
}

fn history() -> Vec<Message> {
    let mut msgs = vec![
        Message::new(
            Role::System,
            vec![
                Content::text("You are a careful software agent. ".repeat(100)),
                Content::text("Working directory: /workspace. Date: 2026-11-30."),
            ],
        ),
        Message::user("Please fix the failing test in the parser module."),
    ];
    for i in 0..4 {
        let mut a = Message::assistant(format!("Step {i}: inspecting files."));
        a.tool_calls = Some(vec![MessageToolCall {
            id: format!("call_{i}"),
            responses_item_id: None,
            name: "tool_0".into(),
            arguments: json!({"command": format!("grep -rn parse src/ | head -{i}")}).to_string(),
            origin: ToolCallOrigin::Completion,
        }]);
        msgs.push(a);
        msgs.push(Message::tool_result(
            format!("call_{i}"),
            "tool_0",
            vec![Content::text(
                "src/parser.rs:12: fn parse(input: &str)\n".repeat(40),
            )],
        ));
    }
    msgs
}

fn chat_reply() -> Vec<u8> {
    let text = "The failing assertion compares the wrong token kinds. ".repeat(75);
    json!({
        "id": "chatcmpl-bench", "object": "chat.completion", "model": "mock-model",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": text,
            "reasoning_content": "Let me reason about the parser. ".repeat(10),
            "tool_calls": [{"id": "call_x", "type": "function", "function": {
                "name": "tool_1", "arguments": json!({"command": "cargo test -p parser", "timeout": 120}).to_string()}}]}}],
        "usage": {"prompt_tokens": 12000, "completion_tokens": 900,
            "prompt_tokens_details": {"cached_tokens": 8000}, "completion_tokens_details": {"reasoning_tokens": 100}}
    })
    .to_string()
    .into_bytes()
}

fn responses_reply() -> Vec<u8> {
    let text = "The failing assertion compares the wrong token kinds. ".repeat(75);
    json!({
        "id": "resp_bench", "object": "response", "status": "completed",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Reasoning. ".repeat(20)}],
             "encrypted_content": "gAAAA".repeat(60)},
            {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": text}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "tool_1",
             "arguments": json!({"command": "cargo test"}).to_string()}
        ],
        "usage": {"input_tokens": 12000, "output_tokens": 900}
    })
    .to_string()
    .into_bytes()
}

fn anthropic_reply() -> Vec<u8> {
    let text = "The failing assertion compares the wrong token kinds. ".repeat(75);
    json!({
        "id": "msg_bench", "type": "message", "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Reasoning. ".repeat(20), "signature": "sig".repeat(30)},
            {"type": "text", "text": text},
            {"type": "tool_use", "id": "toolu_1", "name": "tool_1", "input": {"command": "cargo test"}}
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 4000, "output_tokens": 900, "cache_read_input_tokens": 8000}
    })
    .to_string()
    .into_bytes()
}

fn chat_sse() -> Vec<String> {
    let text = "The failing assertion compares the wrong token kinds. ".repeat(75);
    let mut out: Vec<String> = text
        .as_bytes()
        .chunks(16)
        .map(|c| {
            json!({"id": "c", "choices": [{"index": 0, "delta": {"content": String::from_utf8_lossy(c)}}]})
                .to_string()
        })
        .collect();
    out.push(
        json!({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            .to_string(),
    );
    out.push("[DONE]".into());
    out
}

/// Runs `f` `iters` times after a warm-up and returns mean µs per call.
fn measure(iters: u32, mut f: impl FnMut()) -> f64 {
    for _ in 0..iters / 10 {
        f();
    }
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    t.elapsed().as_secs_f64() * 1e6 / f64::from(iters)
}

fn route_for(c: &LlmConfig) -> Route {
    routing::resolve(c).unwrap()
}

fn offline() {
    let request = LlmRequest {
        messages: history(),
        tools: tools(),
        conversation_id: Some("bench-conversation".into()),
    };
    let iters = 2000;

    let mut chat = LlmConfig::new("openai/mock-model");
    chat.base_url = Some("http://127.0.0.1:1/v1".into());
    let mut resp = chat.clone();
    resp.api_mode = ApiMode::Responses;
    let mut anth = LlmConfig::new("anthropic/claude-sonnet-4-5");
    anth.base_url = Some("http://127.0.0.1:1".into());

    type Build = fn(&LlmConfig, &Route, &LlmRequest, bool) -> Value;
    type Parse =
        fn(&LlmConfig, &[u8]) -> Result<openhands_llm::LlmResponse, openhands_llm::LlmError>;
    let cases: [(&str, &LlmConfig, Build, Parse, Vec<u8>); 3] = [
        (
            "chat",
            &chat,
            openai_chat::build_body,
            openai_chat::parse_response,
            chat_reply(),
        ),
        (
            "responses",
            &resp,
            openai_responses::build_body,
            openai_responses::parse_response,
            responses_reply(),
        ),
        (
            "anthropic",
            &anth,
            anthropic::build_body,
            anthropic::parse_response,
            anthropic_reply(),
        ),
    ];
    let req_bytes = serde_json::to_vec(&chat_build(&chat, &request))
        .unwrap()
        .len();
    println!(
        "request: {} messages, {} tools, ~{} KB body; reply ~{} KB",
        request.messages.len(),
        request.tools.len(),
        req_bytes / 1024,
        chat_reply().len() / 1024
    );
    for (name, cfg, build, parse, reply) in &cases {
        let route = route_for(cfg);
        let build_us = measure(iters, || {
            let body = build(cfg, &route, &request, false);
            black_box(serde_json::to_vec(&body).unwrap());
        });
        let parse_us = measure(iters, || {
            black_box(parse(cfg, reply).unwrap());
        });
        println!(
            "{name:>10}: build+serialize {build_us:7.1} µs, parse {parse_us:6.1} µs, total {:7.1} µs/call",
            build_us + parse_us
        );
    }
    let chunks = chat_sse();
    let stream_us = measure(iters, || {
        let mut s = ChatStream::new();
        for c in &chunks {
            s.feed(c, None).unwrap();
        }
        black_box(s.finish(&chat).unwrap());
    });
    println!(
        "chat SSE assembly ({} chunks, ~4 KB text): {stream_us:.1} µs/reply",
        chunks.len()
    );
}

fn chat_build(c: &LlmConfig, r: &LlmRequest) -> Value {
    openai_chat::build_body(c, &route_for(c), r, false)
}

fn end_to_end() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let text = "The failing assertion compares the wrong token kinds. ".repeat(75);
        let server = MockLlmServer::start(Script::from_turns([Turn::text(text)]), 0)
            .await
            .unwrap();
        let request = LlmRequest {
            messages: history(),
            tools: tools(),
            conversation_id: Some("bench".into()),
        };
        for (label, mode, stream) in [
            ("chat", ApiMode::Chat, false),
            ("chat+SSE", ApiMode::Chat, true),
            ("responses", ApiMode::Responses, false),
        ] {
            let mut c = LlmConfig::new("openai/mock-model");
            c.base_url = Some(server.base_url());
            c.api_mode = mode;
            c.stream = stream;
            let llm = Llm::new(c).unwrap();
            let cb: Option<openhands_llm::TokenCallback> = if stream {
                Some(std::sync::Arc::new(|d| {
                    black_box(d);
                }))
            } else {
                None
            };
            for _ in 0..20 {
                llm.completion(&request, cb.clone()).await.unwrap();
            }
            let n = 300;
            let t = Instant::now();
            for _ in 0..n {
                black_box(llm.completion(&request, cb.clone()).await.unwrap());
            }
            let ms = t.elapsed().as_secs_f64() * 1e3 / f64::from(n);
            println!(
                "end-to-end {label:>9} against local mock (client + mock server + loopback): {ms:.3} ms/call"
            );
        }
        server.shutdown().await;
    });
}

fn main() {
    offline();
    end_to_end();
}
