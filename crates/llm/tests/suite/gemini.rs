//! Gemini's own API against a local stand-in of
//! `generativelanguage.googleapis.com`: a multi-turn tool run where the
//! function call's thought signature must come back on the next turn
//! (Gemini 3 refuses the turn otherwise, and so does the stand-in), and a
//! streamed reply.

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use openhands_llm::{Llm, LlmRequest, TokenCallback, ToolSchema};
use openhands_wire::LlmConfig;
use openhands_wire::content::Content;
use openhands_wire::message::Message;
use openhands_wire::secret::SecretString;
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::sync::Arc;

#[derive(Clone, Default)]
struct Stand {
    seen: Arc<Mutex<Vec<(String, String, Value)>>>,
}

/// Answers like Gemini 3: a signed function call first; later turns must
/// carry the signature on that call or get Gemini's 400.
async fn handle(State(s): State<Stand>, req: Request) -> Response {
    let uri = req.uri().to_string();
    let key = req
        .headers()
        .get("x-goog-api-key")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(
        &axum::body::to_bytes(req.into_body(), 1 << 24)
            .await
            .unwrap(),
    )
    .unwrap();
    let turn = s.seen.lock().len();
    s.seen.lock().push((uri.clone(), key, body.clone()));
    let signed_call = json!({"functionCall": {"name": "terminal", "args": {"command": "ls"}},
                             "thoughtSignature": "U0lHTkVELTE="});
    let usage =
        json!({"promptTokenCount": 100, "candidatesTokenCount": 10, "thoughtsTokenCount": 5});
    if uri.contains(":streamGenerateContent") {
        let chunks = [
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}]}),
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "lo"}]},
                   "finishReason": "STOP"}], "usageMetadata": usage, "responseId": "s1"}),
        ];
        let sse: String = chunks
            .iter()
            .map(|c| format!("data: {c}\r\n\r\n"))
            .collect();
        return ([(header::CONTENT_TYPE, "text/event-stream")], sse).into_response();
    }
    if turn == 0 {
        return axum::Json(json!({
            "candidates": [{"content": {"role": "model", "parts": [
                {"text": "thinking about it", "thought": true}, signed_call]},
                "finishReason": "STOP"}],
            "usageMetadata": usage, "responseId": "r0"
        }))
        .into_response();
    }
    let has_signature = body["contents"].as_array().unwrap().iter().any(|c| {
        c["parts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p.get("functionCall").is_some() && p["thoughtSignature"] == "U0lHTkVELTE=")
    });
    if !has_signature {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": {"code": 400, "status": "INVALID_ARGUMENT",
                "message": "Function call is missing a thought_signature in functionCall parts."}})),
        )
            .into_response();
    }
    axum::Json(json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": "There is a.txt."}]},
                        "finishReason": "STOP"}],
        "usageMetadata": usage, "responseId": format!("r{turn}")
    }))
    .into_response()
}

async fn stand_in() -> (String, Stand) {
    let stand = Stand::default();
    let app = Router::new().fallback(handle).with_state(stand.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), stand)
}

fn cfg(base: &str) -> LlmConfig {
    let mut c = LlmConfig::new("gemini/gemini-3-pro-preview");
    c.base_url = Some(base.to_string());
    c.api_key = Some(SecretString::new("gem-key"));
    c.num_retries = 0;
    c.timeout = Some(20.0);
    c
}

#[tokio::test]
async fn a_multi_turn_tool_run_keeps_the_thought_signature() {
    let (base, stand) = stand_in().await;
    let llm = Llm::new(cfg(&base)).unwrap();
    let mut req = LlmRequest {
        messages: vec![Message::system("Be brief."), Message::user("what is here?")],
        tools: vec![ToolSchema {
            name: "terminal".into(),
            description: "Run a command".into(),
            parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        }],
        conversation_id: None,
    };
    let r = llm.completion(&req, None).await.unwrap();
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(
        r.message.reasoning_content.as_deref(),
        Some("thinking about it")
    );
    let call = r.message.tool_calls.clone().unwrap().remove(0);
    assert!(call.id.ends_with("__thought__U0lHTkVELTE="), "{}", call.id);
    assert_eq!(call.arguments, r#"{"command":"ls"}"#);
    // The message goes through persistence (JSON) as the agent keeps it.
    let stored: Message =
        serde_json::from_value(serde_json::to_value(&r.message).unwrap()).unwrap();
    req.messages.push(stored);
    req.messages.push(Message::tool_result(
        call.id.clone(),
        "terminal",
        vec![Content::text("a.txt")],
    ));
    let r2 = llm.completion(&req, None).await.unwrap();
    assert_eq!(r2.message.content[0].as_text(), Some("There is a.txt."));

    let seen = stand.seen.lock().clone();
    assert_eq!(
        seen[0].0,
        "/v1beta/models/gemini-3-pro-preview:generateContent"
    );
    assert_eq!(seen[0].1, "gem-key");
    let first = &seen[0].2;
    assert_eq!(first["systemInstruction"]["parts"][0]["text"], "Be brief.");
    assert_eq!(
        first["tools"][0]["functionDeclarations"][0]["name"],
        "terminal"
    );
    let second = &seen[1].2;
    let response = &second["contents"][2]["parts"][0]["functionResponse"];
    assert_eq!(response["name"], "terminal");
    assert_eq!(response["response"]["content"], "a.txt");
    // Thoughts count as output tokens, as LiteLLM counts them.
    let m = llm.metrics();
    assert_eq!(m.accumulated_token_usage.unwrap().completion_tokens, 30);
}

#[tokio::test]
async fn a_streamed_reply_is_assembled() {
    let (base, stand) = stand_in().await;
    let mut c = cfg(&base);
    c.stream = true;
    let llm = Llm::new(c).unwrap();
    let got = Arc::new(Mutex::new(String::new()));
    let g2 = got.clone();
    let cb: TokenCallback = Arc::new(move |d| {
        if let Some(t) = d.content {
            g2.lock().push_str(&t);
        }
    });
    let req = LlmRequest {
        messages: vec![Message::user("hi")],
        ..LlmRequest::default()
    };
    let r = llm.completion(&req, Some(cb)).await.unwrap();
    assert_eq!(r.message.content[0].as_text(), Some("Hello"));
    assert_eq!(*got.lock(), "Hello");
    assert_eq!(r.id, "s1");
    assert_eq!(
        stand.seen.lock()[0].0,
        "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse"
    );
}
