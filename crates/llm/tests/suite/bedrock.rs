//! Bedrock Converse against a local stand-in of the runtime endpoint: the
//! stand-in records each request (raw path, headers, body) and answers as
//! Bedrock does (JSON for Converse, the AWS binary event stream for
//! ConverseStream, `x-amzn-errortype` errors). SigV4 signatures are
//! recomputed by botocore (an independent implementation, from the compat
//! venv) for the very request received; without the venv that check says
//! loudly it did not run.

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use openhands_llm::bedrock::event_stream;
use openhands_llm::{Llm, LlmError, LlmRequest, TokenCallback, ToolSchema};
use openhands_wire::LlmConfig;
use openhands_wire::message::{AnyThinkingBlock, Message};
use openhands_wire::secret::SecretString;
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;

const MODEL: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";

/// One request as the stand-in received it.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Seen {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .map(|v| v.to_str().unwrap())
            .unwrap_or("")
    }
}

/// What the stand-in answers, in order.
enum Answer {
    Json(Value),
    Stream(Vec<Vec<u8>>),
    Error(u16, &'static str, Value),
}

#[derive(Clone)]
struct Stand {
    seen: Arc<Mutex<Vec<Seen>>>,
    answers: Arc<Mutex<Vec<Answer>>>,
}

async fn handle(State(s): State<Stand>, req: Request) -> Response {
    let path = req.uri().path().to_string();
    let headers = req.headers().clone();
    let body: Bytes = axum::body::to_bytes(req.into_body(), 1 << 24)
        .await
        .unwrap();
    s.seen.lock().push(Seen {
        path,
        headers,
        body: body.to_vec(),
    });
    let answer = {
        let mut a = s.answers.lock();
        assert!(!a.is_empty(), "an unexpected request");
        a.remove(0)
    };
    match answer {
        Answer::Json(v) => axum::Json(v).into_response(),
        Answer::Stream(frames) => {
            let chunks: Vec<Result<Vec<u8>, std::io::Error>> = frames.into_iter().map(Ok).collect();
            Response::builder()
                .header(header::CONTENT_TYPE, "application/vnd.amazon.eventstream")
                .body(Body::from_stream(futures::stream::iter(chunks)))
                .unwrap()
        }
        Answer::Error(status, kind, body) => Response::builder()
            .status(StatusCode::from_u16(status).unwrap())
            .header(
                "x-amzn-errortype",
                format!("{kind}:http://internal.amazon.com/coral/"),
            )
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap(),
    }
}

async fn stand_in(answers: Vec<Answer>) -> (String, Stand) {
    let stand = Stand {
        seen: Arc::default(),
        answers: Arc::new(Mutex::new(answers)),
    };
    let app = Router::new().fallback(handle).with_state(stand.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), stand)
}

fn cfg(base: &str) -> LlmConfig {
    let mut c = LlmConfig::new(format!("bedrock/{MODEL}"));
    c.base_url = Some(base.to_string());
    c.extra.insert("aws_region_name".into(), json!("us-east-1"));
    c.num_retries = 0;
    c.timeout = Some(20.0);
    c.reasoning_effort = None;
    c
}

fn sigv4_cfg(base: &str) -> LlmConfig {
    let mut c = cfg(base);
    c.extra
        .insert("aws_access_key_id".into(), json!("AKIDTEST"));
    c.extra
        .insert("aws_secret_access_key".into(), json!("secret/key+TEST"));
    c.extra
        .insert("aws_session_token".into(), json!("session-token-1"));
    c
}

fn tools() -> Vec<ToolSchema> {
    vec![ToolSchema {
        name: "terminal".into(),
        description: "Run a command".into(),
        parameters: json!({"type": "object", "properties": {"command": {"type": "string"}},
                           "required": ["command"]}),
    }]
}

fn frame(event: &str, payload: Value) -> Vec<u8> {
    event_stream::encode(
        &[
            (":event-type", event),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.to_string().as_bytes(),
    )
}

/// botocore's Authorization header for the received request, or `None`
/// (said loudly) without the compat venv.
fn botocore_authorization(base: &str, seen: &Seen) -> Option<String> {
    let venv = std::env::var_os("COMPAT_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/openhands-rs/compat-venv"));
    let python = venv.join("bin/python");
    if !python.is_file() {
        eprintln!(
            "SKIPPED botocore signature check: no compat venv at {}",
            venv.display()
        );
        return None;
    }
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../compat/scripts/sigv4_check.py");
    let mut headers = serde_json::Map::new();
    for (k, v) in &seen.headers {
        headers.insert(k.to_string(), json!(v.to_str().unwrap()));
    }
    let input = json!({
        "method": "POST",
        "url": format!("{base}{}", seen.path),
        "headers": headers,
        "body": String::from_utf8(seen.body.clone()).unwrap(),
        "access_key": "AKIDTEST",
        "secret_key": "secret/key+TEST",
        "session_token": "session-token-1",
        "region": "us-east-1",
        "service": "bedrock",
    });
    let mut child = std::process::Command::new(python)
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    Some(v["authorization"].as_str().unwrap().to_string())
}

