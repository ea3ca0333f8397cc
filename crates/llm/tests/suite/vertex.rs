//! Vertex AI against local stand-ins: the service account's `token_uri`
//! is a local token endpoint that checks the RS256 JWT (signature against
//! the key's public half, issuer, audience, scope, grant type) before
//! handing out an access token; the Vertex endpoint (`base_url`) checks
//! that token and answers Gemini `generateContent` and Anthropic
//! `rawPredict` calls. The token is fetched once and reused. gcloud's
//! application-default user credentials refresh at the same endpoint, and
//! are found where Google's libraries look for them.

use axum::Router;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use openhands_llm::{Llm, LlmRequest};
use openhands_wire::LlmConfig;
use openhands_wire::message::Message;
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::sync::Arc;

const KEY_PEM: &str = include_str!("../fixtures/vertex_test_key.pem");

#[derive(Clone, Default)]
struct Stand {
    base: Arc<Mutex<String>>,
    exchanges: Arc<Mutex<u32>>,
    calls: Arc<Mutex<Vec<(String, Value)>>>,
}

fn public_key_der() -> Vec<u8> {
    let b64: String = KEY_PEM
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    let der = STANDARD.decode(b64).unwrap();
    let pair = ring::signature::RsaKeyPair::from_pkcs8(&der).unwrap();
    use ring::signature::KeyPair;
    pair.public_key().as_ref().to_vec()
}

