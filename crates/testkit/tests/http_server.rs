//! Drives the mock LLM server over real HTTP on 127.0.0.1: every endpoint,
//! plain and streaming, errors, raw bodies, cut streams, delays, the request
//! log and script replacement.

#![allow(
    clippy::disallowed_methods,
    reason = "tests start real programs, stage files and read fixture locations from the environment"
)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_testkit::{MockLlmHandle, MockLlmServer, Script, ScriptUsage, Turn, TurnError};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

async fn start(script: Script) -> MockLlmHandle {
    MockLlmServer::start(script, 0).await.unwrap()
}

/// `(event name, data)` pairs of an SSE body.
fn sse(text: &str) -> Vec<(Option<String>, String)> {
    text.split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|block| {
            let mut event = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(e) = line.strip_prefix("event: ") {
                    event = Some(e.to_string());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data.push_str(d);
                }
            }
            (event, data)
        })
        .collect()
}

fn sse_json(text: &str) -> Vec<(Option<String>, Value)> {
    sse(text)
        .into_iter()
        .filter(|(_, d)| d != "[DONE]")
        .map(|(e, d)| (e, serde_json::from_str(&d).unwrap()))
        .collect()
}

fn tools() -> Value {
    json!([{"type": "function", "function": {"name": "terminal", "parameters": {"type": "object"}}}])
}

async fn post(h: &MockLlmHandle, path: &str, body: Value) -> reqwest::Response {
    client()
        .post(format!("{}{path}", h.url()))
        .json(&body)
        .send()
        .await
        .unwrap()
}

// ---------------------------------------------------------------- chat

