//! HTTP edge cases the scripted mock does not produce, served by small
//! axum handlers on 127.0.0.1: refused connections, JSON answers to
//! streaming requests, oversized `Retry-After`, odd SSE framing, Azure
//! URLs and extra headers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use axum::Router;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures::StreamExt;
use openhands_llm::{Llm, LlmError, LlmRequest, TokenCallback};
use openhands_wire::LlmConfig;
use openhands_wire::message::Message;
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

type Seen = Arc<Mutex<Vec<(HeaderMap, HashMap<String, String>, Value)>>>;

async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    format!("http://{addr}")
}

fn cfg(model: &str, base: &str) -> LlmConfig {
    let mut c = LlmConfig::new(model);
    c.base_url = Some(base.to_string());
    c.retry_multiplier = 0.001;
    c.retry_min_wait = 0.001;
    c.retry_max_wait = 0.002;
    c.num_retries = 2;
    c.timeout = Some(10.0);
    c
}

fn req() -> LlmRequest {
    LlmRequest {
        messages: vec![Message::user("hi")],
        tools: vec![],
        conversation_id: None,
    }
}

fn chat_json(text: &str) -> Value {
    json!({"id": "chatcmpl-x", "choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1}})
}

#[tokio::test]
async fn refused_connection_is_service_unavailable() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let llm = Llm::new(cfg("openai/m", &format!("http://{addr}/v1"))).unwrap();
    let err = llm.completion(&req(), None).await.unwrap_err();
    assert!(matches!(err, LlmError::ServiceUnavailable(_)), "{err:?}");
}

#[tokio::test]
async fn json_answer_to_a_streaming_request_is_accepted() {
    let app = Router::new().route(
        "/chat/completions",
        post(|| async { axum::Json(chat_json("not streamed")) }),
    );
    let base = serve(app).await;
    let mut c = cfg("openai/m", &base);
    c.stream = true;
    let cb: TokenCallback = Arc::new(|_| {});
    let r = Llm::new(c)
        .unwrap()
        .completion(&req(), Some(cb))
        .await
        .unwrap();
    assert_eq!(r.message.text(), "not streamed");
}

#[tokio::test]
async fn sse_with_crlf_comments_and_split_frames_parses() {
    let body = ": keep-alive\r\n\r\n\
        data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\r\n\r\n\
        data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\r\n\r\n\
        data: [DONE]\r\n\r\n";
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move || async move {
            // Deliver the body in 7-byte pieces to exercise frame reassembly.
            let pieces: Vec<Result<Vec<u8>, std::io::Error>> =
                body.as_bytes().chunks(7).map(|c| Ok(c.to_vec())).collect();
            Response::builder()
                .header(header::CONTENT_TYPE, "text/event-stream")
                .body(Body::from_stream(futures::stream::iter(pieces)))
                .unwrap()
        }),
    );
    let base = serve(app).await;
    let mut c = cfg("openai/m", &format!("{base}/v1"));
    c.stream = true;
    let seen = Arc::new(Mutex::new(String::new()));
    let s2 = seen.clone();
    let cb: TokenCallback = Arc::new(move |d| {
        if let Some(t) = d.content {
            s2.lock().push_str(&t);
        }
    });
    let r = Llm::new(c)
        .unwrap()
        .completion(&req(), Some(cb))
        .await
        .unwrap();
    assert_eq!(r.message.text(), "Hello");
    assert_eq!(*seen.lock(), "Hello");
}

