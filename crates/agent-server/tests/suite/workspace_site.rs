//! A conversation's workspace served as a static site
//! (`/api/conversations/{id}/workspace/...`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{KEY, Options, TestServer};
use openhands_agent_server::RuntimeScope;
use pretty_assertions::assert_eq;
use std::collections::HashMap;

async fn site(dir: tempfile::TempDir) -> (TestServer, uuid::Uuid) {
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("docs/css")).unwrap();
    std::fs::create_dir_all(ws.join("empty")).unwrap();
    std::fs::write(ws.join("index.html"), "<h1>home</h1>").unwrap();
    std::fs::write(ws.join("docs/index.html"), "<h1>docs</h1>").unwrap();
    std::fs::write(ws.join("docs/css/site.css"), "body{}").unwrap();
    std::fs::write(ws.join("data.json"), "{\"a\":1}").unwrap();
    std::fs::write(ws.join("notes"), "0123456789").unwrap();
    std::fs::create_dir_all(dir.path().join("outside")).unwrap();
    std::fs::write(dir.path().join("outside/secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(dir.path().join("outside"), ws.join("escape")).unwrap();
    let id = uuid::Uuid::new_v4();
    let mut runtimes = HashMap::new();
    runtimes.insert(
        id,
        RuntimeScope {
            workspace_root: ws,
            conversation_dir: dir.path().join("conv"),
        },
    );
    let s = common::start_in(
        dir,
        Options {
            keys: vec![KEY.into()],
            runtimes,
            ..Options::default()
        },
    )
    .await;
    (s, id)
}

async fn get(s: &TestServer, path: &str) -> reqwest::Response {
    s.get(path).send().await.unwrap()
}

#[tokio::test]
async fn serves_files_and_directory_index_pages() {
    let (s, id) = site(tempfile::tempdir().unwrap()).await;
    let base = format!("/api/conversations/{id}/workspace");

    let r = get(&s, &base).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/html; charset=utf-8");
    assert!(r.headers().contains_key("etag"));
    assert!(r.headers().contains_key("last-modified"));
    assert_eq!(r.text().await.unwrap(), "<h1>home</h1>");

    let r = get(&s, &format!("{base}/docs/")).await;
    assert_eq!(r.text().await.unwrap(), "<h1>docs</h1>");
    let r = get(&s, &format!("{base}/docs/css/site.css")).await;
    assert_eq!(r.headers()["content-type"], "text/css; charset=utf-8");
    assert_eq!(r.text().await.unwrap(), "body{}");
    let r = get(&s, &format!("{base}/data.json")).await;
    assert_eq!(r.headers()["content-type"], "application/json");
    // A name without extension is served as bytes, as the reference does.
    let r = get(&s, &format!("{base}/notes")).await;
    assert_eq!(r.headers()["content-type"], "application/octet-stream");

    // Ranges are honoured.
    let r = s
        .get(&format!("{base}/notes"))
        .header("range", "bytes=2-4")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 206);
    assert_eq!(r.text().await.unwrap(), "234");
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn missing_files_outside_paths_and_unknown_conversations_are_refused() {
    let (s, id) = site(tempfile::tempdir().unwrap()).await;
    let base = format!("/api/conversations/{id}/workspace");

    let r = get(&s, &format!("{base}/nope.html")).await;
    assert_eq!(r.status(), 404);
    assert_eq!(
        r.json::<serde_json::Value>().await.unwrap()["detail"],
        "File not found"
    );
    let r = get(&s, &format!("{base}/empty")).await;
    assert_eq!(r.status(), 404);
    assert_eq!(
        r.json::<serde_json::Value>().await.unwrap()["detail"],
        "No index.html in directory"
    );
    // A symlink leading out of the workspace, and dot-dot segments.
    let r = get(&s, &format!("{base}/escape/secret.txt")).await;
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.json::<serde_json::Value>().await.unwrap()["detail"],
        "Path is outside the workspace"
    );
    let r = get(&s, &format!("{base}/docs/..%2F..%2Foutside%2Fsecret.txt")).await;
    assert_eq!(r.status(), 400);

    let other = uuid::Uuid::new_v4();
    let r = get(
        &s,
        &format!("/api/conversations/{other}/workspace/index.html"),
    )
    .await;
    assert_eq!(r.status(), 404);
    assert_eq!(
        r.json::<serde_json::Value>().await.unwrap()["detail"],
        format!("Conversation not found: {other}")
    );
    let r = get(&s, "/api/conversations/not-a-uuid/workspace").await;
    assert_eq!(r.status(), 422);

    // The session key is required, as for every /api route.
    let r = reqwest::Client::new()
        .get(s.url(&format!("{base}/index.html")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    s.handle.shutdown().await.unwrap();
}
