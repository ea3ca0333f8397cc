//! Cross-cutting HTTP behaviour: open routes, auth, error shapes, limits,
//! CORS, OpenAPI and docs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{KEY, Options, start, start_with};
use openhands_agent_server::http::state::Limits;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

#[tokio::test]
async fn health_routes_are_open_and_shaped_like_the_reference() {
    let s = start().await;
    for path in ["/alive", "/health"] {
        let r = s.client.get(s.url(path)).send().await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.json::<Value>().await.unwrap(), json!({"status": "ok"}));
    }
    let r = s.client.get(s.url("/ready")).send().await.unwrap();
    assert_eq!(r.json::<Value>().await.unwrap(), json!({"status": "ready"}));

    let info: Value = s
        .client
        .get(s.url("/server_info"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(info["title"], "OpenHands Agent Server");
    assert_eq!(info["version"], env!("CARGO_PKG_VERSION"));
    assert!(info["uptime"].is_f64());
    assert!(info["idle_time"].is_f64());
    assert_eq!(info["docs"], "/docs");
    assert_eq!(info["redoc"], "/redoc");
    assert_eq!(info["conversation_runtime"], "local");
    assert!(info["capabilities"].is_array());
    assert!(info["usable_tools"].is_array());
    for key in [
        "runtime_idle_timeout_seconds",
        "app_backend_ingress_url",
        "max_foreground_terminal_timeout_seconds",
    ] {
        assert!(info.get(key).is_some(), "missing {key}");
    }
    let root: Value = s
        .client
        .get(s.url("/"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(root["title"], "OpenHands Agent Server");
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn api_routes_need_the_session_key_when_one_is_configured() {
    let s = start().await;
    let r = s.client.get(s.url("/api/tools/")).send().await.unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail": "Unauthorized"})
    );
    let r = s
        .client
        .get(s.url("/api/tools/"))
        .header("X-Session-API-Key", "wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // Bearer tokens and cookies are not accepted on /api.
    let r = s
        .client
        .get(s.url("/api/tools/"))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = s.get("/api/tools/").send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap(), json!([]));
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn without_keys_the_api_is_open() {
    let s = start_with(Options {
        tools: vec!["terminal".into(), "file_editor".into()],
        ..Options::default()
    })
    .await;
    let r = s.client.get(s.url("/api/tools/")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!(["terminal", "file_editor"])
    );
    let r = s.client.get(s.url("/api/tools")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let catalog: Value = s
        .client
        .get(s.url("/api/tools/catalog"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(catalog["tools"][0]["name"], "terminal");
    assert_eq!(catalog["tools"][0]["user_selectable"], true);
    assert_eq!(catalog["tools"][0]["in_default_set"], true);
    assert_eq!(catalog["tools"][0]["usable"], true);
    // The SDK's switch_llm is offered too, in the default set (as the reference).
    assert!(
        catalog["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "switch_llm"
                && t["in_default_set"] == true
                && t["user_selectable"] == true),
        "{catalog}"
    );
    assert!(
        !catalog["tools"][1]["description"]
            .as_str()
            .unwrap()
            .is_empty()
    );
    let info: Value = s
        .client
        .get(s.url("/server_info"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(info["usable_tools"], json!(["terminal", "file_editor"]));
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn unknown_routes_and_wrong_methods_have_json_bodies() {
    let s = start().await;
    for path in ["/nope", "/api/nope", "/api/bash/nope/deeper"] {
        let r = s.client.get(s.url(path)).send().await.unwrap();
        assert_eq!(r.status(), 404, "{path}");
        assert_eq!(
            r.json::<Value>().await.unwrap(),
            json!({"detail": "Not Found"})
        );
    }
    let r = s
        .delete("/api/bash/execute_bash_command")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail": "Method Not Allowed"})
    );
    let r = s.client.post(s.url("/health")).send().await.unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail": "Method Not Allowed"})
    );
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_bodies_are_422_in_the_pydantic_shape() {
    let s = start().await;
    let post = |body: &'static str, ct: Option<&'static str>| {
        let mut r = s.post("/api/bash/execute_bash_command").body(body);
        if let Some(ct) = ct {
            r = r.header("content-type", ct);
        }
        r.send()
    };
    let r = post(r#"{"command":1}"#, Some("application/json"))
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail":[{"type":"string_type","loc":["body","command"],"msg":"Input should be a valid string","input":1}]})
    );
    let r = post(r#"{"comm"#, Some("application/json")).await.unwrap();
    assert_eq!(r.status(), 422);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["detail"][0]["type"], "json_invalid");
    assert_eq!(v["detail"][0]["msg"], "JSON decode error");
    let r = post("{}", Some("application/json")).await.unwrap();
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail":[{"type":"missing","loc":["body","command"],"msg":"Field required","input":{}}]})
    );
    let r = post("", None).await.unwrap();
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail":[{"type":"missing","loc":["body"],"msg":"Field required","input":null}]})
    );
    let r = post("[1]", Some("application/json")).await.unwrap();
    assert_eq!(r.status(), 422);
    assert_eq!(
        r.json::<Value>().await.unwrap()["detail"][0]["type"],
        "model_attributes_type"
    );
    let r = post("x=1", Some("application/x-www-form-urlencoded"))
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let r = post(
        r#"{"command":"true","timeout":"abc"}"#,
        Some("application/json"),
    )
    .await
    .unwrap();
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail":[{"type":"int_parsing","loc":["body","timeout"],"msg":"Input should be a valid integer, unable to parse string as an integer","input":"abc"}]})
    );
    // A body in a different JSON shape than expected (object for a list).
    let r = s
        .get("/api/bash/bash_events/")
        .header("content-type", "application/json")
        .body(r#"{"a":1}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    assert_eq!(
        r.json::<Value>().await.unwrap()["detail"][0]["type"],
        "list_type"
    );
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_queries_are_422_naming_the_parameter() {
    let s = start().await;
    let r = s
        .get("/api/bash/bash_events/search?limit=0")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail":[{"type":"greater_than","loc":["query","limit"],"msg":"Input should be greater than 0","input":"0","ctx":{"gt":0}}]})
    );
    let r = s
        .get("/api/bash/bash_events/search?limit=101")
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.json::<Value>().await.unwrap()["detail"][0]["type"],
        "less_than_equal"
    );
    let r = s
        .get("/api/bash/bash_events/search?limit=abc")
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.json::<Value>().await.unwrap()["detail"][0]["type"],
        "int_parsing"
    );
    let r = s
        .get("/api/bash/bash_events/search?kind__eq=Foo")
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.json::<Value>().await.unwrap()["detail"][0],
        json!({"type":"literal_error","loc":["query","kind__eq"],"msg":"Input should be 'BashCommand' or 'BashOutput'","input":"Foo","ctx":{"expected":"'BashCommand' or 'BashOutput'"}})
    );
    let r = s
        .get("/api/bash/bash_events/search?command_id__eq=zz&timestamp__gte=nope")
        .send()
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["detail"][0]["type"], "uuid_parsing");
    assert_eq!(v["detail"][1]["type"], "datetime_from_date_parsing");
    let r = s.get("/api/file/download").send().await.unwrap();
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail":[{"type":"missing","loc":["query","path"],"msg":"Field required","input":null}]})
    );
    let r = s
        .post("/api/bash/bash_commands/zzz/stop")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    assert_eq!(
        r.json::<Value>().await.unwrap()["detail"][0]["loc"],
        json!(["path", "command_id"])
    );
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn oversized_bodies_are_413_json() {
    let s = start_with(Options {
        keys: vec![KEY.into()],
        limits: Some(Limits {
            json_body_bytes: 1024,
            upload_bytes: 4096,
            ..Limits::default()
        }),
        ..Options::default()
    })
    .await;
    let big = format!(r#"{{"command":"echo {}"}}"#, "x".repeat(4000));
    let r = s
        .post("/api/bash/execute_bash_command")
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail": "Request body too large"})
    );

    let target = s.dir.path().join("big.bin");
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(vec![7u8; 20_000]).file_name("big.bin"),
    );
    let r = s
        .post(&format!("/api/file/upload?path={}", target.display()))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail": "Request body too large"})
    );
    assert!(!target.exists());
    // Nothing half-written is left behind.
    let leftovers: Vec<_> = std::fs::read_dir(s.dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".upload"))
        .collect();
    assert!(leftovers.is_empty());
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn cors_allows_localhost_and_configured_origins_only() {
    let s = start_with(Options {
        cors: vec!["https://app.example.com".into()],
        ..Options::default()
    })
    .await;
    let preflight = |origin: &'static str| {
        s.client
            .request(reqwest::Method::OPTIONS, s.url("/api/tools/"))
            .header("Origin", origin)
            .header("Access-Control-Request-Method", "GET")
            .header("Access-Control-Request-Headers", "x-session-api-key")
            .send()
    };
    for origin in [
        "http://localhost:3000",
        "http://127.0.0.1:8080",
        "https://app.example.com",
    ] {
        let r = preflight(origin).await.unwrap();
        assert_eq!(
            r.headers()
                .get("access-control-allow-origin")
                .and_then(|v| v.to_str().ok()),
            Some(origin)
        );
        assert_eq!(
            r.headers()
                .get("access-control-allow-credentials")
                .and_then(|v| v.to_str().ok()),
            Some("true")
        );
    }
    let r = preflight("https://evil.example.com").await.unwrap();
    assert!(r.headers().get("access-control-allow-origin").is_none());
    let r = s
        .client
        .get(s.url("/health"))
        .header("Origin", "http://localhost:5173")
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.headers()
            .get("access-control-allow-origin")
            .and_then(|v| v.to_str().ok()),
        Some("http://localhost:5173")
    );
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn openapi_describes_the_served_routes_and_docs_are_served() {
    let s = start().await;
    let r = s.client.get(s.url("/openapi.json")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let doc: Value = r.json().await.unwrap();
    assert_eq!(doc["info"]["title"], "OpenHands Agent Server");
    let paths = doc["paths"].as_object().unwrap();
    let expected = [
        ("/alive", "get"),
        ("/health", "get"),
        ("/ready", "get"),
        ("/server_info", "get"),
        ("/", "get"),
        ("/api/tools/", "get"),
        ("/api/bash/execute_bash_command", "post"),
        ("/api/bash/start_bash_command", "post"),
        ("/api/bash/bash_events/search", "get"),
        ("/api/bash/bash_events/{event_id}", "get"),
        ("/api/bash/bash_events/", "get"),
        ("/api/bash/bash_events", "delete"),
        ("/api/bash/bash_commands/{command_id}/stop", "post"),
        ("/api/file/upload", "post"),
        ("/api/file/download", "get"),
        ("/api/file/create_directory", "post"),
        ("/api/git/changes", "get"),
        ("/api/git/diff", "get"),
        (
            "/api/conversations/{runtime_conversation_id}/bash/execute_bash_command",
            "post",
        ),
        (
            "/api/conversations/{runtime_conversation_id}/file/upload",
            "post",
        ),
        (
            "/api/conversations/{runtime_conversation_id}/git/diff",
            "get",
        ),
    ];
    for (path, method) in expected {
        assert!(
            paths.get(path).and_then(|p| p.get(method)).is_some(),
            "{method} {path} missing from openapi"
        );
    }
    // Every documented operation is actually routed (not 404).
    for (path, item) in paths {
        for method in item.as_object().unwrap().keys() {
            let concrete = path
                .replace(
                    "{runtime_conversation_id}",
                    "00000000000000000000000000000000",
                )
                .replace("{event_id}", "x")
                .replace("{command_id}", "00000000000000000000000000000000");
            let m = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let r = s
                .client
                .request(m, s.url(&concrete))
                .header("X-Session-API-Key", KEY)
                .send()
                .await
                .unwrap();
            let body: Value = r.json().await.unwrap_or(Value::Null);
            let unrouted = body == json!({"detail": "Not Found"}) && !path.contains('{');
            assert!(!unrouted, "{method} {path} is documented but not routed");
        }
    }
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for name in [
        "BashOutput",
        "BashCommand",
        "ExecuteBashRequest",
        "ServerInfo",
        "GitChange",
        "GitDiff",
        "FileUploadResult",
        "HttpValidationError",
    ] {
        assert!(schemas.contains_key(name), "schema {name} missing");
    }
    assert_eq!(
        doc["components"]["securitySchemes"]["APIKeyHeader"],
        json!({"type": "apiKey", "in": "header", "name": "X-Session-API-Key"})
    );

    let r = s.client.get(s.url("/docs/")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let html = r.text().await.unwrap();
    assert!(html.contains("swagger"), "docs page is not swagger-ui");
    let r = s
        .client
        .get(s.url("/docs/swagger-ui.css"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn static_files_are_served_when_configured() {
    openhands_agent_server::install_tls_provider();
    let dir = tempfile::tempdir().unwrap();
    let static_dir = dir.path().join("static");
    std::fs::create_dir_all(&static_dir).unwrap();
    std::fs::write(static_dir.join("index.html"), "<h1>hi</h1>").unwrap();
    let mut config = common::config_in(dir.path(), vec![]);
    config.static_files_path = Some(static_dir);
    let state = openhands_agent_server::AppState::new(config).shared();
    let handle = openhands_agent_server::spawn(state, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = client
        .get(format!("{}/", handle.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 302);
    assert_eq!(r.headers()["location"], "/static/index.html");
    let r = client
        .get(format!("{}/static/index.html", handle.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.text().await.unwrap(), "<h1>hi</h1>");
    handle.shutdown().await.unwrap();
}
