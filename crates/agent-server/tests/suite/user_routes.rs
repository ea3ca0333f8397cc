//! The user-facing extras of the reference's API: saved workspaces
//! (`/api/workspaces`), the workspace session cookie
//! (`/api/auth/workspace-session`) and who honours it, the VSCode routes
//! without an editor, git provider repository search against a fake GitHub,
//! and the OpenAI subscription device login against a local device-flow
//! server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use async_trait::async_trait;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use common::KEY;
use openhands_agent_server::{AppState, Config, RuntimeScope, RuntimeScopeResolver, ServerHandle};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tempfile::TempDir;

struct Scopes(HashMap<uuid::Uuid, RuntimeScope>);

#[async_trait]
impl RuntimeScopeResolver for Scopes {
    async fn resolve(&self, id: uuid::Uuid) -> Option<RuntimeScope> {
        self.0.get(&id).cloned()
    }
}

struct Server {
    handle: ServerHandle,
    dir: TempDir,
    client: reqwest::Client,
    conversation: uuid::Uuid,
}

impl Server {
    async fn start(
        tweak: impl FnOnce(&mut Config),
        state: impl FnOnce(AppState) -> AppState,
    ) -> Server {
        openhands_agent_server::install_tls_provider();
        let dir = tempfile::tempdir().unwrap();
        let mut config = common::config_in(dir.path(), vec![KEY.into()]);
        config.persistence_dir = dir.path().join("persistence");
        config.secret_key = Some(openhands_wire::SecretString::new("user-routes-key"));
        tweak(&mut config);
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("index.html"), "<h1>site</h1>").unwrap();
        let conversation = uuid::Uuid::new_v4();
        let scopes = Scopes(HashMap::from([(
            conversation,
            RuntimeScope {
                workspace_root: ws,
                conversation_dir: dir.path().join("conv"),
            },
        )]));
        let app = state(AppState::new(config)).with_runtime_scopes(Arc::new(scopes));
        let handle = openhands_agent_server::spawn(app.shared(), "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        Server {
            handle,
            dir,
            client: reqwest::Client::new(),
            conversation,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.handle.url())
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .client
            .request(method.parse().unwrap(), self.url(path))
            .header("X-Session-API-Key", KEY);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }
}