#[tokio::test]
async fn chat_plain_tool_call_then_text() {
    let h = start(Script::from_turns([
        Turn::tool_call("terminal", json!({"command": "ls"})).with_reasoning("thinking"),
        Turn::text("All done.").with_usage(ScriptUsage {
            prompt_tokens: 1000,
            completion_tokens: 20,
            cache_read_tokens: 600,
            cache_write_tokens: 50,
            reasoning_tokens: 5,
        }),
    ]))
    .await;
    let r = post(
        &h,
        "/v1/chat/completions",
        json!({"model": "mock-model", "messages": [{"role": "user", "content": "hi"}], "tools": tools()}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert!(v["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "mock-model");
    let choice = &v["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    let call = &choice["message"]["tool_calls"][0];
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "terminal");
    assert_eq!(call["function"]["arguments"], r#"{"command":"ls"}"#);
    assert!(choice["message"]["content"].is_null());
    assert_eq!(choice["message"]["reasoning_content"], "thinking");
    assert_eq!(v["usage"]["prompt_tokens"], 100);
    assert_eq!(v["usage"]["total_tokens"], 110);

    let call_id = call["id"].as_str().unwrap().to_string();
    let r = post(
        &h,
        "/chat/completions",
        json!({"model": "openai/other", "tools": tools(), "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [call.clone()]},
            {"role": "tool", "tool_call_id": call_id, "content": "a.txt"}
        ]}),
    )
    .await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["model"], "openai/other");
    assert_eq!(v["choices"][0]["message"]["content"], "All done.");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert!(v["choices"][0]["message"].get("tool_calls").is_none());
    let u = &v["usage"];
    assert_eq!(u["prompt_tokens"], 1000);
    assert_eq!(u["prompt_tokens_details"]["cached_tokens"], 600);
    assert_eq!(u["completion_tokens_details"]["reasoning_tokens"], 5);
    assert_eq!(u["cache_creation_input_tokens"], 50);
    h.shutdown().await;
}

#[tokio::test]
async fn chat_stream_chunks_reassemble() {
    let h = start(Script::from_turns([Turn::text("Hello streaming world")
        .with_reasoning("plan it")
        .with_tool_call("terminal", json!({"command": "echo hi"}))
        .with_tool_call("finish", json!({"message": "ok"}))
        .with_chunk_chars(5)]))
    .await;
    let r = post(
        &h,
        "/v1/chat/completions",
        json!({"model": "m", "stream": true, "stream_options": {"include_usage": true},
               "messages": [{"role": "user", "content": "go"}], "tools": tools()}),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let text = r.text().await.unwrap();
    let raw = sse(&text);
    assert_eq!(raw.last().unwrap().1, "[DONE]");
    let chunks = sse_json(&text);
    assert_eq!(chunks[0].1["choices"][0]["delta"]["role"], "assistant");
    let (mut content, mut reasoning) = (String::new(), String::new());
    let mut calls: Vec<(String, String, String)> = Vec::new();
    let mut finish = None;
    let mut usage = None;
    for (_, c) in &chunks {
        assert_eq!(c["object"], "chat.completion.chunk");
        if let Some(u) = c.get("usage").filter(|u| !u.is_null()) {
            assert!(c["choices"].as_array().unwrap().is_empty());
            usage = Some(u.clone());
            continue;
        }
        let d = &c["choices"][0]["delta"];
        if let Some(s) = d["content"].as_str() {
            content.push_str(s);
        }
        if let Some(s) = d["reasoning_content"].as_str() {
            reasoning.push_str(s);
        }
        if let Some(tcs) = d["tool_calls"].as_array() {
            for tc in tcs {
                let i = tc["index"].as_u64().unwrap() as usize;
                if i == calls.len() {
                    calls.push((
                        tc["id"].as_str().unwrap().into(),
                        tc["function"]["name"].as_str().unwrap().into(),
                        String::new(),
                    ));
                }
                if let Some(a) = tc["function"]["arguments"].as_str() {
                    calls[i].2.push_str(a);
                }
            }
        }
        if let Some(f) = c["choices"][0]["finish_reason"].as_str() {
            finish = Some(f.to_string());
        }
    }
    assert_eq!(content, "Hello streaming world");
    assert_eq!(reasoning, "plan it");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].1, "terminal");
    assert_eq!(calls[0].2, r#"{"command":"echo hi"}"#);
    assert_eq!(calls[1].2, r#"{"message":"ok"}"#);
    assert!(calls[0].0.starts_with("call_0_0_"));
    assert_eq!(finish.as_deref(), Some("tool_calls"));
    assert_eq!(usage.unwrap()["total_tokens"], 110);
    // content pieces are chunk_chars long
    let first_piece = chunks
        .iter()
        .find_map(|(_, c)| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .filter(|s| !s.is_empty())
        })
        .unwrap();
    assert_eq!(first_piece, "Hello");
}

#[tokio::test]
async fn chat_stream_without_include_usage_has_no_usage_chunk() {
    let h = start(Script::from_turns([Turn::text("x")])).await;
    let text = post(
        &h,
        "/v1/chat/completions",
        json!({"stream": true, "messages": [{"role": "user", "content": "go"}]}),
    )
    .await
    .text()
    .await
    .unwrap();
    assert!(
        sse_json(&text)
            .iter()
            .all(|(_, c)| c.get("usage").is_none())
    );
}

#[tokio::test]
async fn chat_errors_have_status_body_and_retry_after() {
    let h = start(
        Script::from_turns([Turn::default().with_error(TurnError {
            retry_after: Some(7),
            ..TurnError::status(429)
        })])
        .with_script(
            "ctx",
            vec![Turn::default().with_error(TurnError::context_window())],
        )
        .with_script(
            "custom",
            vec![Turn::default().with_error(TurnError {
                message: Some("boom".into()),
                error_type: Some("my_type".into()),
                code: Some("my_code".into()),
                ..TurnError::status(502)
            })],
        ),
    )
    .await;
    let r = post(
        &h,
        "/v1/chat/completions",
        json!({"messages": [{"role": "user", "content": "go"}]}),
    )
    .await;
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["retry-after"], "7");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["message"], "mock error 429");
    assert_eq!(v["error"]["type"], "rate_limit_error");
    assert!(v["error"]["code"].is_null());
    assert!(v["error"]["param"].is_null());

    let r = post(
        &h,
        "/v1/chat/completions",
        json!({"stream": true, "messages": [{"role": "user", "content": "[[mock:script:ctx]]"}]}),
    )
    .await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "context_length_exceeded");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("maximum context length")
    );

    let r = post(
        &h,
        "/v1/responses",
        json!({"input": "[[mock:script:custom]]"}),
    )
    .await;
    assert_eq!(r.status(), 502);
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v,
        json!({"error": {"message": "boom", "type": "my_type", "param": null, "code": "my_code"}})
    );
}

