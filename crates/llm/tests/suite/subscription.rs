//! ChatGPT subscription against local stand-ins of OpenAI's auth server
//! (device code, polling that stays pending once, code exchange with the
//! PKCE verifier, refresh) and of the Codex backend (checks the bearer
//! token, the account id, the Codex headers and the adapted Responses
//! body, answers a streamed reply): `subscription_login` by device code
//! stores the reference's credentials file, an LLM call uses the token,
//! an expired token is refreshed and saved before the call.

use axum::Router;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use openhands_llm::subscription::openai::{self, DEFAULT_INSTRUCTIONS, Endpoints, OpenAiAuth};
use openhands_llm::subscription::store::{CredentialStore, OAuthCredentials, now_ms};
use openhands_llm::subscription::{LoginOptions, install, subscription_login};
use openhands_llm::{Llm, LlmRequest};
use openhands_wire::message::Message;
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

type Headers = Vec<(String, String)>;

#[derive(Clone, Default)]
struct Stand {
    base: Arc<Mutex<String>>,
    polls: Arc<Mutex<u32>>,
    exchanges: Arc<Mutex<Vec<Headers>>>,
    calls: Arc<Mutex<Vec<(Headers, Value)>>>,
}

fn token(n: u32) -> String {
    let enc = |v: Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string().as_bytes())
    };
    format!(
        "{}.{}.sig",
        enc(json!({"alg": "RS256"})),
        enc(json!({"n": n, "https://api.openai.com/auth": {"chatgpt_account_id": "acct-42"}}))
    )
}

fn sse(events: &[Value]) -> Response {
    let body: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    ([("content-type", "text/event-stream")], body).into_response()
}

async fn handle(State(s): State<Stand>, req: Request) -> Response {
    let path = req.uri().path().to_string();
    let headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let bytes = axum::body::to_bytes(req.into_body(), 1 << 24)
        .await
        .unwrap();
    match path.as_str() {
        "/auth/api/accounts/deviceauth/usercode" => {
            let body: Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(body["client_id"], openai::CLIENT_ID);
            axum::Json(
                json!({"device_auth_id": "dev-1", "user_code": "ABCD-1234", "interval": "1"}),
            )
            .into_response()
        }
        "/auth/api/accounts/deviceauth/token" => {
            let body: Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(
                body,
                json!({"device_auth_id": "dev-1", "user_code": "ABCD-1234"})
            );
            let mut polls = s.polls.lock();
            *polls += 1;
            if *polls == 1 {
                return (axum::http::StatusCode::FORBIDDEN, "pending").into_response();
            }
            axum::Json(json!({"authorization_code": "code-1", "code_verifier": "verifier-1"}))
                .into_response()
        }
        "/auth/oauth/token" => {
            let form: Vec<(String, String)> =
                url::form_urlencoded::parse(&bytes).into_owned().collect();
            let n = {
                let mut ex = s.exchanges.lock();
                ex.push(form.clone());
                ex.len() as u32
            };
            let get = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
            assert_eq!(get("client_id").as_deref(), Some(openai::CLIENT_ID));
            match get("grant_type").as_deref() {
                Some("authorization_code") => {
                    assert_eq!(get("code").as_deref(), Some("code-1"));
                    assert_eq!(get("code_verifier").as_deref(), Some("verifier-1"));
                    assert_eq!(
                        get("redirect_uri"),
                        Some(format!("{}/auth/deviceauth/callback", s.base.lock()))
                    );
                }
                Some("refresh_token") => {
                    assert_eq!(get("refresh_token").as_deref(), Some("refresh-1"));
                }
                other => panic!("unexpected grant {other:?}"),
            }
            axum::Json(
                json!({"access_token": token(n), "refresh_token": "refresh-1",
                "expires_in": 3600}),
            )
            .into_response()
        }
        "/codex/responses" => {
            let body: Value = serde_json::from_slice(&bytes).unwrap();
            s.calls.lock().push((headers, body));
            let item = json!({"type": "message", "id": "msg_1", "role": "assistant",
                "content": [{"type": "output_text", "text": "from codex"}]});
            sse(&[
                json!({"type": "response.output_text.delta", "delta": "from codex"}),
                json!({"type": "response.output_item.done", "item": item}),
                json!({"type": "response.completed", "response": {"id": "resp_1",
                    "status": "completed", "output": [item],
                    "usage": {"input_tokens": 7, "output_tokens": 3}}}),
            ])
        }
        other => panic!("unexpected path {other}"),
    }
}