#[tokio::test]
async fn long_retry_after_is_capped_by_retry_max_wait() {
    let calls = Arc::new(Mutex::new(0u32));
    let c2 = calls.clone();
    let app = Router::new().route(
        "/chat/completions",
        post(move || {
            let calls = c2.clone();
            async move {
                let n = {
                    let mut g = calls.lock();
                    *g += 1;
                    *g
                };
                if n == 1 {
                    (
                        StatusCode::TOO_MANY_REQUESTS,
                        [("retry-after", "3600")],
                        axum::Json(
                            json!({"error": {"message": "slow down", "type": "rate_limit_error"}}),
                        ),
                    )
                        .into_response()
                } else {
                    axum::Json(chat_json("after wait")).into_response()
                }
            }
        }),
    );
    let base = serve(app).await;
    let started = std::time::Instant::now();
    let r = Llm::new(cfg("openai/m", &base))
        .unwrap()
        .completion(&req(), None)
        .await
        .unwrap();
    assert_eq!(r.message.text(), "after wait");
    assert_eq!(*calls.lock(), 2);
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

#[tokio::test]
async fn azure_urls_and_extra_headers() {
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let app = Router::new()
        .route(
            "/openai/deployments/{dep}/chat/completions",
            post(
                |State(seen): State<Seen>,
                 Query(q): Query<HashMap<String, String>>,
                 headers: HeaderMap,
                 axum::Json(body): axum::Json<Value>| async move {
                    seen.lock().push((headers, q, body));
                    axum::Json(chat_json("azure ok"))
                },
            ),
        )
        .with_state(s2);
    let base = serve(app).await;
    let mut c = cfg("azure/my-deploy", &base);
    c.api_key = Some("az-key".into());
    c.api_version = Some("2025-01-01-preview".into());
    c.max_output_tokens = Some(50);
    let mut extra = serde_json::Map::new();
    extra.insert("X-Custom".into(), json!("yes"));
    c.extra_headers = Some(extra);
    let r = Llm::new(c).unwrap().completion(&req(), None).await.unwrap();
    assert_eq!(r.message.text(), "azure ok");
    let seen = seen.lock();
    let (h, q, body) = &seen[0];
    assert_eq!(
        q.get("api-version").map(String::as_str),
        Some("2025-01-01-preview")
    );
    assert_eq!(h.get("api-key").unwrap(), "az-key");
    assert!(h.get("authorization").is_none());
    assert_eq!(h.get("x-custom").unwrap(), "yes");
    assert_eq!(body["model"], "my-deploy");
    assert_eq!(body["max_tokens"], 50);
}

#[tokio::test]
async fn html_error_pages_and_empty_bodies_classify_by_status() {
    let app = Router::new()
        .route(
            "/a/chat/completions",
            post(|| async { (StatusCode::BAD_GATEWAY, "<html>bad gateway</html>") }),
        )
        .route(
            "/b/chat/completions",
            post(|| async { (StatusCode::OK, "") }),
        );
    let base = serve(app).await;
    let err = Llm::new(cfg("openai/m", &format!("{base}/a")))
        .unwrap()
        .completion(&req(), None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, LlmError::ServiceUnavailable(ref m) if m.contains("502")),
        "{err:?}"
    );
    let err = Llm::new(cfg("openai/m", &format!("{base}/b")))
        .unwrap()
        .completion(&req(), None)
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::MalformedResponse(_)), "{err:?}");
}

#[tokio::test]
async fn finished_stream_whose_connection_lingers_is_accepted() {
    let app = Router::new().route(
        "/chat/completions",
        post(|| async {
            let first = "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"done\"},\"finish_reason\":\"stop\"}]}\n\n";
            let pieces = futures::stream::iter(vec![Ok::<_, std::io::Error>(first.as_bytes().to_vec())])
                .chain(futures::stream::pending());
            Response::builder()
                .header(header::CONTENT_TYPE, "text/event-stream")
                .body(Body::from_stream(pieces))
                .unwrap()
        }),
    );
    let base = serve(app).await;
    let mut c = cfg("openai/m", &base);
    c.stream = true;
    c.stream_idle_timeout = Some(0.2);
    let cb: TokenCallback = Arc::new(|_| {});
    let r = Llm::new(c)
        .unwrap()
        .completion(&req(), Some(cb))
        .await
        .unwrap();
    assert_eq!(r.message.text(), "done");
}