#[tokio::test]
async fn fail_times_counts_per_prompt_cache_key() {
    let h = start(Script::from_turns([Turn::error(503)
        .with_fail_times(2)
        .with_text("recovered")]))
    .await;
    let body = |key: &str| json!({"prompt_cache_key": key, "messages": [{"role": "user", "content": "same"}]});
    let mut statuses = Vec::new();
    for key in ["a", "a", "b", "a", "b", "b"] {
        statuses.push(
            post(&h, "/v1/chat/completions", body(key))
                .await
                .status()
                .as_u16(),
        );
    }
    assert_eq!(statuses, vec![503, 503, 503, 200, 503, 200]);
    // the session header is the key when the body has none
    let c = client();
    let mut hs = Vec::new();
    for _ in 0..3 {
        hs.push(
            c.post(format!("{}/chat/completions", h.base_url()))
                .header("x-litellm-session-id", "sess-1")
                .json(&json!({"messages": [{"role": "user", "content": "same"}]}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16(),
        );
    }
    assert_eq!(hs, vec![503, 503, 200]);
}

#[tokio::test]
async fn markers_toolless_and_exhausted() {
    let h = start(
        Script::from_turns([Turn::text("default-0")])
            .with_script("alt", vec![Turn::text("alt-0"), Turn::text("alt-1")])
            .with_toolless_reply(Turn::text("A title")),
    )
    .await;
    let ask = |msgs: Value, with_tools: bool| {
        let mut b = json!({"messages": msgs});
        if with_tools {
            b["tools"] = tools();
        }
        b
    };
    let text = |v: Value| {
        v["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let v: Value = post(
        &h,
        "/v1/chat/completions",
        ask(json!([{"role": "user", "content": "hi"}]), true),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(text(v), "default-0");
    let msgs = json!([
        {"role": "user", "content": [{"type": "text", "text": "task [[mock:script:alt]]"}]},
        {"role": "assistant", "content": "alt-0"},
        {"role": "user", "content": "more"}
    ]);
    let v: Value = post(&h, "/v1/chat/completions", ask(msgs.clone(), true))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(text(v), "alt-1");
    let v: Value = post(&h, "/v1/chat/completions", ask(msgs, false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(text(v), "A title");
    let v: Value = post(
        &h,
        "/v1/chat/completions",
        ask(
            json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"}]),
            true,
        ),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(text(v), "Script exhausted.");
    let r = post(
        &h,
        "/v1/chat/completions",
        ask(
            json!([{"role": "user", "content": "[[mock:script:missing]]"}]),
            true,
        ),
    )
    .await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "unknown_script");
}

#[tokio::test]
async fn raw_body_is_returned_verbatim() {
    let h = start(Script::from_turns([Turn::raw_body("{\"choices\": [oops")])).await;
    let r = post(
        &h,
        "/v1/chat/completions",
        json!({"messages": [{"role": "user", "content": "x"}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap(), "{\"choices\": [oops");
    let r = post(
        &h,
        "/v1/chat/completions",
        json!({"stream": true, "messages": [{"role": "user", "content": "x"}]}),
    )
    .await;
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    assert_eq!(r.text().await.unwrap(), "{\"choices\": [oops");
}

#[tokio::test]
async fn cut_stream_ends_without_final_events() {
    let h = start(
        Script::from_turns([Turn::text("abcdefghijklmnopqrstuvwx")
            .with_chunk_chars(4)
            .with_cut_stream()])
        .with_script(
            "resp",
            vec![
                Turn::text("abcdefghijklmnop")
                    .with_chunk_chars(4)
                    .with_cut_stream(),
            ],
        ),
    )
    .await;
    let r = post(
        &h,
        "/v1/chat/completions",
        json!({"stream": true, "messages": [{"role": "user", "content": "x"}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    let events = sse(&text);
    assert!(events.iter().all(|(_, d)| d != "[DONE]"));
    let chunks = sse_json(&text);
    let content: String = chunks
        .iter()
        .filter_map(|(_, c)| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(content, "abcdefghijkl");
    assert!(
        chunks
            .iter()
            .all(|(_, c)| c["choices"][0]["finish_reason"].is_null())
    );
    // the non-streaming answer is whole
    let v: Value = post(
        &h,
        "/v1/chat/completions",
        json!({"messages": [{"role": "user", "content": "x"}]}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(
        v["choices"][0]["message"]["content"],
        "abcdefghijklmnopqrstuvwx"
    );
    // Responses and Anthropic streams stop before their final event too
    let text = post(
        &h,
        "/v1/responses",
        json!({"stream": true, "input": "[[mock:script:resp]]"}),
    )
    .await
    .text()
    .await
    .unwrap();
    let names: Vec<String> = sse(&text).into_iter().filter_map(|(e, _)| e).collect();
    assert!(names.contains(&"response.output_text.delta".to_string()));
    assert!(!names.contains(&"response.completed".to_string()));
    let text = post(
        &h,
        "/v1/messages",
        json!({"stream": true, "messages": [{"role": "user", "content": "[[mock:script:resp]]"}]}),
    )
    .await
    .text()
    .await
    .unwrap();
    let names: Vec<String> = sse(&text).into_iter().filter_map(|(e, _)| e).collect();
    assert!(names.contains(&"content_block_delta".to_string()));
    assert!(!names.contains(&"message_stop".to_string()));
}

#[tokio::test]
async fn delay_holds_the_answer_back() {
    let h = start(Script::from_turns([Turn::text("late").with_delay_ms(300)])).await;
    let started = Instant::now();
    let v: Value = post(
        &h,
        "/v1/chat/completions",
        json!({"messages": [{"role": "user", "content": "x"}]}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(v["choices"][0]["message"]["content"], "late");

    // streaming: headers come first, the first event after the delay
    let started = Instant::now();
    let r = post(
        &h,
        "/v1/chat/completions",
        json!({"stream": true, "messages": [{"role": "user", "content": "x"}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(sse(&text).last().unwrap().1, "[DONE]");

    // a client that gives up does not wedge the server
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(50))
        .build()
        .unwrap();
    let err = impatient
        .post(format!("{}/chat/completions", h.base_url()))
        .json(&json!({"messages": [{"role": "user", "content": "x"}]}))
        .send()
        .await;
    assert!(err.is_err());
    let health = client()
        .get(format!("{}/health", h.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
}

// ---------------------------------------------------------------- responses

#[tokio::test]
async fn responses_plain_output_items_and_positions() {
    let h = start(Script::from_turns([
        Turn::tool_call("terminal", json!({"command": "ls"}))
            .with_reasoning("why")
            .with_text("Running ls."),
        Turn::text("Finished."),
    ]))
    .await;
    let r = post(
        &h,
        "/v1/responses",
        json!({"model": "mock-model", "input": [{"role": "user", "content": "go"}],
               "tools": [{"type": "function", "name": "terminal"}],
               "include": ["reasoning.encrypted_content"]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert!(v["id"].as_str().unwrap().starts_with("resp_"));
    assert_eq!(v["object"], "response");
    assert_eq!(v["status"], "completed");
    let out = v["output"].as_array().unwrap();
    assert_eq!(out[0]["type"], "reasoning");
    assert_eq!(out[0]["summary"][0]["text"], "why");
    assert!(out[0]["encrypted_content"].is_string());
    assert_eq!(out[1]["type"], "message");
    assert_eq!(out[1]["content"][0]["type"], "output_text");
    assert_eq!(out[1]["content"][0]["text"], "Running ls.");
    assert_eq!(out[2]["type"], "function_call");
    assert_eq!(out[2]["arguments"], r#"{"command":"ls"}"#);
    assert_eq!(v["usage"]["input_tokens"], 100);
    assert_eq!(v["usage"]["output_tokens"], 10);
    assert_eq!(v["usage"]["input_tokens_details"]["cached_tokens"], 0);

    // the whole previous output (reasoning + message + call) is one turn
    let mut input = vec![json!({"role": "user", "content": "go"})];
    input.extend(out.iter().cloned());
    input
        .push(json!({"type": "function_call_output", "call_id": out[2]["call_id"], "output": "a"}));
    let v: Value = post(
        &h,
        "/responses",
        json!({"input": input, "tools": [{"type": "function", "name": "terminal"}]}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(v["output"][0]["content"][0]["text"], "Finished.");
}

#[tokio::test]
async fn responses_stream_events() {
    let h = start(Script::from_turns([Turn::text("Hello there")
        .with_reasoning("hmm")
        .with_tool_call("terminal", json!({"command": "pwd"}))
        .with_chunk_chars(3)]))
    .await;
    let text = post(
        &h,
        "/v1/responses",
        json!({"stream": true, "input": "go", "tools": [{"type": "function", "name": "terminal"}]}),
    )
    .await
    .text()
    .await
    .unwrap();
    let events = sse_json(&text);
    let names: Vec<&str> = events.iter().map(|(e, _)| e.as_deref().unwrap()).collect();
    assert_eq!(names[0], "response.created");
    assert_eq!(*names.last().unwrap(), "response.completed");
    for required in [
        "response.output_item.added",
        "response.output_item.done",
        "response.output_text.delta",
        "response.function_call_arguments.delta",
        "response.reasoning_summary_text.delta",
    ] {
        assert!(names.contains(&required), "{required} missing");
    }
    let mut text_out = String::new();
    let mut args = String::new();
    for (i, (name, v)) in events.iter().enumerate() {
        assert_eq!(v["type"].as_str(), name.as_deref());
        assert_eq!(v["sequence_number"], i);
        match name.as_deref() {
            Some("response.output_text.delta") => text_out.push_str(v["delta"].as_str().unwrap()),
            Some("response.function_call_arguments.delta") => {
                args.push_str(v["delta"].as_str().unwrap())
            }
            _ => {}
        }
    }
    assert_eq!(text_out, "Hello there");
    assert_eq!(args, r#"{"command":"pwd"}"#);
    let done = &events.last().unwrap().1["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["output"].as_array().unwrap().len(), 3);
    assert_eq!(done["usage"]["total_tokens"], 110);
}

// ---------------------------------------------------------------- anthropic

#[tokio::test]
async fn anthropic_plain_blocks_and_usage() {
    let h = start(Script::from_turns([
        Turn::tool_call("terminal", json!({"command": "ls"}))
            .with_reasoning("think")
            .with_text("Let me look.")
            .with_usage(ScriptUsage {
                prompt_tokens: 100,
                completion_tokens: 9,
                cache_read_tokens: 60,
                cache_write_tokens: 10,
                reasoning_tokens: 0,
            }),
        Turn::text("Done."),
    ]))
    .await;
    let v: Value = post(
        &h,
        "/v1/messages",
        json!({"model": "claude-x", "max_tokens": 100, "system": "sys",
               "messages": [{"role": "user", "content": "go"}],
               "tools": [{"name": "terminal", "input_schema": {"type": "object"}}]}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(v["type"], "message");
    assert_eq!(v["role"], "assistant");
    assert_eq!(v["model"], "claude-x");
    assert_eq!(v["stop_reason"], "tool_use");
    let c = v["content"].as_array().unwrap();
    assert_eq!(c[0]["type"], "thinking");
    assert!(
        c[0]["signature"]
            .as_str()
            .unwrap()
            .starts_with("mock-signature-")
    );
    assert_eq!(c[1], json!({"type": "text", "text": "Let me look."}));
    assert_eq!(c[2]["type"], "tool_use");
    assert_eq!(c[2]["input"], json!({"command": "ls"}));
    assert_eq!(
        v["usage"],
        json!({"input_tokens": 30, "output_tokens": 9,
               "cache_read_input_tokens": 60, "cache_creation_input_tokens": 10})
    );
    let v: Value = post(
        &h,
        "/messages",
        json!({"messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": c.clone()},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": c[2]["id"], "content": "x"}]}
        ], "tools": [{"name": "terminal"}]}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(v["content"][0]["text"], "Done.");
    assert_eq!(v["stop_reason"], "end_turn");
}

#[tokio::test]
async fn anthropic_stream_and_errors() {
    let h = start(
        Script::from_turns([Turn::text("Hi there")
            .with_reasoning("deep")
            .with_tool_call("terminal", json!({"command": "ls"}))
            .with_chunk_chars(4)])
        .with_script(
            "err",
            vec![Turn::default().with_error(TurnError::status(529))],
        ),
    )
    .await;
    let text = post(
        &h,
        "/v1/messages",
        json!({"stream": true, "messages": [{"role": "user", "content": "go"}], "tools": [{"name": "terminal"}]}),
    )
    .await
    .text()
    .await
    .unwrap();
    let events = sse_json(&text);
    let names: Vec<&str> = events.iter().map(|(e, _)| e.as_deref().unwrap()).collect();
    assert_eq!(names[0], "message_start");
    assert_eq!(names[names.len() - 2], "message_delta");
    assert_eq!(*names.last().unwrap(), "message_stop");
    let (mut thinking, mut body, mut json_args) = (String::new(), String::new(), String::new());
    let mut starts = Vec::new();
    for (name, v) in &events {
        assert_eq!(v["type"].as_str(), name.as_deref());
        if name.as_deref() == Some("content_block_start") {
            starts.push(v["content_block"]["type"].as_str().unwrap().to_string());
        }
        if name.as_deref() == Some("content_block_delta") {
            let d = &v["delta"];
            match d["type"].as_str().unwrap() {
                "thinking_delta" => thinking.push_str(d["thinking"].as_str().unwrap()),
                "text_delta" => body.push_str(d["text"].as_str().unwrap()),
                "input_json_delta" => json_args.push_str(d["partial_json"].as_str().unwrap()),
                "signature_delta" => assert!(d["signature"].is_string()),
                other => panic!("unexpected delta {other}"),
            }
        }
    }
    assert_eq!(starts, vec!["thinking", "text", "tool_use"]);
    assert_eq!((thinking.as_str(), body.as_str()), ("deep", "Hi there"));
    assert_eq!(json_args, r#"{"command":"ls"}"#);
    let delta = &events[names.len() - 2].1;
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(delta["usage"]["output_tokens"], 10);

    let r = post(
        &h,
        "/v1/messages",
        json!({"messages": [{"role": "user", "content": "[[mock:script:err]]"}]}),
    )
    .await;
    assert_eq!(r.status(), 529);
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "mock error 529"}})
    );
    // a body that is not JSON gets the API's error shape
    let r = client()
        .post(format!("{}/v1/messages", h.url()))
        .body("{nope")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "invalid_request_error");
}

// ---------------------------------------------------------------- misc

#[tokio::test]
async fn bad_bodies_get_openai_400() {
    let h = start(Script::from_turns([Turn::text("x")])).await;
    let c = client();
    for body in ["not json", "[1,2]", ""] {
        let r = c
            .post(format!("{}/chat/completions", h.base_url()))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{body:?}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["type"], "invalid_request_error");
        assert!(v["error"]["message"].as_str().unwrap().contains("mock LLM"));
    }
    // every one of them was still recorded
    let log = h.requests();
    assert_eq!(log.len(), 3);
    assert_eq!(log[0].body_text.as_deref(), Some("not json"));
    assert_eq!(log[1].body, json!([1, 2]));
    assert!(log[2].body.is_null() && log[2].body_text.is_none());
}

#[tokio::test]
async fn request_log_over_http_and_clear() {
    let h = start(Script::from_turns([Turn::text("a"), Turn::text("b")])).await;
    let c = client();
    c.post(format!("{}/chat/completions?trace=1", h.base_url()))
        .bearer_auth("mock-key")
        .json(&json!({"model": "m", "messages": [{"role": "user", "content": "one"}]}))
        .send()
        .await
        .unwrap();
    c.get(format!("{}/models", h.base_url()))
        .send()
        .await
        .unwrap();
    post(&h, "/v1/responses", json!({"input": "two"})).await;
    let log: Value = c
        .get(format!("{}/_mock/requests", h.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let log = log.as_array().unwrap();
    assert_eq!(log.len(), 3);
    assert_eq!(log[0]["method"], "POST");
    assert_eq!(log[0]["path"], "/v1/chat/completions");
    assert_eq!(log[0]["query"], "trace=1");
    assert_eq!(log[0]["headers"]["authorization"], "Bearer mock-key");
    assert_eq!(log[0]["body"]["messages"][0]["content"], "one");
    assert_eq!(log[1]["method"], "GET");
    assert_eq!(log[1]["path"], "/v1/models");
    assert_eq!(log[2]["body"]["input"], "two");
    assert!(log[0]["seq"].as_u64() < log[2]["seq"].as_u64());
    assert_eq!(h.completion_requests().len(), 2);
    assert_eq!(
        h.requests()[0].header("Authorization"),
        Some("Bearer mock-key")
    );

    let cleared: Value = c
        .delete(format!("{}/_mock/requests", h.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(cleared["cleared"], 3);
    assert!(h.requests().is_empty());
}

#[tokio::test]
async fn models_health_and_unknown_routes() {
    let h = start(Script::default()).await;
    let c = client();
    let v: Value = c
        .get(format!("{}/models", h.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["object"], "list");
    assert_eq!(v["data"].as_array().unwrap().len(), 1);
    assert_eq!(v["data"][0]["id"], "mock-model");
    let v: Value = c
        .get(format!("{}/health", h.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["status"], "ok");
    let r = c
        .post(format!("{}/v1/embeddings", h.url()))
        .json(&json!({"input": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "not_found");
    assert_eq!(h.requests().last().unwrap().path, "/v1/embeddings");
}

#[tokio::test]
async fn script_can_be_replaced_over_http_and_in_process() {
    let h = start(Script::from_turns([Turn::text("old")])).await;
    let c = client();
    let ask = || json!({"messages": [{"role": "user", "content": "x"}]});
    let content = |v: Value| v["choices"][0]["message"]["content"].clone();
    let r = c
        .put(format!("{}/_mock/script", h.url()))
        .body(r#"[{"text": "new"}]"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = post(&h, "/v1/chat/completions", ask())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(content(v), "new");
    let r = c
        .put(format!("{}/_mock/script", h.url()))
        .body(r#"[{"txt": "typo"}]"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert!(v["error"]["message"].as_str().unwrap().contains("txt"));
    h.set_script(Script::from_turns([Turn::text("newer")]));
    let v: Value = post(&h, "/v1/chat/completions", ask())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(content(v), "newer");
}

#[tokio::test]
async fn concurrent_conversations_get_their_own_turns() {
    let h = start(
        Script::from_turns([Turn::text("d0"), Turn::text("d1")])
            .with_script("x", vec![Turn::text("x0"), Turn::text("x1")]),
    )
    .await;
    let mut tasks = Vec::new();
    for i in 0..20 {
        let url = format!("{}/chat/completions", h.base_url());
        tasks.push(tokio::spawn(async move {
            let marker = if i % 2 == 0 { "[[mock:script:x]]" } else { "" };
            let mut msgs = vec![json!({"role": "user", "content": format!("task {i} {marker}")})];
            if i % 4 < 2 {
                msgs.push(json!({"role": "assistant", "content": "earlier"}));
            }
            let v: Value = client()
                .post(url)
                .json(&json!({"messages": msgs, "tools": tools()}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let expected = match (i % 2 == 0, i % 4 < 2) {
                (true, true) => "x1",
                (true, false) => "x0",
                (false, true) => "d1",
                (false, false) => "d0",
            };
            assert_eq!(
                v["choices"][0]["message"]["content"], expected,
                "request {i}"
            );
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(h.completion_requests().len(), 20);
}

#[tokio::test]
async fn shutdown_stops_listening() {
    let h = start(Script::default()).await;
    let url = format!("{}/health", h.url());
    assert_eq!(client().get(&url).send().await.unwrap().status(), 200);
    h.shutdown().await;
    let fresh = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    assert!(fresh.get(&url).send().await.is_err());
}