#[tokio::test]
async fn converse_with_sigv4_tool_calls_and_cost() {
    let reply = json!({
        "output": {"message": {"role": "assistant", "content": [
            {"text": "Listing."},
            {"toolUse": {"toolUseId": "tooluse_a1", "name": "terminal", "input": {"command": "ls"}}}
        ]}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 100, "outputTokens": 10, "totalTokens": 110},
        "metrics": {"latencyMs": 12}
    });
    let done = json!({
        "output": {"message": {"role": "assistant", "content": [{"text": "Done."}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 130, "outputTokens": 2, "totalTokens": 132}
    });
    let (base, stand) = stand_in(vec![Answer::Json(reply), Answer::Json(done)]).await;
    let llm = Llm::new(sigv4_cfg(&base)).unwrap();
    let mut req = LlmRequest {
        messages: vec![
            Message::system("You are terse."),
            Message::user("list files"),
        ],
        tools: tools(),
        conversation_id: None,
    };
    let r = llm.completion(&req, None).await.unwrap();
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    let call = &r.message.tool_calls.as_ref().unwrap()[0];
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("tooluse_a1", "terminal")
    );
    assert_eq!(call.arguments, r#"{"command":"ls"}"#);

    let seen = stand.seen.lock()[0].clone();
    assert_eq!(
        seen.path,
        "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse"
    );
    let auth = seen.header("authorization");
    assert!(
        auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDTEST/")
            && auth.contains("/us-east-1/bedrock/aws4_request")
            && auth.contains("SignedHeaders=content-type;host;x-amz-date;x-amz-security-token"),
        "{auth}"
    );
    assert_eq!(seen.header("x-amz-security-token"), "session-token-1");
    if let Some(expected) = botocore_authorization(&base, &seen) {
        assert_eq!(auth, expected, "botocore computes the same signature");
    }
    let body = seen.json();
    assert_eq!(body["system"][0]["text"], "You are terse.");
    assert_eq!(body["messages"][0]["content"][0]["text"], "list files");
    assert_eq!(
        body["toolConfig"]["tools"][0]["toolSpec"]["name"],
        "terminal"
    );
    assert!(body["inferenceConfig"]["maxTokens"].as_u64().unwrap() > 0);

    // The tool call and its result go back as toolUse / toolResult.
    req.messages.push(r.message.clone());
    req.messages.push(Message::tool_result(
        "tooluse_a1",
        "terminal",
        vec![openhands_wire::content::Content::text("a.txt")],
    ));
    llm.completion(&req, None).await.unwrap();
    let second = stand.seen.lock()[1].json();
    let msgs = second["messages"].as_array().unwrap();
    assert_eq!(msgs[1]["content"][1]["toolUse"]["toolUseId"], "tooluse_a1");
    assert_eq!(
        msgs[2]["content"][0]["toolResult"]["toolUseId"],
        "tooluse_a1"
    );
    assert_eq!(
        msgs[2]["content"][0]["toolResult"]["content"][0]["text"],
        "a.txt"
    );

    // Usage and cost are recorded from the table's Bedrock entry.
    let m = llm.metrics();
    let usage = m.accumulated_token_usage.as_ref().unwrap();
    assert_eq!(usage.prompt_tokens, 230);
    assert_eq!(usage.completion_tokens, 12);
    let entry = openhands_llm::model_info::model_spec(&format!("bedrock/{MODEL}"))
        .expect("the Bedrock model is in the price table");
    let expected =
        230.0 * entry.rates["input_cost_per_token"] + 12.0 * entry.rates["output_cost_per_token"];
    assert!(
        (m.accumulated_cost - expected).abs() < 1e-12 && m.accumulated_cost > 0.0,
        "{} vs {expected}",
        m.accumulated_cost
    );
}

#[tokio::test]
async fn converse_stream_with_a_bearer_token() {
    let frames = vec![
        frame("messageStart", json!({"role": "assistant"})),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Think"}}}),
        ),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "SIG"}}}),
        ),
        frame("contentBlockStop", json!({"contentBlockIndex": 0})),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"text": "Let me "}}),
        ),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"text": "check."}}),
        ),
        frame("contentBlockStop", json!({"contentBlockIndex": 1})),
        frame(
            "contentBlockStart",
            json!({"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "tooluse_s", "name": "terminal"}}}),
        ),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 2, "delta": {"toolUse": {"input": "{\"command\":"}}}),
        ),
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 2, "delta": {"toolUse": {"input": "\"pwd\"}"}}}),
        ),
        frame("contentBlockStop", json!({"contentBlockIndex": 2})),
        frame("messageStop", json!({"stopReason": "tool_use"})),
        frame(
            "metadata",
            json!({"usage": {"inputTokens": 50, "outputTokens": 20, "totalTokens": 70,
                             "cacheReadInputTokens": 30}, "metrics": {"latencyMs": 9}}),
        ),
    ];
    // Cut the frames at odd places: the decoder reassembles them.
    let all: Vec<u8> = frames.concat();
    let chunks: Vec<Vec<u8>> = all.chunks(37).map(<[u8]>::to_vec).collect();
    let (base, stand) = stand_in(vec![Answer::Stream(chunks)]).await;
    let mut c = cfg(&base);
    c.api_key = Some(SecretString::new("bedrock-api-key-1"));
    c.stream = true;
    let llm = Llm::new(c).unwrap();
    let deltas = Arc::new(Mutex::new(Vec::new()));
    let d2 = deltas.clone();
    let cb: TokenCallback = Arc::new(move |d| d2.lock().push(d));
    let req = LlmRequest {
        messages: vec![Message::user("where am I")],
        tools: tools(),
        conversation_id: None,
    };
    let r = llm.completion(&req, Some(cb)).await.unwrap();
    let seen = stand.seen.lock()[0].clone();
    assert_eq!(
        seen.path,
        "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    );
    assert_eq!(seen.header("authorization"), "Bearer bedrock-api-key-1");
    assert_eq!(
        seen.header("x-amz-date"),
        "",
        "no SigV4 with a bearer token"
    );
    assert_eq!(r.message.content[0].as_text(), Some("Let me check."));
    let call = &r.message.tool_calls.as_ref().unwrap()[0];
    assert_eq!(call.arguments, r#"{"command":"pwd"}"#);
    assert!(matches!(&r.message.thinking_blocks[0],
        AnyThinkingBlock::Thinking(t) if t.signature.as_deref() == Some("SIG")));
    assert_eq!(r.usage.prompt_tokens, 80);
    assert_eq!(r.usage.cache_read_tokens, 30);
    let texts: Vec<String> = deltas
        .lock()
        .iter()
        .filter_map(|d| d.content.clone())
        .collect();
    assert_eq!(texts, ["Let me ", "check."]);
}

#[tokio::test]
async fn errors_and_in_stream_exceptions_are_classified() {
    let exception = event_stream::encode(
        &[
            (":exception-type", "throttlingException"),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        br#"{"message":"Too many requests, please wait."}"#,
    );
    let (base, _stand) = stand_in(vec![
        Answer::Error(
            400,
            "ValidationException",
            json!({"message": "Input is too long for requested model."}),
        ),
        Answer::Error(403, "AccessDeniedException", json!({"Message": "denied"})),
        Answer::Stream(vec![
            frame("messageStart", json!({"role": "assistant"})),
            exception,
        ]),
    ])
    .await;
    let llm = Llm::new(sigv4_cfg(&base)).unwrap();
    let req = LlmRequest {
        messages: vec![Message::user("hi")],
        ..LlmRequest::default()
    };
    let e = llm.completion(&req, None).await.unwrap_err();
    assert!(matches!(e, LlmError::ContextWindowExceeded(_)), "{e:?}");
    let e = llm.completion(&req, None).await.unwrap_err();
    assert!(matches!(e, LlmError::Authentication(_)), "{e:?}");
    let mut c = sigv4_cfg(&base);
    c.stream = true;
    let llm = Llm::new(c).unwrap();
    let cb: TokenCallback = Arc::new(|_| {});
    let e = llm.completion(&req, Some(cb)).await.unwrap_err();
    assert!(matches!(e, LlmError::RateLimit { .. }), "{e:?}");
}

#[test]
fn missing_credentials_are_a_clear_configuration_error() {
    let mut c = LlmConfig::new(format!("bedrock/{MODEL}"));
    c.extra
        .insert("aws_role_name".into(), json!("arn:aws:iam::1:role/r"));
    let e = Llm::new(c).unwrap_err();
    assert!(e.to_string().contains("aws_role_name"), "{e}");
}