async fn stand() -> (Stand, Endpoints) {
    let s = Stand::default();
    let app = Router::new().fallback(handle).with_state(s.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    *s.base.lock() = base.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let endpoints = Endpoints::new(&format!("{base}/auth"), &format!("{base}/codex"));
    (s, endpoints)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn request() -> LlmRequest {
    LlmRequest {
        messages: vec![Message::system("BE BRIEF"), Message::user("hello")],
        ..LlmRequest::default()
    }
}

#[tokio::test]
async fn device_login_stores_tokens_that_llm_calls_use() {
    openhands_llm::http::install_crypto_provider();
    let (s, endpoints) = stand().await;
    let dir = tempfile::tempdir().unwrap();
    let store = CredentialStore::new(dir.path().join("auth"), None);
    let auth = OpenAiAuth::new(endpoints.clone(), store.clone());
    install(Arc::new(auth.clone()));

    let shown: Arc<Mutex<Option<(String, String)>>> = Arc::default();
    let seen = shown.clone();
    let llm = subscription_login(
        &auth,
        "openai",
        "gpt-5.5",
        LoginOptions {
            auth_method: openhands_llm::subscription::AuthMethod::DeviceCode,
            skip_consent: true,
            on_device_code: Box::new(move |c| {
                *seen.lock() = Some((c.verification_url.clone(), c.user_code.clone()));
            }),
            timeout: Some(Duration::from_secs(20)),
            ..LoginOptions::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(
        shown.lock().clone(),
        Some((
            format!("{}/codex/device", endpoints.issuer),
            "ABCD-1234".to_string()
        ))
    );
    assert_eq!(*s.polls.lock(), 2, "one pending poll, then the code");
    // The reference's credentials file.
    let doc: Value = serde_json::from_slice(&std::fs::read(store.path("openai")).unwrap()).unwrap();
    assert_eq!(doc["type"], "oauth");
    assert_eq!(doc["vendor"], "openai");
    assert_eq!(doc["access_token"], token(1));
    assert_eq!(doc["refresh_token"], "refresh-1");
    assert!(doc["expires_at"].as_i64().unwrap() > now_ms() + 3_000_000);

    let reply = llm.completion(&request(), None).await.unwrap();
    assert_eq!(reply.message.text(), "from codex");
    let (headers, body) = s.calls.lock()[0].clone();
    assert_eq!(
        header(&headers, "authorization"),
        Some(format!("Bearer {}", token(1)).as_str())
    );
    assert_eq!(header(&headers, "chatgpt-account-id"), Some("acct-42"));
    assert_eq!(header(&headers, "originator"), Some("codex_cli_rs"));
    assert_eq!(
        header(&headers, "openai-beta"),
        Some("responses=experimental")
    );
    assert_eq!(body["model"], "gpt-5.5");
    assert_eq!(body["stream"], true);
    assert_eq!(body["store"], false);
    assert_eq!(body["instructions"], DEFAULT_INSTRUCTIONS);
    assert!(body.get("temperature").is_none() && body.get("max_output_tokens").is_none());
    let first = &body["input"][0];
    assert_eq!(first["role"], "user");
    assert_eq!(
        first["content"][0]["text"],
        "Context (system prompt):\nBE BRIEF\n\n"
    );

    // Stored tokens are reused: a second login asks nobody.
    let again = subscription_login(&auth, "openai", "gpt-5.5", LoginOptions::default())
        .await
        .unwrap();
    assert_eq!(again.config().model, "openai/gpt-5.5");
    assert_eq!(*s.polls.lock(), 2);
    assert_eq!(s.exchanges.lock().len(), 1);
}

#[tokio::test]
async fn an_expired_token_is_refreshed_and_saved_before_the_call() {
    openhands_llm::http::install_crypto_provider();
    let (s, endpoints) = stand().await;
    let dir = tempfile::tempdir().unwrap();
    let store = CredentialStore::new(dir.path().join("auth"), None);
    store
        .save(&OAuthCredentials {
            vendor: "openai".into(),
            access_token: "stale".into(),
            refresh_token: "refresh-1".into(),
            expires_at: now_ms() - 1,
        })
        .await
        .unwrap();
    install(Arc::new(OpenAiAuth::new(endpoints.clone(), store.clone())));
    // A configuration as a profile or a client sends it: only the auth type.
    let mut config = openhands_wire::LlmConfig::new("openai/gpt-5.5");
    config.auth_type = "subscription".into();
    config.base_url = Some("http://ignored.invalid".into());
    let llm = Llm::new(config).unwrap();
    llm.completion(&request(), None).await.unwrap();
    let ex = s.exchanges.lock().clone();
    assert_eq!(ex.len(), 1);
    assert!(ex[0].contains(&("grant_type".into(), "refresh_token".into())));
    let (headers, _) = s.calls.lock()[0].clone();
    assert_eq!(
        header(&headers, "authorization"),
        Some(format!("Bearer {}", token(1)).as_str())
    );
    let saved = store.get("openai").await.unwrap();
    assert_eq!(saved.access_token, token(1));
    assert!(!saved.is_expired());
}

#[tokio::test]
async fn without_a_login_the_call_is_an_authentication_error() {
    openhands_llm::http::install_crypto_provider();
    let (s, endpoints) = stand().await;
    let dir = tempfile::tempdir().unwrap();
    let store = CredentialStore::new(dir.path().join("auth"), None);
    install(Arc::new(OpenAiAuth::new(endpoints, store)));
    let mut config = openhands_wire::LlmConfig::new("openai/gpt-5.5");
    config.auth_type = "subscription".into();
    config.num_retries = 0;
    let err = Llm::new(config)
        .unwrap()
        .completion(&request(), None)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("subscription login is required"),
        "{err}"
    );
    assert!(s.calls.lock().is_empty());
}

// ---- Browser sign-in against the testkit's auth stand-in ----

mod browser {
    use openhands_llm::subscription::consent::{Answer, MARKER};
    use openhands_llm::subscription::openai::{Endpoints, OpenAiAuth};
    use openhands_llm::subscription::store::{CredentialStore, OAuthCredentials, now_ms};
    use openhands_llm::subscription::{AuthMethod, LoginOptions, subscription_login};
    use openhands_testkit::openai_auth::{Decision, OpenAiAuthStandIn, access_token, visit};
    use tokio::sync::oneshot;

    type Page = oneshot::Receiver<Result<(u16, String), reqwest::Error>>;

    struct Setup {
        standin: OpenAiAuthStandIn,
        auth: OpenAiAuth,
        store: CredentialStore,
        _dir: tempfile::TempDir,
    }

    async fn setup() -> Setup {
        openhands_llm::http::install_crypto_provider();
        let standin = OpenAiAuthStandIn::start().await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store = CredentialStore::new(dir.path().join("auth"), None);
        let endpoints = Endpoints::new(&standin.url, "http://codex.invalid");
        let auth = OpenAiAuth::new(endpoints, store.clone());
        Setup {
            standin,
            auth,
            store,
            _dir: dir,
        }
    }

    /// Options whose terms prompt answers `answer` and whose "browser"
    /// visits the URL; the page it ends on comes out of the receiver.
    fn options(answer: Answer) -> (LoginOptions, Page) {
        let (tx, rx) = oneshot::channel();
        let options = LoginOptions {
            oauth_port: 0,
            consent: Box::new(move |notice| {
                assert!(notice.contains("https://openai.com/policies/terms-of-use/"));
                answer
            }),
            on_authorize_url: Box::new(move |url| {
                let url = url.to_string();
                tokio::spawn(async move {
                    let _ = tx.send(visit(&url).await);
                });
            }),
            ..LoginOptions::default()
        };
        (options, rx)
    }

    #[tokio::test]
    async fn browser_login_stores_tokens_reuses_and_refreshes_them() {
        let s = setup().await;
        let (opts, page) = options(Answer::Yes);
        assert_eq!(opts.auth_method, AuthMethod::Browser, "the default");
        let llm = subscription_login(&s.auth, "openai", "gpt-5.5", opts)
            .await
            .unwrap();
        assert_eq!(llm.config().model, "openai/gpt-5.5");
        assert_eq!(llm.config().auth_type, "subscription");
        let (status, body) = page.await.unwrap().unwrap();
        assert_eq!(status, 200);
        assert!(body.contains("Signed in"), "{body}");
        // The authorization carried a loopback redirect; the exchange the
        // verifier of its challenge (the stand-in checks both).
        let auths = s.standin.authorizations();
        assert_eq!(auths.len(), 1);
        let redirect = &auths[0]["redirect_uri"];
        assert!(
            redirect.starts_with("http://localhost:") && redirect.ends_with("/auth/callback"),
            "{redirect}"
        );
        let tokens = s.standin.token_requests();
        assert_eq!(tokens[0]["grant_type"], "authorization_code");
        assert_eq!(&tokens[0]["redirect_uri"], redirect);
        let saved = s.store.get("openai").await.unwrap();
        assert_eq!(saved.access_token, access_token(1));
        assert!(s.store.dir().join(MARKER).exists(), "the yes is remembered");

        // Stored tokens are reused: no prompt, no page, no request.
        let (mut again, _) = options(Answer::No);
        again.consent = Box::new(|_| panic!("asked again"));
        subscription_login(&s.auth, "openai", "gpt-5.5", again)
            .await
            .unwrap();
        assert_eq!(s.standin.issued(), 1);

        // An expired token is refreshed with the stored refresh token.
        s.store
            .save(&OAuthCredentials {
                expires_at: now_ms() - 1,
                ..saved
            })
            .await
            .unwrap();
        let (mut again, _) = options(Answer::No);
        again.consent = Box::new(|_| panic!("asked again"));
        subscription_login(&s.auth, "openai", "gpt-5.5", again)
            .await
            .unwrap();
        let tokens = s.standin.token_requests();
        assert_eq!(tokens.len(), 2);
        assert_eq!(tokens[1]["grant_type"], "refresh_token");
        assert_eq!(tokens[1]["refresh_token"], "refresh-1");
        assert_eq!(s.standin.authorizations().len(), 1);
        let refreshed = s.store.get("openai").await.unwrap();
        assert_eq!(refreshed.access_token, access_token(2));
        assert!(!refreshed.is_expired());
    }

    #[tokio::test]
    async fn a_forged_state_is_refused_and_nothing_is_stored() {
        let s = setup().await;
        s.standin.set_decision(Decision::ForgeState);
        let (opts, page) = options(Answer::Yes);
        let err = subscription_login(&s.auth, "openai", "gpt-5.5", opts)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("state"), "{err}");
        let (status, body) = page.await.unwrap().unwrap();
        assert_eq!(status, 400);
        assert!(body.contains("Sign-in failed"), "{body}");
        assert!(
            s.standin.token_requests().is_empty(),
            "the code is not used"
        );
        assert!(s.store.get("openai").await.is_none());
    }

    #[tokio::test]
    async fn a_denied_authorization_ends_with_the_issuers_reason() {
        let s = setup().await;
        s.standin.set_decision(Decision::Deny);
        let (opts, page) = options(Answer::Yes);
        let err = subscription_login(&s.auth, "openai", "gpt-5.5", opts)
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("The user declined the sign-in"),
            "{err}"
        );
        assert_eq!(page.await.unwrap().unwrap().0, 400);
        assert!(s.store.get("openai").await.is_none());
    }

    #[tokio::test]
    async fn declined_or_unasked_terms_stop_before_any_request() {
        let s = setup().await;
        let (opts, _) = options(Answer::No);
        let err = subscription_login(&s.auth, "openai", "gpt-5.5", opts)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("terms were not accepted"), "{err}");
        // No terminal and never accepted: refused too.
        let (opts, _) = options(Answer::NotAsked);
        let err = subscription_login(&s.auth, "openai", "gpt-5.5", opts)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("interactive terminal"), "{err}");
        assert!(s.standin.authorizations().is_empty());
        // Accepted before: no terminal is needed any more.
        std::fs::create_dir_all(s.store.dir()).unwrap();
        std::fs::write(s.store.dir().join(MARKER), b"").unwrap();
        let (opts, _) = options(Answer::NotAsked);
        subscription_login(&s.auth, "openai", "gpt-5.5", opts)
            .await
            .unwrap();
        assert_eq!(s.standin.issued(), 1);
    }

    #[tokio::test]
    async fn without_a_redirect_the_sign_in_times_out() {
        let s = setup().await;
        let shown = std::sync::Arc::new(parking_lot::Mutex::new(String::new()));
        let seen = shown.clone();
        let opts = LoginOptions {
            oauth_port: 0,
            skip_consent: true,
            on_authorize_url: Box::new(move |url| *seen.lock() = url.to_string()),
            timeout: Some(std::time::Duration::from_millis(300)),
            ..LoginOptions::default()
        };
        let err = subscription_login(&s.auth, "openai", "gpt-5.5", opts)
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("not completed within 300ms"),
            "{err}"
        );
        assert!(
            shown
                .lock()
                .starts_with(&format!("{}/oauth/authorize?", s.standin.url)),
            "{}",
            shown.lock()
        );
        // A busy callback port is named, with the way out.
        let taken = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let opts = LoginOptions {
            oauth_port: taken.local_addr().unwrap().port(),
            skip_consent: true,
            ..LoginOptions::default()
        };
        let err = subscription_login(&s.auth, "openai", "gpt-5.5", opts)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("OPENHANDS_OAUTH_PORT"), "{err}");
    }

    #[tokio::test]
    async fn the_device_method_signs_in_against_the_same_stand_in() {
        let s = setup().await;
        let code = std::sync::Arc::new(parking_lot::Mutex::new(String::new()));
        let seen = code.clone();
        let opts = LoginOptions {
            auth_method: "device_code".parse().unwrap(),
            skip_consent: true,
            on_device_code: Box::new(move |c| *seen.lock() = c.user_code.clone()),
            ..LoginOptions::default()
        };
        subscription_login(&s.auth, "openai", "gpt-5.5", opts)
            .await
            .unwrap();
        assert_eq!(*code.lock(), openhands_testkit::openai_auth::USER_CODE);
        assert_eq!(
            s.store.get("openai").await.unwrap().access_token,
            access_token(1)
        );
        assert!("popup".parse::<AuthMethod>().is_err());
    }
}
