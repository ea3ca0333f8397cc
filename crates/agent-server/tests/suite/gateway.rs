//! The OpenAI-compatible gateway (`/v1`) end to end: an in-process server,
//! a saved profile pointing at the scripted mock LLM, real agent runs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::gateway_support;

use gateway_support::{Gw, KEY, Setup, system_and_user};
use serde_json::{Value, json};
use std::time::Duration;

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn model_ids(v: &Value) -> Vec<String> {
    v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn models_follow_saved_and_deleted_profiles() {
    let gw = Gw::start().await;
    let (s, _, v) = Gw::send(gw.openai("GET", "/v1/models")).await;
    assert_eq!(s, 200);
    assert_eq!(v, json!({"object": "list", "data": []}));
    gw.save_profile("zeta").await;
    gw.save_profile("alpha").await;
    let (_, _, v) = Gw::send(gw.openai("GET", "/v1/models")).await;
    assert_eq!(model_ids(&v), vec!["openhands_alpha", "openhands_zeta"]);
    assert_eq!(
        v["data"][0],
        json!({"id": "openhands_alpha", "created": 0, "object": "model", "owned_by": "openhands"})
    );
    let (s, body) = gw.call("DELETE", "/api/profiles/zeta", None).await;
    assert_eq!(s, 200, "{body}");
    let (_, _, v) = Gw::send(gw.openai("GET", "/v1/models")).await;
    assert_eq!(model_ids(&v), vec!["openhands_alpha"]);
    gw.stop().await;
}

#[tokio::test]
async fn auth_accepts_bearer_or_session_header_and_rejects_the_rest() {
    let gw = Gw::start().await;
    gw.save_profile("p").await;
    let (s1, _, bearer) = Gw::send(gw.openai("GET", "/v1/models")).await;
    let (s2, _, header) = Gw::send(gw.req("GET", "/v1/models")).await;
    assert_eq!((s1, s2), (200, 200));
    assert_eq!(bearer, header);
    let url = gw.url("/v1/models");
    for (name, value) in [
        ("X-Unused", "x"),
        ("Authorization", "Bearer wrong"),
        ("X-Session-API-Key", "wrong"),
        ("Authorization", KEY),
        ("Authorization", &format!("Basic {KEY}")),
    ] {
        let (s, _, v) = Gw::send(gw.client.get(&url).header(name, value)).await;
        assert_eq!(s, 401, "{name}: {value}");
        assert_eq!(v, json!({"detail": "Unauthorized"}));
    }
    // Auth comes before the body is looked at.
    let (s, _, _) = Gw::send(
        gw.client
            .post(gw.url("/v1/chat/completions"))
            .json(&json!({"model": "nope"})),
    )
    .await;
    assert_eq!(s, 401);
    // The session header alone reaches the model lookup.
    let (s, _, v) = Gw::send(
        gw.req("POST", "/v1/chat/completions")
            .json(&json!({"model": "nope", "messages": [user("hi")]})),
    )
    .await;
    assert_eq!(s, 404, "{v}");
    gw.stop().await;
}

#[tokio::test]
async fn without_session_keys_the_gateway_is_open() {
    let gw = Gw::start_with(Setup {
        keys: vec![],
        ..Setup::default()
    })
    .await;
    let (s, _, v) = Gw::send(gw.client.get(gw.url("/v1/models"))).await;
    assert_eq!(s, 200, "{v}");
    gw.stop().await;
}

#[tokio::test]
async fn chat_completion_runs_the_agent_and_folds_system_messages() {
    let gw = Gw::start().await;
    gw.save_profile("demo").await;
    let (s, id, body) = gw
        .chat(
            json!({"model": "openhands_demo", "messages": [
                {"role": "system", "content": "Answer briefly, said the system."},
                {"role": "developer", "content": [{"type": "text", "text": "Developer rule."}]},
                user("An older question."),
                {"role": "assistant", "content": "An older answer."},
                user("[[mock:script:chat]] The task."),
            ]}),
            None,
        )
        .await;
    assert_eq!(s, 200, "{body}");
    let id = id.expect("conversation header");
    assert_eq!(uuid::Uuid::parse_str(&id).unwrap().to_string(), id);
    assert!(body["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "openhands_demo");
    assert!(body["created"].as_i64().unwrap() > 1_600_000_000);
    assert_eq!(
        body["choices"],
        json!([{"finish_reason": "stop", "index": 0,
                "message": {"content": "First answer.", "role": "assistant"}}])
    );
    assert_eq!(
        body["usage"],
        json!({"completion_tokens": 10, "prompt_tokens": 100, "total_tokens": 110})
    );
    // The conversation is an ordinary, finished conversation.
    let info = gw.wait_status(&id, &["finished"]).await;
    assert_eq!(
        info["workspace"]["working_dir"].as_str().unwrap(),
        gw.workspace().to_string_lossy()
    );
    // System and developer text reached the system prompt, not the task;
    // only the last user message was sent.
    let requests = gw.llm_requests_with("The task.");
    assert_eq!(requests.len(), 1);
    let (system, task) = system_and_user(&requests[0]);
    assert!(
        system.contains("Answer briefly, said the system."),
        "{system}"
    );
    assert!(system.contains("Developer rule."));
    assert!(task.contains("The task."));
    assert!(!task.contains("system"));
    assert!(requests[0].to_string().contains("\"terminal\""));
    assert!(!requests[0].to_string().contains("An older question."));
    // The profile's key is what the LLM saw.
    let with_key = gw
        .mock
        .completion_requests()
        .into_iter()
        .filter(|r| r.body.to_string().contains("The task."))
        .all(|r| r.header("authorization") == Some("Bearer sk-mock-123"));
    assert!(with_key);
    gw.stop().await;
}

#[tokio::test]
async fn the_conversation_header_continues_the_conversation() {
    let gw = Gw::start().await;
    gw.save_profile("demo").await;
    let model = "openhands_demo";
    let (s, id, first) = gw
        .chat(
            json!({"model": model, "messages": [user("[[mock:script:chat]] First question.")]}),
            None,
        )
        .await;
    assert_eq!(s, 200, "{first}");
    let id = id.unwrap();
    assert_eq!(first["choices"][0]["message"]["content"], "First answer.");
    let (s, id2, second) = gw
        .chat(
            json!({"model": model, "messages": [user("[[mock:script:chat]] Second question.")]}),
            Some(&id),
        )
        .await;
    assert_eq!(s, 200, "{second}");
    assert_eq!(id2.as_deref(), Some(id.as_str()));
    assert_eq!(second["choices"][0]["message"]["content"], "Second answer.");
    // Usage covers the whole conversation.
    assert_eq!(second["usage"]["prompt_tokens"], 200);
    let (s, page) = gw
        .call(
            "GET",
            &format!("/api/conversations/{id}/events/search?kind=MessageEvent&limit=100"),
            None,
        )
        .await;
    assert_eq!(s, 200);
    let items = page["items"].as_array().unwrap();
    let by = |source: &str| -> Vec<String> {
        items
            .iter()
            .filter(|e| e["source"] == source)
            .map(|e| {
                e["llm_message"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    assert_eq!(by("agent"), vec!["First answer.", "Second answer."]);
    let users = by("user");
    assert_eq!(users.len(), 2);
    assert!(users[1].contains("Second question."));
    // Without the header: a new conversation.
    let (_, id3, third) = gw
        .chat(
            json!({"model": model, "messages": [user("[[mock:script:chat]] Fresh.")]}),
            None,
        )
        .await;
    assert_ne!(id3.as_deref(), Some(id.as_str()));
    assert_eq!(third["choices"][0]["message"]["content"], "First answer.");
    // An unknown id in the header starts a conversation with that id.
    let chosen = uuid::Uuid::new_v4().to_string();
    let (s, id4, _) = gw
        .chat(
            json!({"model": model, "messages": [user("[[mock:script:chat]] Chosen.")]}),
            Some(&chosen),
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(id4.as_deref(), Some(chosen.as_str()));
    // A malformed header is a validation error.
    let (s, _, v) = gw
        .chat(
            json!({"model": model, "messages": [user("x")]}),
            Some("not-a-uuid"),
        )
        .await;
    assert_eq!(s, 422, "{v}");
    assert_eq!(v["detail"][0]["type"], "uuid_parsing");
    gw.stop().await;
}

#[tokio::test]
async fn streaming_sends_role_content_finish_usage_and_done() {
    let gw = Gw::start().await;
    gw.save_profile("demo").await;
    let resp = gw
        .openai("POST", "/v1/chat/completions")
        .json(&json!({"model": "openhands_demo", "stream": true,
                      "stream_options": {"include_usage": true},
                      "messages": [user("[[mock:script:stream]] Stream it.")]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let id = resp.headers()["x-openhands-serverconversation-id"]
        .to_str()
        .unwrap()
        .to_string();
    let text = resp.text().await.unwrap();
    let data: Vec<&str> = text
        .split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| e.strip_prefix("data: ").expect(e))
        .collect();
    assert_eq!(data.len(), 5, "{text}");
    assert_eq!(data[4], "[DONE]");
    let chunks: Vec<Value> = data[..4]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let cid = chunks[0]["id"].as_str().unwrap();
    assert!(cid.starts_with("chatcmpl-"));
    for c in &chunks {
        assert_eq!(c["id"], cid);
        assert_eq!(c["object"], "chat.completion.chunk");
        assert_eq!(c["model"], "openhands_demo");
    }
    assert_eq!(
        chunks[0]["choices"],
        json!([{"delta": {"role": "assistant"}, "index": 0}])
    );
    assert_eq!(
        chunks[1]["choices"],
        json!([{"delta": {"content": "Streamed answer."}, "index": 0}])
    );
    assert_eq!(
        chunks[2]["choices"],
        json!([{"delta": {}, "finish_reason": "stop", "index": 0}])
    );
    assert_eq!(chunks[3]["choices"], json!([]));
    assert_eq!(chunks[3]["usage"]["total_tokens"], 110);
    gw.wait_status(&id, &["finished"]).await;

    // Without include_usage: no usage chunk.
    let resp = gw
        .openai("POST", "/v1/chat/completions")
        .json(&json!({"model": "openhands_demo", "stream": true,
                      "messages": [user("[[mock:script:stream]] Again.")]}))
        .send()
        .await
        .unwrap();
    let text = resp.text().await.unwrap();
    assert_eq!(text.matches("data: ").count(), 4);
    assert!(!text.contains("usage"));
    gw.stop().await;
}

#[tokio::test]
async fn chat_errors_are_verbatim() {
    let gw = Gw::start().await;
    gw.save_profile("demo").await;
    let cases = [
        (
            json!({"model": "nope", "messages": [user("hi")]}),
            404,
            json!({"detail": "Unknown OpenHands model 'nope'. Use GET /v1/models."}),
        ),
        (
            json!({"model": "openhands_missing", "messages": [user("hi")]}),
            404,
            json!({"detail": "Profile 'missing' not found"}),
        ),
        (
            json!({"model": "openhands_demo", "messages": []}),
            400,
            json!({"detail": "At least one user message is required"}),
        ),
        (
            json!({"model": "openhands_demo", "messages": [{"role": "system", "content": "x"}]}),
            400,
            json!({"detail": "At least one user message is required"}),
        ),
        (
            json!({"model": "openhands_demo", "messages": [{"role": "user", "content": [{"type": "input_audio"}]}]}),
            400,
            json!({"detail": "Unsupported content part type: input_audio"}),
        ),
    ];
    for (body, status, want) in cases {
        let (s, id, v) = gw.chat(body.clone(), None).await;
        assert_eq!(s, status, "{body}: {v}");
        assert_eq!(v, want);
        assert!(id.is_none());
    }
    // Missing fields and bad roles are pydantic-shaped 422s.
    let (s, _, v) = gw.chat(json!({"messages": [user("hi")]}), None).await;
    assert_eq!(s, 422, "{v}");
    assert_eq!(v["detail"][0]["loc"], json!(["body", "model"]));
    let (s, _, v) = gw
        .chat(
            json!({"model": "openhands_demo", "messages": [{"role": "robot", "content": "x"}]}),
            None,
        )
        .await;
    assert_eq!(s, 422, "{v}");
    // No conversation was created by any of these.
    assert!(gw.conversation_ids().await.is_empty());
    gw.stop().await;
}

#[tokio::test]
async fn the_full_agent_loop_runs_in_the_workspace() {
    let gw = Gw::start().await;
    gw.save_profile("demo").await;
    let (s, id, body) = gw
        .chat(json!({"model": "openhands_demo", "messages": [user("[[mock:script:tool]] Make a file.")]}), None)
        .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], "Made the file.");
    assert!(body["choices"][0]["message"].get("tool_calls").is_none());
    let made = std::fs::read_to_string(gw.workspace().join("made.txt")).unwrap();
    assert_eq!(made.trim(), "gateway");
    let info = gw.wait_status(&id.unwrap(), &["finished"]).await;
    assert_eq!(info["execution_status"], "finished");
    gw.stop().await;
}

#[tokio::test]
async fn a_failed_run_is_a_500_naming_the_status() {
    let gw = Gw::start().await;
    gw.save_profile("demo").await;
    let (s, id, v) = gw
        .chat(
            json!({"model": "openhands_demo", "messages": [user("[[mock:script:broken]] Fail.")]}),
            None,
        )
        .await;
    assert_eq!(s, 500, "{v}");
    assert_eq!(v["detail"], "Internal Server Error");
    assert!(
        v["exception"]
            .as_str()
            .unwrap()
            .contains("Agent run ended with status: error"),
        "{v}"
    );
    // The failed conversation can be inspected.
    gw.wait_status(&id.unwrap(), &["error"]).await;
    gw.stop().await;
}

#[tokio::test]
async fn a_slow_run_times_out_with_504_and_finishes_in_the_background() {
    let gw = Gw::start_with(Setup {
        timeout: Some(Duration::from_millis(200)),
        ..Setup::default()
    })
    .await;
    gw.save_profile("demo").await;
    let (s, id, v) = gw
        .chat(json!({"model": "openhands_demo", "messages": [user("[[mock:script:slow]] Take your time.")]}), None)
        .await;
    assert_eq!(s, 504, "{v}");
    assert_eq!(
        v,
        json!({"detail": "Internal Server Error", "exception": "504: Agent run timed out"})
    );
    let id = id.expect("the 504 names the conversation");
    assert!(gw.conversation_ids().await.contains(&id));
    gw.wait_status(&id, &["finished"]).await;
    let (s, r) = gw
        .call(
            "GET",
            &format!("/api/conversations/{id}/agent_final_response"),
            None,
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(r["response"], "Slow answer.");
    gw.stop().await;
}

#[tokio::test]
async fn a_client_that_hangs_up_does_not_stop_the_conversation() {
    let gw = Gw::start().await;
    gw.save_profile("demo").await;
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let r = impatient
        .post(gw.url("/v1/chat/completions"))
        .header("Authorization", format!("Bearer {KEY}"))
        .json(&json!({"model": "openhands_demo", "messages": [user("[[mock:script:slow]] Leave early.")]}))
        .send()
        .await;
    assert!(r.is_err(), "the client should have given up");
    // The conversation exists and still finishes.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let id = loop {
        if let Some(id) = gw.conversation_ids().await.into_iter().next() {
            break id;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no conversation was created"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    gw.wait_status(&id, &["finished"]).await;
    let (_, r) = gw
        .call(
            "GET",
            &format!("/api/conversations/{id}/agent_final_response"),
            None,
        )
        .await;
    assert_eq!(r["response"], "Slow answer.");
    gw.stop().await;
}

#[tokio::test]
async fn responses_returns_the_documented_shape() {
    let gw = Gw::start().await;
    gw.save_profile("demo").await;
    let other = uuid::Uuid::new_v4().to_string();
    let (s, h, body) = Gw::send(
        gw.openai("POST", "/v1/responses")
            .header("X-OpenHands-ServerConversation-ID", &other)
            .json(&json!({
                "model": "openhands_demo",
                "instructions": "Answer briefly.",
                "input": "[[mock:script:responses]] Summarize.",
                "store": false,
                "tools": [{"type": "function", "name": "f", "parameters": {}}],
                "tool_choice": "auto", "parallel_tool_calls": true, "temperature": 0.3,
                "metadata": {"k": "v"},
            })),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    let id = h["x-openhands-serverconversation-id"]
        .to_str()
        .unwrap()
        .to_string();
    assert_ne!(
        id, other,
        "Responses ignores an inbound conversation header"
    );
    gw.wait_status(&id, &["finished"]).await;
    let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        vec![
            "id",
            "created_at",
            "completed_at",
            "instructions",
            "metadata",
            "model",
            "object",
            "output",
            "parallel_tool_calls",
            "status",
            "tool_choice",
            "tools",
            "usage"
        ]
    );
    assert!(body["id"].as_str().unwrap().starts_with("resp_"));
    assert!(body["created_at"].is_f64() && body["completed_at"].is_f64());
    assert!(body["completed_at"].as_f64() >= body["created_at"].as_f64());
    assert_eq!(body["instructions"], "Answer briefly.");
    assert_eq!(body["metadata"], json!({"k": "v"}));
    assert_eq!(body["model"], "openhands_demo");
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    assert_eq!(body["tools"], json!([]));
    assert_eq!(body["tool_choice"], "none");
    assert_eq!(body["parallel_tool_calls"], false);
    let output = body["output"].as_array().unwrap();
    assert_eq!(output.len(), 1);
    assert!(output[0]["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(output[0]["type"], "message");
    assert_eq!(output[0]["role"], "assistant");
    assert_eq!(output[0]["status"], "completed");
    assert_eq!(
        output[0]["content"],
        json!([{"annotations": [], "text": "Responses answer.", "type": "output_text"}])
    );
    assert_eq!(
        body["usage"],
        json!({"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
               "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0},
               "total_tokens": 110})
    );
    let reqs = gw.llm_requests_with("Summarize.");
    let (system, task) = system_and_user(&reqs[0]);
    assert!(system.contains("Answer briefly."));
    assert_eq!(task.trim(), "[[mock:script:responses]] Summarize.");
    // The caller's declared tool was not offered to the model.
    assert!(!reqs[0].to_string().contains("\"name\":\"f\""));
    gw.stop().await;
}

#[tokio::test]
async fn responses_input_items_keep_their_roles() {
    let gw = Gw::start().await;
    gw.save_profile("demo").await;
    // One user item (plus developer context) is sent as-is.
    let (s, _, body) = Gw::send(gw.openai("POST", "/v1/responses").json(&json!({
        "model": "openhands_demo",
        "input": [
            {"role": "developer", "content": "Developer context."},
            {"role": "user", "content": [{"type": "input_text", "text": "[[mock:script:responses]] Single."}]},
        ],
    })))
    .await;
    assert_eq!(s, 200, "{body}");
    assert!(body.get("instructions").is_none());
    let (system, task) = system_and_user(&gw.llm_requests_with("Single.")[0]);
    assert!(system.contains("Developer context."));
    assert_eq!(task.trim(), "[[mock:script:responses]] Single.");
    // Several items (a replayed output among them) are wrapped with roles.
    let (s, _, body) = Gw::send(gw.openai("POST", "/v1/responses").json(&json!({
        "model": "openhands_demo",
        "input": [
            {"role": "user", "content": "[[mock:script:responses]] Q1."},
            {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "A1.", "annotations": []}]},
            {"role": "user", "content": "Q2."},
        ],
    })))
    .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["output"][0]["content"][0]["text"], "Responses answer.");
    let (_, task) = system_and_user(&gw.llm_requests_with("Q2.")[0]);
    assert_eq!(
        task,
        "<message role=\"user\">\n[[mock:script:responses]] Q1.\n</message>\n<message role=\"assistant\">\nA1.\n</message>\n<message role=\"user\">\nQ2.\n</message>"
    );
    gw.stop().await;
}

#[tokio::test]
async fn responses_rejections_are_verbatim() {
    let gw = Gw::start().await;
    gw.save_profile("demo").await;
    let cases = [
        (
            json!({"previous_response_id": "resp_123"}),
            400,
            "previous_response_id is not supported; replay input items instead",
        ),
        (
            json!({"store": true}),
            400,
            "Persistent response storage (store=True) is not supported yet",
        ),
        (
            json!({"stream": true}),
            400,
            "Streaming responses are not supported yet",
        ),
        (
            json!({"input": ""}),
            400,
            "Responses input must not be empty",
        ),
        (
            json!({"input": [{"role": "system", "content": "x"}]}),
            400,
            "Responses input must include a user message",
        ),
        (
            json!({"model": "gpt-4o"}),
            404,
            "Unknown OpenHands model 'gpt-4o'. Use GET /v1/models.",
        ),
        (
            json!({"model": "openhands_gone"}),
            404,
            "Profile 'gone' not found",
        ),
    ];
    for (extra, status, message) in cases {
        let mut body = json!({"model": "openhands_demo", "input": "hi"});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let (s, _, v) = Gw::send(gw.openai("POST", "/v1/responses").json(&body)).await;
        assert_eq!(s, status, "{body}: {v}");
        assert_eq!(v, json!({"detail": message}));
    }
    // There is no retrievable response object.
    let (s, _, _) = Gw::send(gw.openai("GET", "/v1/responses/resp_123")).await;
    assert_eq!(s, 404);
    assert!(gw.conversation_ids().await.is_empty());
    gw.stop().await;
}

#[tokio::test]
async fn concurrent_chat_completions_all_succeed() {
    let gw = Gw::start().await;
    gw.save_profile("demo").await;
    let mut tasks = Vec::new();
    for i in 0..8 {
        let client = gw.client.clone();
        let url = gw.url("/v1/chat/completions");
        tasks.push(tokio::spawn(async move {
            let r = client
                .post(url)
                .header("Authorization", format!("Bearer {KEY}"))
                .json(&json!({"model": "openhands_demo",
                              "messages": [user(&format!("[[mock:script:chat]] Question {i}."))]}))
                .send()
                .await
                .unwrap();
            let id = r.headers()["x-openhands-serverconversation-id"]
                .to_str()
                .unwrap()
                .to_string();
            (r.status().as_u16(), id, r.json::<Value>().await.unwrap())
        }));
    }
    let mut ids = std::collections::HashSet::new();
    for t in tasks {
        let (s, id, body) = t.await.unwrap();
        assert_eq!(s, 200, "{body}");
        assert_eq!(body["choices"][0]["message"]["content"], "First answer.");
        ids.insert(id);
    }
    assert_eq!(ids.len(), 8);
    gw.stop().await;
}

#[tokio::test]
async fn openapi_documents_the_gateway_and_profile_routes() {
    let gw = Gw::start().await;
    let (s, _, doc) = Gw::send(gw.client.get(gw.url("/openapi.json"))).await;
    assert_eq!(s, 200);
    let op = |path: &str, method: &str| {
        doc["paths"][path][method]["operationId"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(op("/v1/models", "get"), "get_openai_models_v1_models_get");
    assert_eq!(
        op("/v1/chat/completions", "post"),
        "create_chat_completion_v1_chat_completions_post"
    );
    assert_eq!(
        op("/v1/responses", "post"),
        "create_response_v1_responses_post"
    );
    assert_eq!(op("/api/profiles", "get"), "list_profiles_api_profiles_get");
    assert_eq!(
        op("/api/profiles/{name}", "post"),
        "save_profile_api_profiles__name__post"
    );
    assert_eq!(
        op("/api/profiles/{name}/activate", "post"),
        "activate_profile_api_profiles__name__activate_post"
    );
    assert!(doc["components"]["securitySchemes"]["HTTPBearer"].is_object());
    assert!(doc["components"]["securitySchemes"]["APIKeyHeader"].is_object());
    assert!(doc["paths"]["/v1/responses/{id}"].is_null());
    gw.stop().await;
}