#[tokio::test]
async fn workspaces_are_saved_deduplicated_and_removed() {
    let s = Server::start(|_| {}, |a| a).await;
    let (st, body) = s.call("GET", "/api/workspaces", None).await;
    assert_eq!(
        (st, body.clone()),
        (200, json!({"workspaces": [], "workspaceParents": []}))
    );
    assert!(!s.dir.path().join("persistence/workspaces.json").exists());

    let item = json!({"id": "/p/a", "name": "a", "path": "/p/a", "parent_path": "/p"});
    let (st, body) = s
        .call(
            "POST",
            "/api/workspaces",
            Some(json!({"workspaces": [item, item, {"id": "/b", "name": "b", "path": "/b", "extra": 1}]})),
        )
        .await;
    assert_eq!(st, 200, "{body}");
    assert_eq!(
        body["workspaces"],
        json!([
            {"id": "/p/a", "name": "a", "path": "/p/a", "parentPath": "/p"},
            {"id": "/b", "name": "b", "path": "/b"}
        ])
    );
    let (st, body) = s
        .call(
            "POST",
            "/api/workspaces/parents",
            Some(json!({"parents": [{"id": "/p", "name": "p", "path": "/p"}]})),
        )
        .await;
    assert_eq!(st, 200);
    assert_eq!(
        body["workspaceParents"],
        json!([{"id": "/p", "name": "p", "path": "/p"}])
    );
    let on_disk: Value = serde_json::from_str(
        &std::fs::read_to_string(s.dir.path().join("persistence/workspaces.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(on_disk["schema_version"], 1);
    assert_eq!(on_disk["workspaces"][0]["parentPath"], "/p");

    let (st, body) = s.call("DELETE", "/api/workspaces?path=%2Fb", None).await;
    assert_eq!((st, body), (200, json!({"deleted": true})));
    let (st, body) = s.call("DELETE", "/api/workspaces?path=%2Fb", None).await;
    assert_eq!((st, body), (404, json!({"detail": "Workspace not found"})));
    let (st, body) = s
        .call("DELETE", "/api/workspaces/parents?path=%2Fnope", None)
        .await;
    assert_eq!(
        (st, body),
        (404, json!({"detail": "Workspace parent not found"}))
    );
    let (st, _) = s
        .call("DELETE", "/api/workspaces/parents?path=%2Fp", None)
        .await;
    assert_eq!(st, 200);
    let (_, body) = s.call("GET", "/api/workspaces", None).await;
    assert_eq!(body["workspaces"].as_array().unwrap().len(), 1);
    assert_eq!(body["workspaceParents"], json!([]));
}

#[tokio::test]
async fn workspaces_bad_input_and_corrupt_file() {
    let s = Server::start(|_| {}, |a| a).await;
    let (st, body) = s
        .call(
            "POST",
            "/api/workspaces",
            Some(json!({"workspaces": [{"id": "", "name": "n", "path": "/x"}]})),
        )
        .await;
    assert_eq!(st, 422);
    assert_eq!(body["detail"][0]["type"], "string_too_short");
    assert_eq!(
        body["detail"][0]["loc"],
        json!(["body", "workspaces", 0, "id"])
    );
    let (st, body) = s
        .call(
            "POST",
            "/api/workspaces",
            Some(json!({"workspaces": [{"id": "x", "path": "/x"}]})),
        )
        .await;
    assert_eq!(st, 422, "{body}");
    assert_eq!(body["detail"][0]["type"], "missing");
    let long = "x".repeat(257);
    let (st, body) = s
        .call(
            "POST",
            "/api/workspaces/parents",
            Some(json!({"parents": [{"id": "x", "name": long, "path": "/x"}]})),
        )
        .await;
    assert_eq!(st, 422);
    assert_eq!(body["detail"][0]["type"], "string_too_long");
    let (st, body) = s.call("DELETE", "/api/workspaces", None).await;
    assert_eq!(st, 422);
    assert_eq!(body["detail"][0]["loc"], json!(["query", "path"]));

    std::fs::create_dir_all(s.dir.path().join("persistence")).unwrap();
    let file = s.dir.path().join("persistence/workspaces.json");
    std::fs::write(&file, r#"{"schema_version": 9, "workspaces": []}"#).unwrap();
    let (st, body) = s.call("GET", "/api/workspaces", None).await;
    assert_eq!(
        (st, body),
        (409, json!({"detail": "Workspaces file is corrupted"}))
    );
    let (st, _) = s
        .call(
            "POST",
            "/api/workspaces",
            Some(json!({"workspaces": [{"id": "x", "name": "x", "path": "/x"}]})),
        )
        .await;
    assert_eq!(st, 409);
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("\"schema_version\": 9")
    );
}

#[tokio::test]
async fn workspace_cookie_opens_only_the_workspace_site() {
    let s = Server::start(|_| {}, |a| a).await;
    let resp = s
        .client
        .post(s.url("/api/auth/workspace-session"))
        .header("X-Session-API-Key", KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 204);
    let cookie = resp.headers()["set-cookie"].to_str().unwrap().to_string();
    // The test talks to 127.0.0.1: a secure context.
    assert_eq!(
        cookie,
        format!(
            "oh_workspace_session_key={KEY}; HttpOnly; Max-Age=315360000; Path=/api/conversations; SameSite=none; Secure; Partitioned"
        )
    );
    let resp = s
        .client
        .post(s.url("/api/auth/workspace-session"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);

    let site = format!("/api/conversations/{}/workspace", s.conversation);
    let with_cookie = |path: &str, value: &str| {
        s.client
            .get(s.url(path))
            .header("cookie", format!("oh_workspace_session_key={value}"))
    };
    let resp = with_cookie(&site, KEY).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), "<h1>site</h1>");
    assert_eq!(
        with_cookie(&site, "wrong").send().await.unwrap().status(),
        401
    );
    assert_eq!(
        s.client.get(s.url(&site)).send().await.unwrap().status(),
        401
    );
    // No other route honours the cookie.
    assert_eq!(
        with_cookie("/api/workspaces", KEY)
            .send()
            .await
            .unwrap()
            .status(),
        401
    );

    let resp = s
        .client
        .delete(s.url("/api/auth/workspace-session"))
        .header("X-Session-API-Key", KEY)
        .header("x-forwarded-host", "example.com")
        .header("host", "example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 204);
    assert_eq!(
        resp.headers()["set-cookie"],
        "oh_workspace_session_key=\"\"; HttpOnly; Max-Age=0; Path=/api/conversations; SameSite=none"
    );
}

#[tokio::test]
async fn vscode_answers_without_an_editor() {
    let s = Server::start(|_| {}, |a| a).await;
    let (st, body) = s.call("GET", "/api/vscode/status", None).await;
    assert_eq!(
        (st, body),
        (200, json!({"running": false, "enabled": true}))
    );
    let (st, body) = s
        .call("GET", "/api/vscode/url?base_url=http://h", None)
        .await;
    assert_eq!((st, body), (200, json!({"url": null})));
    let conv = s.conversation;
    let (st, body) = s
        .call(
            "GET",
            &format!("/api/conversations/{conv}/vscode/status"),
            None,
        )
        .await;
    assert_eq!(
        (st, body),
        (200, json!({"running": false, "enabled": true}))
    );
    let (st, body) = s
        .call(
            "GET",
            &format!("/api/conversations/{conv}/vscode/url"),
            None,
        )
        .await;
    assert_eq!((st, body), (200, json!({"url": null})));
    let other = uuid::Uuid::new_v4();
    let (st, _) = s
        .call(
            "GET",
            &format!("/api/conversations/{other}/vscode/url"),
            None,
        )
        .await;
    assert_eq!(st, 404);
    let (st, _) = s
        .call("GET", "/api/conversations/not-a-uuid/vscode/status", None)
        .await;
    assert_eq!(st, 422);

    let off = Server::start(|c| c.enable_vscode = false, |a| a).await;
    let (st, body) = off.call("GET", "/api/vscode/status", None).await;
    assert_eq!(
        (st, body),
        (
            200,
            json!({"running": false, "enabled": false, "message": "VSCode is disabled in configuration"})
        )
    );
    let (st, body) = off.call("GET", "/api/vscode/url", None).await;
    assert_eq!(st, 503);
    assert_eq!(
        body["exception"],
        "503: VSCode is disabled in configuration. Set enable_vscode=true to enable."
    );
}

/// A fake GitHub `/user/repos`: 3 pages of repositories `org/repo-<n>`,
/// 100 a page, requiring `Bearer gh-token`.
async fn fake_github() -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    async fn repos(
        State(hits): State<Arc<AtomicUsize>>,
        headers: HeaderMap,
        axum::extract::Query(q): axum::extract::Query<HashMap<String, String>>,
    ) -> axum::response::Response {
        hits.fetch_add(1, Ordering::SeqCst);
        if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some("Bearer gh-token") {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        assert_eq!(q["per_page"], "100");
        assert_eq!(q["sort"], "pushed");
        let page: usize = q["page"].parse().unwrap();
        let items: Vec<Value> = (0..100)
            .map(|i| {
                let n = (page - 1) * 100 + i;
                json!({"id": n, "full_name": format!("org/repo-{n}"), "private": n.is_multiple_of(2),
                       "stargazers_count": n, "pushed_at": "2026-01-01T00:00:00Z", "default_branch": "main"})
            })
            .collect();
        let mut resp = Json(items).into_response();
        if page < 3 {
            resp.headers_mut().insert(
                "link",
                format!(
                    "<http://x/user/repos?page={}&per_page=100>; rel=\"next\"",
                    page + 1
                )
                .parse()
                .unwrap(),
            );
        }
        resp
    }
    let app = axum::Router::new()
        .route("/user/repos", axum::routing::get(repos))
        .with_state(hits.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), hits)
}

#[tokio::test]
async fn repository_search_uses_the_github_token_secret() {
    let (github, hits) = fake_github().await;
    let s = Server::start(|_| {}, |a| a.with_github_api(github.clone())).await;
    let path = "/api/git/repositories/search";
    let (st, body) = s
        .call("GET", &format!("{path}?provider=github"), None)
        .await;
    assert_eq!(
        (st, body),
        (
            200,
            json!({"items": [], "next_page_id": null, "missing_token": true})
        )
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0);
    let (st, body) = s
        .call("GET", &format!("{path}?provider=gitlab"), None)
        .await;
    assert_eq!(
        (st, body),
        (
            400,
            json!({"detail": "Repository discovery is not supported for provider 'gitlab'"})
        )
    );
    let (st, body) = s.call("GET", &format!("{path}?provider=svn"), None).await;
    assert_eq!(st, 422);
    assert_eq!(body["detail"][0]["type"], "enum");
    let (st, _) = s
        .call("GET", &format!("{path}?provider=github&limit=0"), None)
        .await;
    assert_eq!(st, 422);
    let (st, _) = s.call("GET", path, None).await;
    assert_eq!(st, 422);

    let (st, _) = s
        .call(
            "PUT",
            "/api/settings/secrets",
            Some(json!({"name": "GITHUB_TOKEN", "value": "gh-token"})),
        )
        .await;
    assert_eq!(st, 200);
    let (st, body) = s
        .call("GET", &format!("{path}?provider=github&limit=3"), None)
        .await;
    assert_eq!(st, 200, "{body}");
    assert_eq!(body["items"].as_array().unwrap().len(), 3);
    assert_eq!(
        body["items"][0],
        json!({"id": "0", "full_name": "org/repo-0", "git_provider": "github", "is_public": false,
               "stargazers_count": 0, "pushed_at": "2026-01-01T00:00:00Z", "main_branch": "main"})
    );
    assert_eq!(body["next_page_id"], "1:3");
    assert_eq!(body["missing_token"], false);
    // A filter walks the pages until it has enough matches.
    let (st, body) = s
        .call(
            "GET",
            &format!("{path}?provider=github&query=REPO-2&limit=100"),
            None,
        )
        .await;
    assert_eq!(st, 200);
    let names: Vec<&str> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["full_name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 100);
    assert_eq!(names[..3], ["org/repo-2", "org/repo-20", "org/repo-21"]);
    assert_eq!(body["next_page_id"], "3:89");
    let (_, body) = s
        .call(
            "GET",
            &format!("{path}?provider=github&query=repo-2&page_id=3:89"),
            None,
        )
        .await;
    assert_eq!(body["items"].as_array().unwrap().len(), 11);
    assert_eq!(body["items"][0]["full_name"], "org/repo-289");
    assert_eq!(body["next_page_id"], Value::Null);
    let (st, body) = s
        .call(
            "GET",
            &format!("{path}?provider=github&page_id=bogus"),
            None,
        )
        .await;
    assert_eq!(
        (st, body),
        (400, json!({"detail": "Invalid repository page_id"}))
    );
    // A rejected token maps to the provider's status.
    let (st, _) = s
        .call(
            "PUT",
            "/api/settings/secrets",
            Some(json!({"name": "github_token", "value": "stale"})),
        )
        .await;
    assert_eq!(st, 200);
    let (st, body) = s
        .call("GET", &format!("{path}?provider=github"), None)
        .await;
    assert_eq!(
        (st, body),
        (401, json!({"detail": "GitHub repository search failed"}))
    );
}

/// A local device-flow issuer: `usercode` hands out a device id; `token`
/// says "pending" (403) until `approve` is set, then an authorization code;
/// `/oauth/token` exchanges codes and refresh tokens.
#[derive(Default)]
struct Issuer {
    approved: std::sync::atomic::AtomicBool,
    refreshes: AtomicUsize,
    expires_in: std::sync::atomic::AtomicI64,
}

async fn fake_issuer() -> (String, Arc<Issuer>) {
    let issuer = Arc::new(Issuer::default());
    issuer.expires_in.store(3600, Ordering::SeqCst);
    async fn usercode(Json(body): Json<Value>) -> Json<Value> {
        assert_eq!(body["client_id"], "app_EMoamEEZ73f0CkXaXp7hrann");
        Json(json!({"device_auth_id": "dev-1", "user_code": "ABCD-EFGH", "interval": "3"}))
    }
    async fn token(
        State(i): State<Arc<Issuer>>,
        Json(body): Json<Value>,
    ) -> axum::response::Response {
        assert_eq!(
            body,
            json!({"device_auth_id": "dev-1", "user_code": "ABCD-EFGH"})
        );
        if !i.approved.load(Ordering::SeqCst) {
            return StatusCode::FORBIDDEN.into_response();
        }
        Json(json!({"authorization_code": "auth-code", "code_verifier": "verifier"}))
            .into_response()
    }
    async fn oauth(
        State(i): State<Arc<Issuer>>,
        axum::extract::Form(form): axum::extract::Form<HashMap<String, String>>,
    ) -> axum::response::Response {
        let expires_in = i.expires_in.load(Ordering::SeqCst);
        match form["grant_type"].as_str() {
            "authorization_code" => {
                assert_eq!(form["code"], "auth-code");
                assert_eq!(form["code_verifier"], "verifier");
                assert!(form["redirect_uri"].ends_with("/deviceauth/callback"));
                Json(json!({"access_token": "access-1", "refresh_token": "refresh-1", "expires_in": expires_in}))
                    .into_response()
            }
            "refresh_token" => {
                i.refreshes.fetch_add(1, Ordering::SeqCst);
                if form["refresh_token"] != "refresh-1" {
                    return StatusCode::BAD_REQUEST.into_response();
                }
                Json(json!({"access_token": "access-2", "expires_in": 7200})).into_response()
            }
            _ => StatusCode::BAD_REQUEST.into_response(),
        }
    }
    let app = axum::Router::new()
        .route(
            "/api/accounts/deviceauth/usercode",
            axum::routing::post(usercode),
        )
        .route("/api/accounts/deviceauth/token", axum::routing::post(token))
        .route("/oauth/token", axum::routing::post(oauth))
        .with_state(issuer.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), issuer)
}

#[tokio::test]
async fn subscription_device_login_stores_encrypted_tokens_and_logs_out() {
    let (url, issuer) = fake_issuer().await;
    let issuer_url = url.clone();
    let s = Server::start(move |c| c.openai_auth_issuer = issuer_url, |a| a).await;
    let base = "/api/llm/subscription/openai";
    let (st, body) = s.call("GET", &format!("{base}/models"), None).await;
    assert_eq!(st, 200);
    assert_eq!(body["vendor"], "openai");
    let models: Vec<String> = serde_json::from_value(body["models"].clone()).unwrap();
    let mut sorted = models.clone();
    sorted.sort();
    assert_eq!(models, sorted);
    assert!(models.contains(&"gpt-5.5".to_string()));
    let disconnected =
        json!({"vendor": "openai", "connected": false, "account_email": null, "expires_at": null});
    assert_eq!(
        s.call("GET", &format!("{base}/status"), None).await,
        (200, disconnected.clone())
    );

    let (st, start) = s.call("POST", &format!("{base}/device/start"), None).await;
    assert_eq!(st, 200, "{start}");
    assert_eq!(start["user_code"], "ABCD-EFGH");
    assert_eq!(start["verification_uri"], format!("{url}/codex/device"));
    assert_eq!(start["interval_seconds"], 3);
    let token = start["device_code"].as_str().unwrap().to_string();
    assert_ne!(
        token, "dev-1",
        "the issuer's device id never leaves the server"
    );
    assert_eq!(token.len(), 43);

    let poll = |t: String| {
        let s = &s;
        async move {
            s.call(
                "POST",
                &format!("{base}/device/poll"),
                Some(json!({"device_code": t})),
            )
            .await
        }
    };
    assert_eq!(poll(token.clone()).await, (200, disconnected.clone()));
    assert_eq!(
        poll("unknown".into()).await,
        (
            404,
            json!({"detail": "Subscription device login not found or expired"})
        )
    );
    let (st, body) = s
        .call("POST", &format!("{base}/device/poll"), Some(json!({})))
        .await;
    assert_eq!(st, 422);
    assert_eq!(body["detail"][0]["loc"], json!(["body", "device_code"]));

    issuer.approved.store(true, Ordering::SeqCst);
    let (st, body) = poll(token.clone()).await;
    assert_eq!(st, 200, "{body}");
    assert_eq!(body["connected"], true);
    let expires_at = body["expires_at"].as_i64().unwrap();
    let file = s.dir.path().join("persistence/auth/openai_oauth.json");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        !text.contains("access-1") && !text.contains("refresh-1"),
        "{text}"
    );
    let stored: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(stored["vendor"], "openai");
    assert_eq!(stored["expires_at"], expires_at);
    // The token is used up.
    assert_eq!(poll(token.clone()).await.0, 404);
    let (_, status) = s.call("GET", &format!("{base}/status"), None).await;
    assert_eq!(status["connected"], true);
    assert_eq!(status["expires_at"], expires_at);
    assert_eq!(issuer.refreshes.load(Ordering::SeqCst), 0);

    // Logout forgets the tokens and any login in progress.
    issuer.approved.store(false, Ordering::SeqCst);
    let (_, again) = s.call("POST", &format!("{base}/device/start"), None).await;
    assert_eq!(
        s.call("POST", &format!("{base}/logout"), None).await,
        (200, disconnected.clone())
    );
    assert!(!file.exists());
    assert_eq!(
        poll(again["device_code"].as_str().unwrap().into()).await.0,
        404
    );
    assert_eq!(
        s.call("GET", &format!("{base}/status"), None).await,
        (200, disconnected)
    );
}

#[tokio::test]
async fn subscription_status_refreshes_expired_tokens_and_reports_issuer_failures() {
    let (url, issuer) = fake_issuer().await;
    // Tokens that expire within the 60 s margin are refreshed on status.
    issuer.expires_in.store(30, Ordering::SeqCst);
    issuer.approved.store(true, Ordering::SeqCst);
    let issuer_url = url.clone();
    let s = Server::start(move |c| c.openai_auth_issuer = issuer_url, |a| a).await;
    let base = "/api/llm/subscription/openai";
    let (_, start) = s.call("POST", &format!("{base}/device/start"), None).await;
    let (_, body) = s
        .call(
            "POST",
            &format!("{base}/device/poll"),
            Some(json!({"device_code": start["device_code"]})),
        )
        .await;
    assert_eq!(body["connected"], true);
    let (_, status) = s.call("GET", &format!("{base}/status"), None).await;
    assert_eq!(status["connected"], true);
    assert_eq!(issuer.refreshes.load(Ordering::SeqCst), 1);
    assert!(
        status["expires_at"].as_i64().unwrap() > body["expires_at"].as_i64().unwrap() + 3_000_000
    );

    // An issuer that is gone: start is a bad gateway, never a token.
    let dead = Server::start(
        |c| c.openai_auth_issuer = "http://127.0.0.1:9".into(),
        |a| a,
    )
    .await;
    let (st, body) = dead
        .call("POST", &format!("{base}/device/start"), None)
        .await;
    assert_eq!(st, 502, "{body}");
    assert_eq!(body["detail"], "Internal Server Error");
}

/// The reference's operations of these routes (method, path, operation id,
/// path and query parameters), from its `openapi.json`.
const REFERENCE_OPERATIONS: &[(&str, &str, &str, &[&str])] = &[
    (
        "get",
        "/api/conversations/{runtime_conversation_id}/vscode/url",
        "get_runtime_vscode_url_api_conversations__runtime_conversation_id__vscode_url_get",
        &["runtime_conversation_id", "base_url", "workspace_dir"],
    ),
    (
        "get",
        "/api/conversations/{runtime_conversation_id}/vscode/status",
        "get_vscode_status_api_conversations__runtime_conversation_id__vscode_status_get",
        &["runtime_conversation_id"],
    ),
    (
        "get",
        "/api/git/repositories/search",
        "git_repositories_search_api_git_repositories_search_get",
        &["provider", "query", "limit", "page_id"],
    ),
    (
        "get",
        "/api/vscode/url",
        "get_vscode_url_api_vscode_url_get",
        &["base_url", "workspace_dir"],
    ),
    (
        "get",
        "/api/vscode/status",
        "get_vscode_status_api_vscode_status_get",
        &[],
    ),
    (
        "get",
        "/api/llm/subscription/openai/models",
        "list_openai_subscription_models_api_llm_subscription_openai_models_get",
        &[],
    ),
    (
        "get",
        "/api/llm/subscription/openai/status",
        "get_openai_subscription_status_api_llm_subscription_openai_status_get",
        &[],
    ),
    (
        "post",
        "/api/llm/subscription/openai/device/start",
        "start_openai_subscription_device_login_api_llm_subscription_openai_device_start_post",
        &[],
    ),
    (
        "post",
        "/api/llm/subscription/openai/device/poll",
        "poll_openai_subscription_device_login_api_llm_subscription_openai_device_poll_post",
        &[],
    ),
    (
        "post",
        "/api/llm/subscription/openai/logout",
        "logout_openai_subscription_api_llm_subscription_openai_logout_post",
        &[],
    ),
    (
        "get",
        "/api/workspaces",
        "list_workspaces_api_workspaces_get",
        &[],
    ),
    (
        "post",
        "/api/workspaces",
        "add_workspaces_api_workspaces_post",
        &[],
    ),
    (
        "delete",
        "/api/workspaces",
        "delete_workspace_api_workspaces_delete",
        &["path"],
    ),
    (
        "post",
        "/api/workspaces/parents",
        "add_workspace_parents_api_workspaces_parents_post",
        &[],
    ),
    (
        "delete",
        "/api/workspaces/parents",
        "delete_workspace_parent_api_workspaces_parents_delete",
        &["path"],
    ),
    (
        "post",
        "/api/agent-profiles/{name}/materialize",
        "materialize_agent_profile_api_agent_profiles__name__materialize_post",
        &["name"],
    ),
    (
        "post",
        "/api/auth/workspace-session",
        "create_workspace_session_api_auth_workspace_session_post",
        &[],
    ),
    (
        "delete",
        "/api/auth/workspace-session",
        "delete_workspace_session_api_auth_workspace_session_delete",
        &[],
    ),
];

#[tokio::test]
async fn openapi_documents_these_routes_as_the_reference() {
    let s = Server::start(|_| {}, |a| a).await;
    let doc: Value = s
        .client
        .get(s.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for (method, path, op_id, params) in REFERENCE_OPERATIONS {
        let op = &doc["paths"][*path][*method];
        assert_eq!(op["operationId"], *op_id, "{method} {path}");
        let ours: Vec<&str> = op["parameters"]
            .as_array()
            .map(|a| a.iter().map(|p| p["name"].as_str().unwrap()).collect())
            .unwrap_or_default();
        assert_eq!(ours, *params, "{method} {path}");
    }
}