async fn handle(State(s): State<Stand>, req: Request) -> Response {
    let path = req.uri().to_string();
    let auth = req
        .headers()
        .get("authorization")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let bytes = axum::body::to_bytes(req.into_body(), 1 << 24)
        .await
        .unwrap();
    if path == "/token" {
        let form: Vec<(String, String)> =
            url::form_urlencoded::parse(&bytes).into_owned().collect();
        let get = |k: &str| {
            form.iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        if get("grant_type") == "refresh_token" {
            // gcloud's application-default user credentials.
            assert_eq!(get("client_id"), "cid.apps.googleusercontent.com");
            assert_eq!(get("client_secret"), "csecret");
            if get("refresh_token") != "1//refresh" {
                return (StatusCode::BAD_REQUEST, "invalid_grant").into_response();
            }
            *s.exchanges.lock() += 1;
            return axum::Json(json!({"access_token": "ya29.local", "expires_in": 3599,
                                     "token_type": "Bearer"}))
            .into_response();
        }
        assert_eq!(
            get("grant_type"),
            "urn:ietf:params:oauth:grant-type:jwt-bearer"
        );
        let jwt = get("assertion");
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        assert_eq!(header["alg"], "RS256");
        let claims: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["iss"], "agent@proj-1.iam.gserviceaccount.com");
        assert_eq!(claims["aud"], format!("{}/token", s.base.lock()));
        assert_eq!(
            claims["scope"],
            "https://www.googleapis.com/auth/cloud-platform"
        );
        assert_eq!(
            claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
            3600
        );
        let key = ring::signature::UnparsedPublicKey::new(
            &ring::signature::RSA_PKCS1_2048_8192_SHA256,
            public_key_der(),
        );
        let signed = format!("{}.{}", parts[0], parts[1]);
        if key
            .verify(
                signed.as_bytes(),
                &URL_SAFE_NO_PAD.decode(parts[2]).unwrap(),
            )
            .is_err()
        {
            return (StatusCode::BAD_REQUEST, "bad signature").into_response();
        }
        *s.exchanges.lock() += 1;
        return axum::Json(json!({"access_token": "ya29.local", "expires_in": 3599,
                                 "token_type": "Bearer"}))
        .into_response();
    }
    if auth != "Bearer ya29.local" {
        return (StatusCode::UNAUTHORIZED, axum::Json(json!({"error": {"code": 401,
            "message": "Request had invalid authentication credentials.", "status": "UNAUTHENTICATED"}})))
            .into_response();
    }
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    s.calls.lock().push((path.clone(), body));
    if path.ends_with(":streamRawPredict") {
        let events = [
            (
                "message_start",
                json!({"type": "message_start", "message": {"id": "msg_s",
                "usage": {"input_tokens": 12, "output_tokens": 0}}}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": "Streamed "}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": "on Vertex."}}),
            ),
            (
                "message_delta",
                json!({"type": "message_delta",
                "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}}),
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ];
        let sse: String = events
            .iter()
            .map(|(e, d)| format!("event: {e}\ndata: {d}\n\n"))
            .collect();
        return (
            [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
            sse,
        )
            .into_response();
    }
    if path.ends_with(":rawPredict") {
        return axum::Json(
            json!({"id": "msg_v1", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": "Hi from Claude on Vertex."}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 12, "output_tokens": 6}}),
        )
        .into_response();
    }
    axum::Json(json!({"candidates": [{"content": {"role": "model",
        "parts": [{"text": "Hi from Gemini on Vertex."}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 5}}))
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
    let base = format!("http://{addr}");
    *stand.base.lock() = base.clone();
    (base, stand)
}

fn credentials(base: &str) -> String {
    json!({
        "type": "service_account",
        "project_id": "proj-1",
        "private_key_id": "k1",
        "private_key": KEY_PEM,
        "client_email": "agent@proj-1.iam.gserviceaccount.com",
        "token_uri": format!("{base}/token"),
    })
    .to_string()
}

fn cfg(model: &str, base: &str, creds: &str) -> LlmConfig {
    let mut c = LlmConfig::new(model);
    c.base_url = Some(base.to_string());
    c.extra.insert("vertex_credentials".into(), json!(creds));
    c.extra.insert("vertex_location".into(), json!("us-east5"));
    c.num_retries = 0;
    c.timeout = Some(20.0);
    c
}

#[tokio::test]
async fn gemini_and_claude_on_vertex_with_a_service_account() {
    let (base, stand) = stand_in().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sa.json");
    std::fs::write(&file, credentials(&base)).unwrap();
    let req = LlmRequest {
        messages: vec![Message::system("Be brief."), Message::user("hello")],
        ..LlmRequest::default()
    };

    // Gemini, credentials from a file path; the project from the file.
    let gemini = Llm::new(cfg(
        "vertex_ai/gemini-2.5-pro",
        &base,
        &file.display().to_string(),
    ))
    .unwrap();
    let r = gemini.completion(&req, None).await.unwrap();
    assert_eq!(
        r.message.content[0].as_text(),
        Some("Hi from Gemini on Vertex.")
    );
    gemini.completion(&req, None).await.unwrap();
    assert_eq!(
        *stand.exchanges.lock(),
        1,
        "the token is kept until it expires"
    );
    let (path, body) = stand.calls.lock()[0].clone();
    assert_eq!(
        path,
        "/v1/projects/proj-1/locations/us-east5/publishers/google/models/gemini-2.5-pro:generateContent"
    );
    assert_eq!(body["contents"][0]["parts"][0]["text"], "hello");
    assert!(
        gemini.metrics().accumulated_cost > 0.0,
        "priced from the table"
    );

    // Claude, credentials inline; vertex_project wins over the file's.
    let mut c = cfg(
        "vertex_ai/claude-sonnet-4-5@20250929",
        &base,
        &credentials(&base),
    );
    c.extra.insert("vertex_project".into(), json!("other-proj"));
    let claude = Llm::new(c).unwrap();
    let r = claude.completion(&req, None).await.unwrap();
    assert_eq!(
        r.message.content[0].as_text(),
        Some("Hi from Claude on Vertex.")
    );
    let (path, body) = stand.calls.lock()[2].clone();
    assert_eq!(
        path,
        "/v1/projects/other-proj/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict"
    );
    assert_eq!(body["anthropic_version"], "vertex-2023-10-16");
    assert!(body.get("model").is_none());
    assert_eq!(body["system"][0]["text"], "Be brief.");
    assert_eq!(body["messages"][0]["role"], "user");

    // Streamed: streamRawPredict, Anthropic's events.
    let mut c = cfg(
        "vertex_ai/claude-sonnet-4-5@20250929",
        &base,
        &credentials(&base),
    );
    c.stream = true;
    let claude = Llm::new(c).unwrap();
    let got = Arc::new(Mutex::new(String::new()));
    let g2 = got.clone();
    let cb: openhands_llm::TokenCallback = Arc::new(move |d| {
        if let Some(t) = d.content {
            g2.lock().push_str(&t);
        }
    });
    let r = claude.completion(&req, Some(cb)).await.unwrap();
    assert_eq!(r.message.content[0].as_text(), Some("Streamed on Vertex."));
    assert_eq!(*got.lock(), "Streamed on Vertex.");
    let (path, body) = stand.calls.lock()[3].clone();
    assert!(
        path.ends_with("/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"),
        "{path}"
    );
    assert_eq!(body["stream"], true);
}

#[test]
fn bad_credentials_are_named() {
    let e = Llm::new(cfg(
        "vertex_ai/gemini-2.5-pro",
        "http://127.0.0.1:9",
        "/nonexistent/sa.json",
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("vertex_credentials"), "{e}");
    let user_creds = json!({"type": "authorized_user", "client_id": "x"}).to_string();
    let e = Llm::new(cfg(
        "vertex_ai/gemini-2.5-pro",
        "http://127.0.0.1:9",
        &user_creds,
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("client_secret"), "{e}");
    let federated = json!({"type": "external_account", "audience": "x"}).to_string();
    let e = Llm::new(cfg(
        "vertex_ai/gemini-2.5-pro",
        "http://127.0.0.1:9",
        &federated,
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("external_account"), "{e}");
    let e = Llm::new(cfg("vertex_ai/llama-3", "http://127.0.0.1:9", &user_creds))
        .unwrap_err()
        .to_string();
    assert!(e.contains("Gemini and Anthropic"), "{e}");
}

fn user_credentials(base: &str) -> String {
    json!({
        "type": "authorized_user",
        "client_id": "cid.apps.googleusercontent.com",
        "client_secret": "csecret",
        "refresh_token": "1//refresh",
        "quota_project_id": "quota-proj",
        "token_uri": format!("{base}/token"),
    })
    .to_string()
}

#[tokio::test]
async fn gcloud_user_credentials_refresh_at_the_token_endpoint() {
    let (base, stand) = stand_in().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("adc.json");
    std::fs::write(&file, user_credentials(&base)).unwrap();
    let req = LlmRequest {
        messages: vec![Message::user("hello")],
        ..LlmRequest::default()
    };
    let llm = Llm::new(cfg(
        "vertex_ai/gemini-2.5-pro",
        &base,
        &file.display().to_string(),
    ))
    .unwrap();
    let r = llm.completion(&req, None).await.unwrap();
    assert_eq!(
        r.message.content[0].as_text(),
        Some("Hi from Gemini on Vertex.")
    );
    llm.completion(&req, None).await.unwrap();
    assert_eq!(*stand.exchanges.lock(), 1, "the token is kept");
    let (path, _) = stand.calls.lock()[0].clone();
    assert!(
        path.starts_with("/v1/projects/quota-proj/locations/us-east5/"),
        "the quota project when nothing else names one: {path}"
    );
}

#[test]
fn application_default_credentials_are_found_as_google_finds_them() {
    use openhands_llm::vertex::{GoogleCredentials, resolve};
    let dir = tempfile::tempdir().unwrap();
    let gcloud = dir.path().join("gcloud");
    std::fs::create_dir_all(&gcloud).unwrap();
    std::fs::write(
        gcloud.join("application_default_credentials.json"),
        user_credentials("http://127.0.0.1:9"),
    )
    .unwrap();
    let sa = dir.path().join("sa.json");
    std::fs::write(&sa, credentials("http://127.0.0.1:9")).unwrap();
    let config = LlmConfig::new("vertex_ai/gemini-2.5-pro");
    let home = dir.path().to_string_lossy().into_owned();
    let gcloud_dir = gcloud.to_string_lossy().into_owned();
    let sa_path = sa.to_string_lossy().into_owned();

    // The gcloud file in $CLOUDSDK_CONFIG.
    let env = |k: &str| (k == "CLOUDSDK_CONFIG").then(|| gcloud_dir.clone());
    let t = resolve(&config, &env).unwrap();
    assert!(matches!(
        t.credentials,
        GoogleCredentials::AuthorizedUser(_)
    ));
    assert_eq!(t.project, "quota-proj");
    // GOOGLE_APPLICATION_CREDENTIALS comes first.
    let env = |k: &str| match k {
        "CLOUDSDK_CONFIG" => Some(gcloud_dir.clone()),
        "GOOGLE_APPLICATION_CREDENTIALS" => Some(sa_path.clone()),
        _ => None,
    };
    let t = resolve(&config, &env).unwrap();
    assert!(matches!(
        t.credentials,
        GoogleCredentials::ServiceAccount(_)
    ));
    assert_eq!(t.project, "proj-1");
    // ~/.config/gcloud without CLOUDSDK_CONFIG: nothing there here.
    let env = |k: &str| (k == "HOME").then(|| home.clone());
    let e = resolve(&config, &env).unwrap_err().to_string();
    assert!(
        e.contains("GOOGLE_APPLICATION_CREDENTIALS") && e.contains("metadata server"),
        "{e}"
    );
}
