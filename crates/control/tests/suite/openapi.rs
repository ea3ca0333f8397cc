//! The control plane's OpenAPI document (`/openapi.json`, `/docs`): it
//! names every route the API serves, and walking every operation of it
//! with another tenant's credential on one tenant's ids — in the owner's
//! path and in the caller's own — gets a refusal (401/403/404) that says
//! nothing of the owner's sandbox or task, never its data.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Api, Control, Db, Followed, Options, follow_until, mock_llm, tenant};
use openhands_testkit::{Script, Turn};
use serde_json::{Value, json};
use std::time::Duration;

/// The operations of the document: (method, path template, operation).
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if ["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                out.push((method.to_uppercase(), path.clone(), op.clone()));
            }
        }
    }
    out
}

/// A body the operation accepts when its caller may act: a prompt, the
/// task id, or nothing.
fn body_for(path: &str, task: &str) -> Option<Value> {
    if path.ends_with("/agent/tasks/steer") {
        Some(json!({"task_id": task, "prompt": "more"}))
    } else if path.ends_with("/agent/tasks/pause") || path.ends_with("/agent/tasks/resume") {
        Some(json!({"task_id": task}))
    } else if path.ends_with("/agent/tasks") {
        Some(json!({"prompt": "hello"}))
    } else {
        Some(json!({}))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_tenants_credential_sees_nothing_on_any_documented_route() {
    let script = Script::from_turns([Turn::text("unused")])
        .with_script(
            "slow",
            vec![
                Turn::tool_call("terminal", json!({"command": "echo late"})).with_delay_ms(60_000),
            ],
        )
        .with_toolless_reply(Turn::text("title"));
    let llm = mock_llm(script).await;
    let c = Control::start(&Db::Sqlite, &llm.base_url(), Options::default());
    let api = Api::new(&c.url);

    let doc = api.call("GET", "/openapi.json", None, None).await;
    assert_eq!(doc.status, 200, "{}", doc.text);
    let doc = doc.json;
    assert_eq!(
        doc["openapi"].as_str().map(|v| v.starts_with('3')),
        Some(true)
    );
    let docs = api.call("GET", "/docs/", None, None).await;
    assert_eq!(docs.status, 200);
    assert!(
        docs.content_type.starts_with("text/html"),
        "{}",
        docs.content_type
    );
    let ops = operations(&doc);
    let paths: Vec<String> = ops.iter().map(|(m, p, _)| format!("{m} {p}")).collect();
    for route in [
        "GET /health",
        "POST /v1/customer/tenants/{tenant_id}/sandboxes",
        "GET /v1/customer/tenants/{tenant_id}/sandboxes",
        "GET /v1/customer/tenants/{tenant_id}/sandboxes/{sandbox_id}",
        "DELETE /v1/customer/tenants/{tenant_id}/sandboxes/{sandbox_id}",
        "GET /v1/customer/tenants/{tenant_id}/sandboxes/{sandbox_id}/agent",
        "POST /v1/customer/tenants/{tenant_id}/sandboxes/{sandbox_id}/agent/tasks",
        "DELETE /v1/customer/tenants/{tenant_id}/sandboxes/{sandbox_id}/agent/tasks",
        "POST /v1/customer/tenants/{tenant_id}/sandboxes/{sandbox_id}/agent/tasks/steer",
        "POST /v1/customer/tenants/{tenant_id}/sandboxes/{sandbox_id}/agent/tasks/pause",
        "POST /v1/customer/tenants/{tenant_id}/sandboxes/{sandbox_id}/agent/tasks/resume",
        "GET /v1/customer/tenants/{tenant_id}/sandboxes/{sandbox_id}/agent/tasks/output",
        "POST /v1/customer/tenants/{tenant_id}/sandboxes/{sandbox_id}/ssh/tickets",
    ] {
        assert!(
            paths.contains(&route.to_string()),
            "{route} is documented: {paths:?}"
        );
    }
    // Every documented operation is served (none answers the 404 of an
    // unknown route or a 405).
    for (method, path, _) in &ops {
        let concrete = path
            .replace("{tenant_id}", "t")
            .replace("{sandbox_id}", "00000000-0000-0000-0000-000000000000");
        let a = api.call(method, &concrete, None, None).await;
        assert!(
            a.json["error"]["code"] != "not_found" && a.status != 405,
            "{method} {path} is served: {} {}",
            a.status,
            a.text
        );
    }

    let full = "sandboxes:write,sandboxes:read,ai_chat:use";
    let a = tenant(&c, "acme", full, full);
    let b = tenant(&c, "globex", full, full);
    let sb = api
        .create_sandbox(&a, json!({"name": "owned-by-acme"}))
        .await;
    assert_eq!(sb.status, 201, "{}", sb.text);
    let sandbox = sb.json["id"].as_str().unwrap().to_string();
    let started = api
        .start_task(&a, &sandbox, "[[mock:script:slow]] wait")
        .await;
    assert_eq!(started.status, 202, "{}", started.text);
    let task = started.json["id"].as_str().unwrap().to_string();
    let mut f = Followed::default();
    follow_until(
        &api,
        &a,
        &sandbox,
        &task,
        &mut f,
        Duration::from_secs(60),
        |g| g.statuses().iter().any(|s| s == "running"),
    )
    .await;

    // B's credential on A's ids, in A's path and in B's own.
    let secrets = [sandbox.as_str(), task.as_str(), "owned-by-acme"];
    for (method, path, _) in &ops {
        if path == "/health" {
            continue;
        }
        for owner in [&a.id, &b.id] {
            let mut concrete = path
                .replace("{tenant_id}", owner)
                .replace("{sandbox_id}", &sandbox);
            if path.ends_with("/agent/tasks/output")
                || (method == "DELETE" && path.ends_with("/agent/tasks"))
            {
                concrete.push_str(&format!("?task_id={task}"));
            }
            let body = if method == "GET" || method == "DELETE" {
                None
            } else {
                body_for(path, &task)
            };
            let got = api.call(method, &concrete, Some(&b.key), body).await;
            let is_own_list = owner == &b.id
                && method == "GET"
                && path == "/v1/customer/tenants/{tenant_id}/sandboxes";
            let is_own_create = owner == &b.id
                && method == "POST"
                && path == "/v1/customer/tenants/{tenant_id}/sandboxes";
            if is_own_list || is_own_create {
                // B's own collection: B's data only.
                assert!(got.status < 300, "{method} {concrete}: {}", got.text);
            } else {
                assert!(
                    [401, 403, 404].contains(&got.status),
                    "{method} {concrete} with another tenant's key: {} {}",
                    got.status,
                    got.text
                );
            }
            for s in secrets {
                assert!(
                    !got.text.contains(s),
                    "{method} {concrete} told another tenant {s}: {}",
                    got.text
                );
            }
        }
    }
    // The largest `after` the document allows reads nothing, and nothing
    // overflows (a fuzzing find).
    let far = api.output(&a, &sandbox, &task, i64::MAX).await;
    assert_eq!(far.status, 200, "{}", far.text);
    assert!(!c.log_text().contains("panicked"), "{}", c.log_text());
    // A's task and sandbox are untouched.
    let view = api
        .call("GET", &Api::sandbox_path(&a, &sandbox), Some(&a.key), None)
        .await;
    assert_eq!(view.status, 200, "{}", view.text);
    assert_eq!(view.json["status"], "ready", "{}", view.text);
    assert_eq!(view.json["current_task"]["id"], task.as_str());
    assert_eq!(
        view.json["current_task"]["status"], "running",
        "{}",
        view.text
    );
    llm.shutdown().await;
}
