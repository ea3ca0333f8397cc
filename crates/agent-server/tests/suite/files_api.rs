//! File routes: upload/download round trip, status codes, conversation confinement.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{KEY, Options, TestServer, start};
use openhands_agent_server::RuntimeScope;
use pretty_assertions::assert_eq;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;

fn form(bytes: Vec<u8>) -> Form {
    Form::new().part("file", Part::bytes(bytes).file_name("upload.bin"))
}

async fn upload(s: &TestServer, base: &str, path: &str, bytes: Vec<u8>) -> reqwest::Response {
    s.post(&common::with_query(&format!("{base}/upload"), "path", path))
        .multipart(form(bytes))
        .send()
        .await
        .unwrap()
}

async fn download(s: &TestServer, base: &str, path: &str) -> reqwest::Response {
    s.get(&common::with_query(
        &format!("{base}/download"),
        "path",
        path,
    ))
    .send()
    .await
    .unwrap()
}

#[tokio::test]
async fn upload_and_download_round_trip() {
    let s = start().await;
    let target = s.dir.path().join("deep/er/file.bin");
    let content: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let r = upload(&s, "/api/file", target.to_str().unwrap(), content.clone()).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"success": true, "file_size": 200_000})
    );
    assert_eq!(std::fs::read(&target).unwrap(), content);

    let r = download(&s, "/api/file", target.to_str().unwrap()).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/octet-stream");
    assert_eq!(
        r.headers()["content-disposition"],
        "attachment; filename=\"file.bin\""
    );
    assert_eq!(r.headers()["content-length"], "200000");
    assert_eq!(r.bytes().await.unwrap().to_vec(), content);

    // Overwrite with smaller content.
    let r = upload(&s, "/api/file", target.to_str().unwrap(), b"small".to_vec()).await;
    assert_eq!(r.status(), 200);
    assert_eq!(std::fs::read(&target).unwrap(), b"small");
    // Empty file.
    let empty = s.dir.path().join("empty");
    let r = upload(&s, "/api/file", empty.to_str().unwrap(), Vec::new()).await;
    assert_eq!(r.json::<Value>().await.unwrap()["file_size"], 0);
    let r = download(&s, "/api/file", empty.to_str().unwrap()).await;
    assert!(r.bytes().await.unwrap().is_empty());
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn file_status_codes_match_the_reference() {
    let s = start().await;
    let d = s.dir.path();
    // Relative paths: 400.
    let r = upload(&s, "/api/file", "rel/x", b"x".to_vec()).await;
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail": "Path must be absolute"})
    );
    let r = download(&s, "/api/file", "rel").await;
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail": "Path must be absolute"})
    );
    let r = s
        .post(&common::with_query(
            "/api/file/create_directory",
            "path",
            "rel",
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    // Missing query / missing file field: 422.
    let r = s
        .post("/api/file/upload")
        .multipart(form(b"x".to_vec()))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail":[{"type":"missing","loc":["query","path"],"msg":"Field required","input":null}]})
    );
    let other = Form::new().part("other", Part::bytes(b"x".to_vec()).file_name("o"));
    let r = s
        .post(&common::with_query(
            "/api/file/upload",
            "path",
            d.join("x").to_str().unwrap(),
        ))
        .multipart(other)
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail":[{"type":"missing","loc":["body","file"],"msg":"Field required","input":null}]})
    );
    let r = s
        .post(&common::with_query(
            "/api/file/upload",
            "path",
            d.join("x").to_str().unwrap(),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    // Download errors.
    let r = download(&s, "/api/file", d.join("nope").to_str().unwrap()).await;
    assert_eq!(r.status(), 404);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail": "File not found"})
    );
    let r = download(&s, "/api/file", d.to_str().unwrap()).await;
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail": "Path is not a file"})
    );
    // Upload onto a directory / under a file.
    let r = upload(&s, "/api/file", d.to_str().unwrap(), b"x".to_vec()).await;
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail": "Path is a directory"})
    );
    std::fs::write(d.join("afile"), "x").unwrap();
    let r = upload(
        &s,
        "/api/file",
        d.join("afile/child").to_str().unwrap(),
        b"x".to_vec(),
    )
    .await;
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail": "A parent of the path is not a directory"})
    );
    // create_directory: idempotent, 400 over a file.
    let newdir = d.join("n1/n2");
    for _ in 0..2 {
        let r = s
            .post(&common::with_query(
                "/api/file/create_directory",
                "path",
                newdir.to_str().unwrap(),
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.json::<Value>().await.unwrap(), json!({"success": true}));
    }
    assert!(newdir.is_dir());
    let r = s
        .post(&common::with_query(
            "/api/file/create_directory",
            "path",
            d.join("afile").to_str().unwrap(),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail": "Path exists and is not a directory"})
    );
    // Auth applies to file routes.
    let r = s
        .client
        .get(common::with_query(
            &s.url("/api/file/download"),
            "path",
            d.join("afile").to_str().unwrap(),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    s.handle.shutdown().await.unwrap();
}

fn scoped(dir: &Path) -> (uuid::Uuid, HashMap<uuid::Uuid, RuntimeScope>) {
    let id = uuid::Uuid::new_v4();
    let mut map = HashMap::new();
    map.insert(
        id,
        RuntimeScope {
            workspace_root: dir.join("ws"),
            conversation_dir: dir.join("conv"),
        },
    );
    (id, map)
}

#[tokio::test]
async fn conversation_file_routes_reject_paths_outside_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let secret = dir.path().join("secret");
    std::fs::create_dir_all(&secret).unwrap();
    std::fs::write(secret.join("key.txt"), "top secret").unwrap();
    std::os::unix::fs::symlink(&secret, ws.join("escape")).unwrap();
    let (id, runtimes) = scoped(dir.path());
    let s = common::start_in(
        dir,
        Options {
            keys: vec![KEY.into()],
            runtimes,
            ..Options::default()
        },
    )
    .await;
    let base = format!("/api/conversations/{id}/file");
    let inside = ws.join("sub/in.txt");
    let r = upload(&s, &base, inside.to_str().unwrap(), b"hello".to_vec()).await;
    assert_eq!(r.status(), 200);
    let r = download(&s, &base, inside.to_str().unwrap()).await;
    assert_eq!(r.text().await.unwrap(), "hello");
    let r = s
        .post(&common::with_query(
            &format!("{base}/create_directory"),
            "path",
            ws.join("made").to_str().unwrap(),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    let outside = [
        format!("{}/../secret/key.txt", ws.display()),
        format!("{}/escape/key.txt", ws.display()),
        "/etc/passwd".to_string(),
        "relative/x".to_string(),
        format!("{}-sibling/x", ws.display()),
    ];
    for path in &outside {
        let r = download(&s, &base, path).await;
        assert_eq!(r.status(), 422, "download {path}");
        assert_eq!(
            r.json::<Value>().await.unwrap(),
            json!({"detail": "path must be inside the conversation workspace"})
        );
        let r = upload(&s, &base, path, b"pwned".to_vec()).await;
        assert_eq!(r.status(), 422, "upload {path}");
        let r = s
            .post(&common::with_query(
                &format!("{base}/create_directory"),
                "path",
                path.as_str(),
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 422, "create_directory {path}");
    }
    assert_eq!(
        std::fs::read_to_string(s.dir.path().join("secret/key.txt")).unwrap(),
        "top secret"
    );
    assert!(!s.dir.path().join("ws-sibling").exists());

    let unknown = uuid::Uuid::new_v4();
    let r = download(
        &s,
        &format!("/api/conversations/{}/file", unknown.simple()),
        inside.to_str().unwrap(),
    )
    .await;
    assert_eq!(r.status(), 404);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail": format!("Conversation not found: {unknown}")})
    );
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn search_subdirs_lists_and_pages_directories() {
    let s = start().await;
    let d = s.dir.path().join("browse");
    for name in ["b", "A", "a", ".hidden", "c"] {
        std::fs::create_dir_all(d.join(name)).unwrap();
    }
    std::fs::write(d.join("file.txt"), "x").unwrap();
    std::os::unix::fs::symlink(d.join("c"), d.join("link")).unwrap();
    let get = |extra: &str| {
        s.get(&format!(
            "{}{extra}",
            common::with_query("/api/file/search_subdirs", "path", d.to_str().unwrap())
        ))
        .send()
    };
    let page: Value = get("").await.unwrap().json().await.unwrap();
    let names: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["A", "a", "b", "c"]);
    assert_eq!(page["items"][0]["path"], d.join("A").to_str().unwrap());
    assert_eq!(page["next_page_id"], Value::Null);
    let hidden: Value = get("&include_hidden=yes")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(hidden["items"].as_array().unwrap().len(), 5);
    let first: Value = get("&limit=2").await.unwrap().json().await.unwrap();
    assert_eq!(first["next_page_id"], "b");
    let second: Value = get("&limit=2&page_id=b")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = second["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["b", "c"]);
    let bad = get("&include_hidden=perhaps").await.unwrap();
    assert_eq!(bad.status(), 422);
    assert_eq!(
        bad.json::<Value>().await.unwrap()["detail"][0]["type"],
        "bool_parsing"
    );
    let r = s
        .get(&common::with_query(
            "/api/file/search_subdirs",
            "path",
            "relative",
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let r = s
        .get(&common::with_query(
            "/api/file/search_subdirs",
            "path",
            d.join("nope").to_str().unwrap(),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"detail": "Directory not found"})
    );
    let r = s
        .get(&common::with_query(
            "/api/file/search_subdirs",
            "path",
            d.join("file.txt").to_str().unwrap(),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);

    let home: Value = s
        .get("/api/file/home")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(home["home"].as_str().unwrap().starts_with('/'));
    assert!(home["favorites"].is_array());
    assert_eq!(home["locations"], json!([{"label": "/", "path": "/"}]));
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn trajectory_download_zips_the_conversation_without_secrets() {
    use std::io::Read;
    let s = start().await;
    let id = uuid::Uuid::new_v4();
    let conv = s
        .dir
        .path()
        .join("conversations")
        .join(id.simple().to_string());
    std::fs::create_dir_all(conv.join("events")).unwrap();
    std::fs::write(
        conv.join("base_state.json"),
        r#"{"agent":{"llm":{"model":"m","api_key":"gAAAAAsecret"}}}"#,
    )
    .unwrap();
    std::fs::write(
        conv.join("events/event-00000-a.json"),
        r#"{"kind":"PauseEvent"}"#,
    )
    .unwrap();
    let r = s
        .get(&format!("/api/file/download-trajectory/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["content-disposition"],
        format!("attachment; filename=\"{}.zip\"", id.simple()).as_str()
    );
    let bytes = r.bytes().await.unwrap();
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes.to_vec())).unwrap();
    let mut text = String::new();
    zip.by_name(&format!("{}/base_state.json", id.simple()))
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert!(!text.contains("gAAAA"), "{text}");
    assert!(text.contains("**********"));
    assert!(
        zip.by_name(&format!("{}/events/event-00000-a.json", id.simple()))
            .is_ok()
    );

    let r = s
        .get(&format!(
            "/api/file/download-trajectory/{}",
            uuid::Uuid::new_v4()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let r = s
        .get("/api/file/download-trajectory/nope")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    assert_eq!(
        r.json::<Value>().await.unwrap()["detail"][0]["loc"],
        json!(["path", "conversation_id"])
    );
    s.handle.shutdown().await.unwrap();
}
