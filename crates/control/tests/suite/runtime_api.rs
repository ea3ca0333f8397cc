//! The self-hosted OpenHands Runtime API (`/v1/runtime`) with the Rust
//! `APIRemoteWorkspace`: a runtime is one of the tenant's sandboxes
//! (shown by the spec-003 API), the same session id attaches to the same
//! runtime, pause/resume keep its files, stop makes its session 404, a
//! wrong key or a key without `sandboxes:write` is refused and starts
//! nothing. Local sandboxes always; docker sandboxes when a daemon answers
//! (else the docker test says so loudly and passes).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Api, Control, Db, Options, Tenant, mock_llm};
use openhands_testkit::{Script, Turn};
use openhands_workspace::{APIRemoteWorkspace, APIRemoteWorkspaceOptions, ImagePullPolicy};
use serde_json::{Value, json};
use std::time::Duration;

const IMAGE: &str = "openhands-rs/agent-server:runtime-api-test";

async fn runtime_call(
    c: &Control,
    method: &str,
    path: &str,
    key: &str,
    body: Option<Value>,
) -> (u16, Value) {
    openhands_control::install_tls_provider();
    let http = reqwest::Client::new();
    let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut req = http
        .request(m, format!("{}/v1/runtime{path}", c.url))
        .header("X-API-Key", key)
        .timeout(Duration::from_secs(120));
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

async fn sandboxes(c: &Control, t: &Tenant) -> Vec<Value> {
    let api = Api::new(&c.url);
    let a = api
        .call(
            "GET",
            &format!("/v1/customer/tenants/{}/sandboxes", t.id),
            Some(&t.key),
            None,
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    a.json["sandboxes"].as_array().unwrap().clone()
}

/// Drives one runtime through its life with `opts` (its session id set
/// by the caller): returns the working directory the agent saw.
async fn lifecycle(c: &Control, t: &Tenant, opts: APIRemoteWorkspaceOptions) -> String {
    let session = opts.session_id.clone();
    let ws = APIRemoteWorkspace::start(opts.clone())
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", c.log_text()));
    let out = ws
        .workspace()
        .execute_command("echo kept > kept.txt && pwd", None, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(out.exit_code, 0, "{out:?}");
    let pwd = out.stdout.trim().to_string();

    // The runtime is a sandbox of the tenant.
    let listed = sandboxes(c, t).await;
    let mine: Vec<&Value> = listed
        .iter()
        .filter(|s| s["runtime_session_id"] == session.as_str())
        .collect();
    assert_eq!(mine.len(), 1, "{listed:?}");
    assert_eq!(mine[0]["id"], ws.runtime_id());

    // The same session id attaches to the same runtime.
    let mut again_opts = opts.clone();
    again_opts.keep_alive = true;
    let again = APIRemoteWorkspace::start(again_opts.clone()).await.unwrap();
    assert_eq!(again.runtime_id(), ws.runtime_id());
    assert_eq!(again.host(), ws.host());
    again.close().await.unwrap();
    assert_eq!(sandboxes(c, t).await.len(), listed.len());

    // Pause freezes it, resume brings it back with its files.
    ws.pause().await.unwrap();
    let status = ws.status().await.unwrap();
    assert_eq!(status["status"], "paused");
    assert_eq!(status["pod_status"], "paused");
    let frozen = ws
        .workspace()
        .execute_command("true", None, Duration::from_secs(1));
    let frozen = tokio::time::timeout(Duration::from_secs(3), frozen).await;
    assert!(
        !matches!(frozen, Ok(Ok(ref r)) if r.exit_code == 0),
        "a paused runtime ran a command: {frozen:?}"
    );
    ws.resume().await.unwrap();
    let status = ws.status().await.unwrap();
    assert_eq!(
        (status["status"].as_str(), status["pod_status"].as_str()),
        (Some("running"), Some("ready"))
    );
    let kept = ws
        .workspace()
        .execute_command("cat kept.txt", None, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(kept.stdout.trim(), "kept");

    // Attaching to a paused runtime resumes it.
    ws.pause().await.unwrap();
    let third = APIRemoteWorkspace::start(again_opts).await.unwrap();
    assert_eq!(third.runtime_id(), ws.runtime_id());
    let kept = third
        .workspace()
        .execute_command("cat kept.txt", None, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(kept.stdout.trim(), "kept");
    third.close().await.unwrap();

    // Stop: the session is gone, and so is the sandbox.
    let runtime_id = ws.runtime_id().to_string();
    ws.close().await.unwrap();
    let (st, _) = runtime_call(c, "GET", &format!("/sessions/{session}"), &t.key, None).await;
    assert_eq!(st, 404);
    assert!(
        sandboxes(c, t)
            .await
            .iter()
            .all(|s| s["id"] != runtime_id.as_str())
    );
    let (st, _) = runtime_call(
        c,
        "POST",
        "/stop",
        &t.key,
        Some(json!({"runtime_id": runtime_id})),
    )
    .await;
    assert_eq!(st, 404);
    pwd
}

async fn refusals(c: &Control, t: &Tenant, reader: &str) {
    let body = json!({"session_id": "refused"});
    let (st, v) = runtime_call(c, "POST", "/start", "wrong-key", Some(body.clone())).await;
    assert_eq!(st, 401, "{v}");
    let (st, v) = runtime_call(c, "POST", "/start", reader, Some(body.clone())).await;
    assert_eq!(st, 403, "{v}");
    openhands_control::install_tls_provider();
    let http = reqwest::Client::new();
    let st = http
        .post(format!("{}/v1/runtime/start", c.url))
        .json(&body)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16();
    assert_eq!(st, 401);
    let (st, v) = runtime_call(c, "GET", "/sessions/refused", "wrong-key", None).await;
    assert_eq!(st, 401, "{v}");
    // Settings we cannot honour are refused, naming the field.
    let (st, v) = runtime_call(
        c,
        "POST",
        "/start",
        &t.key,
        Some(json!({"session_id": "refused", "resource_factor": 2})),
    )
    .await;
    assert_eq!(st, 400, "{v}");
    assert!(v.to_string().contains("resource_factor"), "{v}");
    let (st, v) = runtime_call(
        c,
        "POST",
        "/start",
        &t.key,
        Some(json!({"session_id": "refused", "command": "/bin/sh -c true"})),
    )
    .await;
    assert_eq!(st, 400, "{v}");
    let (st, _) = runtime_call(c, "GET", "/sessions/refused", &t.key, None).await;
    assert_eq!(st, 404);
    assert!(
        sandboxes(c, t).await.is_empty(),
        "a refused start started something"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_api_on_local_sandboxes() {
    let llm = mock_llm(Script::from_turns([Turn::text("unused")])).await;
    let c = Control::start(&Db::Sqlite, &llm.base_url(), Options::default());
    let full = "sandboxes:write,ai_chat:use";
    let t = common::tenant(&c, "acme", full, full);
    let reader = c.admin(&[
        "key",
        "create",
        "--tenant",
        &t.id,
        "--user",
        "alice",
        "--grants",
        "sandboxes:read",
    ]);
    refusals(&c, &t, &reader).await;

    // An image selects nothing on local sandboxes: refused, nothing started.
    let (st, v) = runtime_call(
        &c,
        "POST",
        "/start",
        &t.key,
        Some(json!({"session_id": "img", "image": "some/image:1"})),
    )
    .await;
    assert_eq!(st, 400, "{v}");
    assert!(v.to_string().contains("image"), "{v}");
    assert!(sandboxes(&c, &t).await.is_empty());

    let mut opts = APIRemoteWorkspaceOptions::new(format!("{}/v1/runtime/", c.url), &t.key)
        .session_id("local-session");
    opts.startup_wait_timeout = Duration::from_secs(60);
    let pwd = lifecycle(&c, &t, opts).await;
    assert!(pwd.ends_with("/workspace"), "{pwd}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_api_on_docker_sandboxes() {
    if !super::docker::docker_works() {
        eprintln!(
            "\n*** SKIPPED: no docker daemon answers (`docker info` failed).\n\
             *** scripts/test.sh installs docker.io and starts dockerd.\n"
        );
        return;
    }
    let llm = mock_llm(Script::from_turns([Turn::text("unused")])).await;
    let c = Control::start(
        &Db::Sqlite,
        &llm.base_url(),
        Options {
            env: vec![
                ("OH_CONTROL_SANDBOX".into(), "docker".into()),
                (
                    "OH_CONTROL_DOCKER_IMAGE".into(),
                    "openhands-rs/absent:none".into(),
                ),
            ],
            data_dir: None,
        },
    );
    let image = c.admin(&["image", "build", "--tag", IMAGE]);
    assert!(image.starts_with("sha256:"), "{image}");
    let full = "sandboxes:write,ai_chat:use";
    let t = common::tenant(&c, "acme", full, full);

    // A missing image that cannot be pulled, an unknown runtime class: clear errors.
    let (st, v) = runtime_call(
        &c,
        "POST",
        "/start",
        &t.key,
        Some(json!({"session_id": "nope", "image": "openhands-rs/absent:none", "image_pull_policy": "Never"})),
    )
    .await;
    assert!(st >= 400, "{v}");
    assert!(v.to_string().contains("not present"), "{v}");
    let (st, v) = runtime_call(
        &c,
        "POST",
        "/start",
        &t.key,
        Some(json!({"session_id": "nope2", "image": IMAGE, "runtime_class": "sysbox-runc"})),
    )
    .await;
    assert_eq!(st, 400, "{v}");
    assert!(v.to_string().contains("sysbox-runc"), "{v}");

    // The reference client's settings: its image (not the engine's
    // default), user 10001, the agent in /workspace.
    let mut opts = APIRemoteWorkspaceOptions::new(format!("{}/v1/runtime", c.url), &t.key)
        .session_id("docker-session")
        .server_image(IMAGE);
    opts.image_pull_policy = ImagePullPolicy::IfNotPresent;
    opts.run_as_user = Some(10001);
    opts.fs_group = Some(10001);
    opts.forward_env = vec!["PATH".into()];
    opts.startup_wait_timeout = Duration::from_secs(120);
    let ws = APIRemoteWorkspace::start(opts.clone())
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", c.log_text()));
    let who = ws
        .workspace()
        .execute_command("id -u; pwd", None, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(
        who.stdout.split_whitespace().collect::<Vec<_>>(),
        ["10001", "/workspace"],
        "{who:?}"
    );
    ws.close().await.unwrap();
    let pwd = lifecycle(&c, &t, opts.session_id("docker-session-2")).await;
    assert_eq!(pwd, "/workspace");
}
