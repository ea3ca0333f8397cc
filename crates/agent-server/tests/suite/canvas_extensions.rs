//! Canvas extensions end to end: a bundle built here (manifest, entry
//! file, icon, and a backend archive whose executable starts a small
//! Python HTTP server) is installed from its directory, listed, enabled,
//! served; its backend is prepared, started, reached through an
//! app-backend session over the ingress (HTTP and WebSocket), logged, stopped (process group
//! gone) and its data deleted; bad manifests and sources get the
//! reference's answers; server shutdown stops running backends.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{KEY, TestServer, config_in};
use openhands_agent_server::AppState;
use serde_json::{Value, json};
use sha2::Digest;
use std::path::{Path, PathBuf};
use tempfile::TempDir;

const PUBLIC: &str = "https://apps.example.test";
const CONTROL_ORIGIN: &str = "http://localhost:3000";

const APP_PY: &str = r#"
import base64, hashlib, json, struct, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
def ws_echo(h):
    key = h.headers["Sec-WebSocket-Key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
    h.send_response(101)
    h.send_header("Upgrade", "websocket")
    h.send_header("Connection", "Upgrade")
    h.send_header("Sec-WebSocket-Accept", base64.b64encode(hashlib.sha1(key.encode()).digest()).decode())
    h.end_headers()
    h.wfile.flush()
    r, w = h.rfile, h.wfile
    while True:
        b = r.read(2)
        if len(b) < 2:
            return
        op, n = b[0] & 15, b[1] & 127
        if n == 126:
            n = struct.unpack(">H", r.read(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", r.read(8))[0]
        mask = r.read(4) if b[1] & 128 else b"\0\0\0\0"
        data = bytes(x ^ mask[i % 4] for i, x in enumerate(r.read(n)))
        if op == 8:
            w.write(b"\x88\x00")
            w.flush()
            return
        if op == 1:
            out = ("echo:" + data.decode()).encode()
            w.write(bytes([0x81, len(out)]) + out)
            w.flush()
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def _answer(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Backend", "yes")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        if self.headers.get("Upgrade", "").lower() == "websocket":
            return ws_echo(self)
        if self.path == "/health":
            return self._answer({"ok": True})
        self._answer({"method": "GET", "path": self.path,
                      "cookie": self.headers.get("Cookie"),
                      "key": self.headers.get("X-Session-API-Key")})
    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        self._answer({"method": "POST", "path": self.path,
                      "body": self.rfile.read(n).decode()})
    def log_message(self, *a):
        pass
print("backend starting on", sys.argv[1], flush=True)
print("home is", __import__("os").environ.get("HOME"), file=sys.stderr, flush=True)
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"#;

fn python() -> String {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A gzip tar of `(name, content, mode)` files.
fn tar_gz(files: &[(&str, &[u8], u32)]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut b = tar::Builder::new(gz);
    for (name, data, mode) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(*mode);
        h.set_entry_type(tar::EntryType::Regular);
        b.append_data(&mut h, name, *data).unwrap();
    }
    b.into_inner().unwrap().finish().unwrap()
}

fn sha256(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Writes an extension package named `name` into `dir/name` with a backend.
fn bundle(dir: &Path, name: &str) -> PathBuf {
    let root = dir.join(name);
    std::fs::create_dir_all(root.join("dist")).unwrap();
    std::fs::write(root.join("dist/index.js"), "export default 1;\n").unwrap();
    std::fs::write(
        root.join("icon.svg"),
        "<svg xmlns='http://www.w3.org/2000/svg'/>",
    )
    .unwrap();
    let server = format!(
        "#!/bin/sh\nexec {} \"$(dirname \"$0\")/app.py\" \"$@\"\n",
        python()
    );
    let archive = tar_gz(&[
        ("bin/server", server.as_bytes(), 0o755),
        ("bin/app.py", APP_PY.as_bytes(), 0o644),
    ]);
    std::fs::write(root.join("backend.tar.gz"), &archive).unwrap();
    let platform = if cfg!(target_arch = "aarch64") {
        "linux-arm64"
    } else {
        "linux-amd64"
    };
    let manifest = json!({
        "schema_version": 1, "name": name, "display_name": "Demo App",
        "version": "1.2.3", "description": "A demo", "entrypoint": "dist/index.js",
        "icon": "icon.svg",
        "contributes": {"pages": [{"id": "main", "title": "Main", "path": "/demo"}]},
        "backend": {"schema_version": 1,
            "artifacts": {platform: {"path": "backend.tar.gz", "sha256": sha256(&archive)}},
            "argv": ["{artifact_dir}/bin/server", "{port}"],
            "health": {"path": "/health", "timeout_seconds": 20},
            "inherit_environment": ["PATH"]}
    });
    std::fs::write(root.join("canvas-extension.json"), manifest.to_string()).unwrap();
    root
}

async fn server() -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    openhands_agent_server::install_tls_provider();
    let mut config = config_in(dir.path(), vec![KEY.into()]);
    config.persistence_dir = dir.path().join("oh");
    config.app_backend_public_url = Some(PUBLIC.into());
    config.trust_forwarded_headers = true;
    let handle = openhands_agent_server::spawn(
        AppState::new(config).shared(),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .unwrap();
    TestServer {
        handle,
        dir,
        client,
    }
}

async fn json_of(r: reqwest::Response) -> (u16, Value) {
    let s = r.status().as_u16();
    (s, r.json().await.unwrap_or(Value::Null))
}

async fn install(s: &TestServer, body: Value) -> (u16, Value) {
    json_of(
        s.post("/api/canvas-extensions/install")
            .json(&body)
            .send()
            .await
            .unwrap(),
    )
    .await
}

/// A request on the ingress origin (as the proxy in front would send it).
fn ingress(s: &TestServer, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
    s.client
        .request(method, s.url(path))
        .header("X-Forwarded-Proto", "https")
        .header("X-Forwarded-Host", "apps.example.test")
}

fn alive(pid: u64) -> bool {
    // Reaped: no /proc entry (a zombie would still have one).
    Path::new(&format!("/proc/{pid}")).exists()
}

async fn wait_gone(pid: u64) {
    for _ in 0..100 {
        if !alive(pid) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("backend {pid} still alive");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_enable_serve_start_proxy_and_stop() {
    let s = server().await;
    let src = tempfile::tempdir().unwrap();
    let root = bundle(src.path(), "demo-app");
    let (st, info) = install(&s, json!({"source": root})).await;
    assert_eq!(st, 200, "{info}");
    assert_eq!(info["name"], "demo-app");
    assert_eq!(info["enabled"], false, "a fresh install lands disabled");
    assert_eq!(info["version"], "1.2.3");
    assert_eq!(info["manifest"]["display_name"], "Demo App");
    assert_eq!(
        info["manifest"]["backend"]["health"]["interval_seconds"],
        0.1
    );
    assert_eq!(
        info["manifest"]["backend"]["artifacts"]
            .as_object()
            .unwrap()
            .values()
            .next()
            .unwrap()["url"],
        Value::Null
    );
    let installed = s.dir.path().join("oh/canvas-extensions/installed/demo-app");
    assert_eq!(info["install_path"], installed.to_string_lossy().as_ref());
    assert!(installed.join("canvas-extension.json").is_file());

    let (st, again) = install(&s, json!({"source": root})).await;
    assert_eq!(
        (st, &again["detail"]),
        (
            409,
            &json!("Canvas extension already installed. Use force=true to overwrite.")
        )
    );

    let (st, list) = json_of(
        s.get("/api/canvas-extensions/installed")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 200);
    assert_eq!(list["canvas_extensions"].as_array().unwrap().len(), 1);
    let (st, missing) = json_of(
        s.get("/api/canvas-extensions/installed/nope")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (st, &missing["detail"]),
        (404, &json!("Canvas extension 'nope' is not installed"))
    );
    let (st, bad) = json_of(
        s.get("/api/canvas-extensions/installed/Bad_Name")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (st, &bad["detail"][0]["type"]),
        (422, &json!("string_pattern_mismatch"))
    );

    let (st, patched) = json_of(
        s.client
            .patch(s.url("/api/canvas-extensions/installed/demo-app"))
            .header("X-Session-API-Key", KEY)
            .json(&json!({"enabled": true}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (st, patched),
        (200, json!({"name": "demo-app", "enabled": true}))
    );
    let (_, got) = json_of(
        s.get("/api/canvas-extensions/installed/demo-app")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(got["enabled"], true);
    // A forced re-install keeps the enabled state.
    let (st, forced) = install(&s, json!({"source": root, "force": true})).await;
    assert_eq!((st, &forced["enabled"]), (200, &json!(true)));

    let r = s
        .get("/api/canvas-extensions/installed/demo-app/bundle")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["cache-control"], "no-cache");
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/javascript")
    );
    assert_eq!(r.text().await.unwrap(), "export default 1;\n");
    let r = s
        .get("/api/canvas-extensions/installed/demo-app/icon")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "image/svg+xml");
    assert!(
        r.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("sandbox")
    );

    // Backend: stopped, with a manifest revision; start needs a prepared revision.
    let base = "/api/canvas-extensions/installed/demo-app/backend";
    let (st, status) = json_of(s.get(base).send().await.unwrap()).await;
    assert_eq!((st, &status["state"]), (200, &json!("stopped")), "{status}");
    let revision = status["revision"].as_str().unwrap().to_string();
    assert!(revision.starts_with("sha256:"));
    let (st, e) = json_of(
        s.post(&format!("{base}/start"))
            .json(&json!({"revision": revision}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (st, &e["detail"]),
        (
            409,
            &json!("backend revision must be prepared before start")
        )
    );
    let (st, e) = json_of(
        s.post(&format!("{base}/prepare"))
            .json(&json!({"revision": "sha256:other"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (st, &e["detail"]),
        (
            409,
            &json!("approval revision does not match installed revision")
        )
    );
    let (st, e) = json_of(
        s.post(&format!("{base}/prepare"))
            .json(&json!({"revision": ""}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (st, &e["detail"][0]["loc"]),
        (422, &json!(["body", "revision"]))
    );
    let (st, prepared) = json_of(
        s.post(&format!("{base}/prepare"))
            .json(&json!({"revision": revision}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (st, &prepared["prepared_revision"]),
        (200, &json!(revision)),
        "{prepared}"
    );
    let (st, ready) = json_of(
        s.post(&format!("{base}/start"))
            .json(&json!({"revision": revision}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((st, &ready["state"]), (200, &json!("ready")), "{ready}");
    let pid = ready["pid"].as_u64().unwrap();
    assert!(ready["port"].as_u64().is_some());
    assert!(alive(pid));

    // Data cannot be deleted while it runs.
    let (st, e) = json_of(s.delete(&format!("{base}/data")).send().await.unwrap()).await;
    assert_eq!(
        (st, &e["detail"]),
        (409, &json!("stop the backend before deleting its data"))
    );

    // Session bootstrap: key, ingress host, control origin.
    let session = "/app-backends/demo-app/session";
    let r = ingress(&s, reqwest::Method::POST, session)
        .header("Origin", CONTROL_ORIGIN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = s
        .post(session)
        .header("Origin", CONTROL_ORIGIN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 421, "the control host is not the ingress");
    let r = ingress(&s, reqwest::Method::POST, session)
        .header("X-Session-API-Key", KEY)
        .header("Origin", "https://evil.test")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = ingress(&s, reqwest::Method::POST, session)
        .header("X-Session-API-Key", KEY)
        .header("Origin", "http://localhost:443")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "a loopback control origin is allowed");
    let r = ingress(&s, reqwest::Method::POST, session)
        .header("X-Session-API-Key", KEY)
        .header("Origin", CONTROL_ORIGIN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(cookie.starts_with("oh_app_backend_session="), "{cookie}");
    for part in [
        "HttpOnly",
        "Max-Age=300",
        "Path=/app-backends/demo-app",
        "SameSite=none",
        "Secure",
        "Partitioned",
    ] {
        assert!(cookie.contains(part), "{cookie}");
    }
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body["ingress_url"],
        format!("{PUBLIC}/app-backends/demo-app/")
    );
    assert!(body["expires_at"].as_str().unwrap().ends_with('Z'));
    let token = cookie.split(';').next().unwrap().to_string();

    // The ingress forwards with the session cookie only.
    let echo = "/app-backends/demo-app/api/echo?x=1&session_api_key=leak";
    let r = ingress(&s, reqwest::Method::GET, echo)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = ingress(&s, reqwest::Method::GET, echo)
        .header("Cookie", &token)
        .header("X-Session-API-Key", KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-backend"], "yes");
    let got: Value = r.json().await.unwrap();
    assert_eq!(
        got,
        json!({"method": "GET", "path": "/api/echo?x=1", "cookie": null, "key": null})
    );
    let r = ingress(
        &s,
        reqwest::Method::POST,
        "/app-backends/demo-app/api/items",
    )
    .header("Cookie", &token)
    .body("hello")
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), 403, "unsafe methods need the app origin");
    let r = ingress(
        &s,
        reqwest::Method::POST,
        "/app-backends/demo-app/api/items",
    )
    .header("Cookie", &token)
    .header("Origin", PUBLIC)
    .body("hello")
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    let got: Value = r.json().await.unwrap();
    assert_eq!(
        (got["path"].clone(), got["body"].clone()),
        (json!("/api/items"), json!("hello"))
    );
    let r = ingress(
        &s,
        reqwest::Method::GET,
        "/app-backends/demo-app/a/%252e%252e/b",
    )
    .header("Cookie", &token)
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), 400);

    // WebSockets are bridged with the same session; a stop closes them.
    let ws_request = |cookie: Option<&str>| {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        let mut r = s
            .ws_url("/app-backends/demo-app/ws?session_api_key=x")
            .into_client_request()
            .unwrap();
        let h = r.headers_mut();
        h.insert("origin", PUBLIC.parse().unwrap());
        h.insert("x-forwarded-proto", "https".parse().unwrap());
        h.insert("x-forwarded-host", "apps.example.test".parse().unwrap());
        if let Some(c) = cookie {
            h.insert("cookie", c.parse().unwrap());
        }
        r
    };
    let refused = tokio_tungstenite::connect_async(ws_request(None)).await;
    assert!(refused.is_err(), "no session, no socket");
    let (mut ws, _) = tokio_tungstenite::connect_async(ws_request(Some(&token)))
        .await
        .unwrap();
    {
        use futures::{SinkExt, StreamExt};
        use tokio_tungstenite::tungstenite::Message;
        ws.send(Message::text("hi")).await.unwrap();
        let reply = tokio::time::timeout(std::time::Duration::from_secs(10), ws.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(reply.into_text().unwrap().as_str(), "echo:hi");
    }

    // Logs: both streams, labelled, bounded by limit_bytes.
    let (st, logs) = json_of(s.get(&format!("{base}/logs")).send().await.unwrap()).await;
    assert_eq!(st, 200);
    let text = logs["logs"].as_str().unwrap();
    assert!(text.contains("[stdout] backend starting on"), "{text}");
    assert!(
        text.contains("[stderr] home is")
            && text.contains("canvas-extensions/backends/data/demo-app/home"),
        "{text}"
    );
    let (_, short) = json_of(
        s.get(&format!("{base}/logs?limit_bytes=5"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (short["logs"].as_str().unwrap().len(), &short["truncated"]),
        (5, &json!(true))
    );
    let (st, _) = json_of(
        s.get(&format!("{base}/logs?limit_bytes=0"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 422);

    // Stop kills the process group and revokes the sessions.
    let (st, stopped) = json_of(s.post(&format!("{base}/stop")).send().await.unwrap()).await;
    assert_eq!(
        (st, &stopped["state"], &stopped["pid"]),
        (200, &json!("stopped"), &Value::Null)
    );
    wait_gone(pid).await;
    {
        use futures::StreamExt;
        let end = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            loop {
                match ws.next().await {
                    Some(Ok(m)) if !m.is_close() => continue,
                    _ => break,
                }
            }
        })
        .await;
        assert!(end.is_ok(), "the bridged socket closes with its session");
    }
    let r = ingress(&s, reqwest::Method::GET, echo)
        .header("Cookie", &token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    let data = s
        .dir
        .path()
        .join("oh/canvas-extensions/backends/data/demo-app");
    assert!(data.is_dir());
    let (st, _) = json_of(s.delete(&format!("{base}/data")).send().await.unwrap()).await;
    assert_eq!(st, 200);
    assert!(!data.exists());

    let (st, gone) = json_of(
        s.delete("/api/canvas-extensions/installed/demo-app")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (st, gone),
        (
            200,
            json!({"message": "Canvas extension 'demo-app' uninstalled"})
        )
    );
    let (st, _) = json_of(
        s.get("/api/canvas-extensions/installed/demo-app")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404);
    let (_, status) = json_of(s.get(base).send().await.unwrap()).await;
    assert_eq!(status["state"], "missing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_manifests_and_sources_get_the_reference_answers() {
    let s = server().await;
    let src = tempfile::tempdir().unwrap();
    let (st, e) = install(&s, json!({"source": ""})).await;
    assert_eq!(
        (st, &e["detail"][0]["loc"]),
        (422, &json!(["body", "source"]))
    );
    let missing = src.path().join("nothing-here");
    let (st, e) = install(&s, json!({"source": missing})).await;
    assert_eq!(st, 400, "{e}");
    assert!(
        e["detail"]
            .as_str()
            .unwrap()
            .starts_with("Could not read canvas extension source: "),
        "{e}"
    );

    let empty = src.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let (st, e) = install(&s, json!({"source": empty})).await;
    assert_eq!(st, 422);
    assert!(
        e["detail"]
            .as_str()
            .unwrap()
            .starts_with("No canvas-extension.json found at the resolved location."),
        "{e}"
    );

    let invalid = "Invalid canvas extension. Ensure the manifest is well-formed.";
    let write = |name: &str, manifest: Value| -> PathBuf {
        let d = src.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("index.js"), "x").unwrap();
        std::fs::write(d.join("canvas-extension.json"), manifest.to_string()).unwrap();
        d
    };
    let good = json!({"schema_version": 1, "name": "ok-app", "display_name": "OK",
                      "version": "1", "entrypoint": "index.js"});
    let mut cases = Vec::new();
    let mut bad_name = good.clone();
    bad_name["name"] = json!("Not Kebab");
    cases.push(("bad-name", bad_name));
    let mut traversal = good.clone();
    traversal["entrypoint"] = json!("../secret.js");
    cases.push(("traversal", traversal));
    let mut missing_entry = good.clone();
    missing_entry["entrypoint"] = json!("dist/absent.js");
    cases.push(("missing-entry", missing_entry));
    let mut version = good.clone();
    version["schema_version"] = json!(2);
    cases.push(("version", version));
    let mut backend = good.clone();
    backend["backend"] = json!({"schema_version": 1, "artifacts": {"linux-amd64": {"path": "b.tar.gz", "sha256": "0".repeat(64)}}, "argv": ["/bin/sh"]});
    cases.push(("backend", backend));
    for (dir, manifest) in cases {
        let (st, e) = install(&s, json!({"source": write(dir, manifest)})).await;
        assert_eq!((st, e["detail"].as_str()), (422, Some(invalid)), "{dir}");
    }
    // An entrypoint symlinked out of the package.
    let outside = src.path().join("outside.js");
    std::fs::write(&outside, "secret").unwrap();
    let mut linked = good.clone();
    linked["entrypoint"] = json!("link.js");
    let d = write("linked", linked);
    std::os::unix::fs::symlink(&outside, d.join("link.js")).unwrap();
    let (st, e) = install(&s, json!({"source": d})).await;
    assert_eq!((st, e["detail"].as_str()), (422, Some(invalid)));
    // Nothing got installed, and a valid one still installs.
    let (_, list) = json_of(
        s.get("/api/canvas-extensions/installed")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(list["canvas_extensions"], json!([]));
    let (st, ok) = install(&s, json!({"source": write("ok-app", good)})).await;
    assert_eq!(
        (st, &ok["manifest"]["contributes"]),
        (200, &json!({"pages": []}))
    );
    assert!(ok["manifest"].get("backend").is_none());
    let (_, status) = json_of(
        s.get("/api/canvas-extensions/installed/ok-app/backend")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (&status["state"], &status["detail"]),
        (
            &json!("unsupported"),
            &json!("Canvas App does not declare a backend")
        )
    );
    let (st, _) = json_of(
        s.get("/api/canvas-extensions/installed/ok-app/icon")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_shutdown_stops_running_backends() {
    let s = server().await;
    let src: TempDir = tempfile::tempdir().unwrap();
    let root = bundle(src.path(), "shut-app");
    let (st, _) = install(&s, json!({"source": root})).await;
    assert_eq!(st, 200);
    let base = "/api/canvas-extensions/installed/shut-app/backend";
    let (_, status) = json_of(s.get(base).send().await.unwrap()).await;
    let revision = status["revision"].clone();
    let (st, _) = json_of(
        s.post(&format!("{base}/prepare"))
            .json(&json!({"revision": revision}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 200);
    let (_, ready) = json_of(
        s.post(&format!("{base}/start"))
            .json(&json!({"revision": revision}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(ready["state"], "ready", "{ready}");
    let pid = ready["pid"].as_u64().unwrap();
    // A forced install while a backend runs is refused.
    let (st, e) = install(&s, json!({"source": root, "force": true})).await;
    assert_eq!(
        (st, &e["detail"]),
        (
            409,
            &json!("Stop running Canvas App backends before a forced install")
        )
    );
    s.handle.shutdown().await.unwrap();
    wait_gone(pid).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_lists_the_reference_operations() {
    let s = server().await;
    let doc: Value = s
        .client
        .get(s.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ops = [
        (
            "/api/canvas-extensions/install",
            "post",
            "install_canvas_extension_endpoint_api_canvas_extensions_install_post",
        ),
        (
            "/api/canvas-extensions/installed",
            "get",
            "list_installed_canvas_extensions_endpoint_api_canvas_extensions_installed_get",
        ),
        (
            "/api/canvas-extensions/installed/{extension_name}",
            "get",
            "get_installed_canvas_extension_endpoint_api_canvas_extensions_installed__extension_name__get",
        ),
        (
            "/api/canvas-extensions/installed/{extension_name}",
            "patch",
            "set_canvas_extension_enabled_endpoint_api_canvas_extensions_installed__extension_name__patch",
        ),
        (
            "/api/canvas-extensions/installed/{extension_name}",
            "delete",
            "uninstall_canvas_extension_endpoint_api_canvas_extensions_installed__extension_name__delete",
        ),
        (
            "/api/canvas-extensions/installed/{extension_name}/backend",
            "get",
            "get_canvas_extension_backend_status_endpoint_api_canvas_extensions_installed__extension_name__backend_get",
        ),
        (
            "/api/canvas-extensions/installed/{extension_name}/backend/prepare",
            "post",
            "prepare_canvas_extension_backend_endpoint_api_canvas_extensions_installed__extension_name__backend_prepare_post",
        ),
        (
            "/api/canvas-extensions/installed/{extension_name}/backend/start",
            "post",
            "start_canvas_extension_backend_endpoint_api_canvas_extensions_installed__extension_name__backend_start_post",
        ),
        (
            "/api/canvas-extensions/installed/{extension_name}/backend/stop",
            "post",
            "stop_canvas_extension_backend_endpoint_api_canvas_extensions_installed__extension_name__backend_stop_post",
        ),
        (
            "/api/canvas-extensions/installed/{extension_name}/backend/logs",
            "get",
            "get_canvas_extension_backend_logs_endpoint_api_canvas_extensions_installed__extension_name__backend_logs_get",
        ),
        (
            "/api/canvas-extensions/installed/{extension_name}/backend/data",
            "delete",
            "delete_canvas_extension_backend_data_endpoint_api_canvas_extensions_installed__extension_name__backend_data_delete",
        ),
        (
            "/api/canvas-extensions/installed/{extension_name}/bundle",
            "get",
            "get_canvas_extension_bundle_endpoint_api_canvas_extensions_installed__extension_name__bundle_get",
        ),
        (
            "/api/canvas-extensions/installed/{extension_name}/icon",
            "get",
            "get_canvas_extension_icon_endpoint_api_canvas_extensions_installed__extension_name__icon_get",
        ),
        (
            "/app-backends/{extension_name}/session",
            "post",
            "create_app_backend_session_endpoint_app_backends__extension_name__session_post",
        ),
        (
            "/app-backends/{extension_name}/session",
            "delete",
            "delete_app_backend_session_endpoint_app_backends__extension_name__session_delete",
        ),
    ];
    for (path, method, id) in ops {
        let op = &doc["paths"][path][method];
        assert_eq!(op["operationId"], id, "{method} {path}");
        if path.contains("{extension_name}") {
            let params = op["parameters"].as_array().unwrap();
            assert!(
                params
                    .iter()
                    .any(|p| p["name"] == "extension_name" && p["in"] == "path"),
                "{path}"
            );
        }
    }
    let logs = &doc["paths"]["/api/canvas-extensions/installed/{extension_name}/backend/logs"]["get"]
        ["parameters"];
    assert!(
        logs.as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "limit_bytes" && p["in"] == "query")
    );
}
