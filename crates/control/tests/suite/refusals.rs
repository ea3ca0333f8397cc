//! Every refusal of the API, triggered over HTTP: 400, 401, 403
//! `permission_required` (one check per route without its grant) and
//! `task_owner_required`, 404 (another tenant's key never sees data), 409
//! `sandbox_agent_session_changed`/`_busy`/`_task_ended`, 429
//! `sandbox_model_limit`, 503 `sandbox_agent_unavailable` with task
//! controls off (reads and saved output stay available) — on SQLite and
//! on PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Answer, Api, Control, Followed, Options, Tenant, database, follow_until, mock_llm};
use openhands_testkit::{Script, Turn};
use serde_json::{Value, json};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

fn script() -> Script {
    Script::from_turns([Turn::tool_call("finish", json!({"message": "done"}))])
        .with_script(
            "slow",
            vec![
                Turn::tool_call("terminal", json!({"command": "echo late"})).with_delay_ms(60_000),
            ],
        )
        .with_toolless_reply(Turn::text("title"))
}

fn expect(a: &Answer, status: u16, code: &str, what: &str) {
    assert_eq!(a.status, status, "{what}: {}", a.text);
    assert_eq!(a.code(), code, "{what}: {}", a.text);
    assert!(
        a.json["error"]["message"].is_string(),
        "{what}: error body {}",
        a.text
    );
}

fn with_key(t: &Tenant, key: &str) -> Tenant {
    Tenant {
        key: key.to_string(),
        ..t.clone()
    }
}

async fn call(api: &Api, method: &str, path: &str, key: &str, body: Option<Value>) -> Answer {
    api.call(method, path, Some(key), body).await
}

async fn refusals(postgres: bool) {
    let Some(db) = database(postgres).await else {
        return;
    };
    let llm = mock_llm(script()).await;
    let mut c = Control::start(&db, &llm.base_url(), Options::default());
    let api = Api::new(&c.url);
    let full = "sandboxes:write,ai_chat:use";
    let t = common::tenant(&c, "acme", full, full);
    let base = format!("/v1/customer/tenants/{}/sandboxes", t.id);

    // --- 401 ---
    let a = api.call("GET", &base, None, None).await;
    expect(&a, 401, "unauthenticated", "no Authorization header");
    let a = api
        .call("GET", &base, Some("ohk_not-a-real-key"), None)
        .await;
    expect(&a, 401, "unauthenticated", "unknown key");
    let revoked = c.admin(&[
        "key", "create", "--tenant", "acme", "--user", "alice", "--grants", full,
    ]);
    assert_eq!(call(&api, "GET", &base, &revoked, None).await.status, 200);
    c.admin(&["key", "revoke", &revoked]);
    expect(
        &call(&api, "GET", &base, &revoked, None).await,
        401,
        "unauthenticated",
        "revoked key",
    );
    let expired = c.admin(&[
        "token",
        "create",
        "--tenant",
        "acme",
        "--user",
        "alice",
        "--ttl-hours",
        "0.0000001",
    ]);
    expect(
        &call(&api, "GET", &base, &expired, None).await,
        401,
        "unauthenticated",
        "expired token",
    );

    // --- a sandbox and a running task to refuse things on ---
    let sb = api.create_sandbox(&t, json!({})).await;
    assert_eq!(sb.status, 201, "{}", sb.text);
    let sb = sb.json["id"].as_str().unwrap().to_string();
    let path = Api::sandbox_path(&t, &sb);
    let started = api.start_task(&t, &sb, "[[mock:script:slow]] wait").await;
    assert_eq!(started.status, 202, "{}", started.text);
    let task = started.json["id"].as_str().unwrap().to_string();
    let mut f = Followed::default();
    follow_until(&api, &t, &sb, &task, &mut f, WAIT, |f| {
        f.statuses().iter().any(|s| s == "running")
    })
    .await;

    // --- 404: another tenant's key never sees this tenant's data ---
    let other = common::tenant(&c, "globex", full, "all:all");
    for (method, p) in [
        ("GET", base.clone()),
        ("POST", base.clone()),
        ("GET", path.clone()),
        ("DELETE", path.clone()),
        ("GET", format!("{path}/agent")),
        ("POST", format!("{path}/agent/tasks")),
        ("DELETE", format!("{path}/agent/tasks?task_id={task}")),
        ("POST", format!("{path}/agent/tasks/steer")),
        ("POST", format!("{path}/agent/tasks/pause")),
        ("POST", format!("{path}/agent/tasks/resume")),
        ("GET", format!("{path}/agent/tasks/output?task_id={task}")),
    ] {
        let a = call(
            &api,
            method,
            &p,
            &other.key,
            Some(json!({"task_id": task, "prompt": "x"})),
        )
        .await;
        expect(
            &a,
            404,
            "tenant_not_found",
            &format!("{method} {p} with another tenant's key"),
        );
        assert!(
            !a.text.contains(&sb) && !a.text.contains(&task),
            "no data leaks: {}",
            a.text
        );
    }
    // ... nor through its own tenant's path.
    let theirs = Api::sandbox_path(&other, &sb);
    let a = call(&api, "GET", &theirs, &other.key, None).await;
    expect(
        &a,
        404,
        "sandbox_not_found",
        "this tenant's sandbox under another tenant",
    );
    let a = call(
        &api,
        "GET",
        &format!("{theirs}/agent/tasks/output?task_id={task}"),
        &other.key,
        None,
    )
    .await;
    expect(
        &a,
        404,
        "sandbox_not_found",
        "output of another tenant's sandbox",
    );
    let listed = call(
        &api,
        "GET",
        &format!("/v1/customer/tenants/{}/sandboxes", other.id),
        &other.key,
        None,
    )
    .await;
    assert_eq!(listed.json["sandboxes"], json!([]));
    let a = call(
        &api,
        "GET",
        &format!("/v1/customer/tenants/{}/sandboxes", uuid::Uuid::new_v4()),
        &t.key,
        None,
    )
    .await;
    expect(&a, 404, "tenant_not_found", "unknown tenant");
    for id in [uuid::Uuid::new_v4().to_string(), "not-a-uuid".to_string()] {
        let a = call(&api, "GET", &format!("{base}/{id}"), &t.key, None).await;
        expect(&a, 404, "sandbox_not_found", "unknown sandbox");
    }
    let a = call(&api, "GET", "/v1/nothing", &t.key, None).await;
    expect(&a, 404, "not_found", "unknown route");
    let a = call(&api, "PUT", &path, &t.key, None).await;
    expect(&a, 405, "method_not_allowed", "wrong method");

    // --- 403 permission_required: each route without its grant ---
    c.admin(&[
        "user",
        "create",
        "--tenant",
        "acme",
        "reader",
        "--permissions",
        "all:all",
    ]);
    let mk = |grants: &str| {
        c.admin(&[
            "key", "create", "--tenant", "acme", "--user", "reader", "--grants", grants,
        ])
    };
    let read_only = mk("sandboxes:read,ai_chat:use");
    let chat_only = mk("ai_chat:use");
    let write_only = mk("sandboxes:write");
    let tid = json!({"task_id": task});
    let steer = json!({"task_id": task, "prompt": "hi"});
    let cases: Vec<(&str, String, &str, Option<Value>, &str)> = vec![
        (
            "POST",
            base.clone(),
            &read_only,
            Some(json!({})),
            "sandboxes:write",
        ),
        ("GET", base.clone(), &chat_only, None, "sandboxes:read"),
        ("GET", path.clone(), &chat_only, None, "sandboxes:read"),
        ("DELETE", path.clone(), &read_only, None, "sandboxes:write"),
        (
            "GET",
            format!("{path}/agent"),
            &chat_only,
            None,
            "sandboxes:read",
        ),
        (
            "POST",
            format!("{path}/agent/tasks"),
            &write_only,
            Some(json!({"prompt": "x"})),
            "ai_chat:use",
        ),
        (
            "POST",
            format!("{path}/agent/tasks"),
            &read_only,
            Some(json!({"prompt": "x"})),
            "sandboxes:write",
        ),
        (
            "DELETE",
            format!("{path}/agent/tasks?task_id={task}"),
            &write_only,
            None,
            "ai_chat:use",
        ),
        (
            "DELETE",
            format!("{path}/agent/tasks?task_id={task}"),
            &read_only,
            None,
            "sandboxes:write",
        ),
        (
            "POST",
            format!("{path}/agent/tasks/steer"),
            &write_only,
            Some(steer.clone()),
            "ai_chat:use",
        ),
        (
            "POST",
            format!("{path}/agent/tasks/steer"),
            &read_only,
            Some(steer.clone()),
            "sandboxes:write",
        ),
        (
            "POST",
            format!("{path}/agent/tasks/pause"),
            &write_only,
            Some(tid.clone()),
            "ai_chat:use",
        ),
        (
            "POST",
            format!("{path}/agent/tasks/pause"),
            &read_only,
            Some(tid.clone()),
            "sandboxes:write",
        ),
        (
            "POST",
            format!("{path}/agent/tasks/resume"),
            &write_only,
            Some(tid.clone()),
            "ai_chat:use",
        ),
        (
            "POST",
            format!("{path}/agent/tasks/resume"),
            &read_only,
            Some(tid.clone()),
            "sandboxes:write",
        ),
        (
            "GET",
            format!("{path}/agent/tasks/output?task_id={task}"),
            &read_only,
            None,
            "sandboxes:write",
        ),
    ];
    for (method, p, key, body, grant) in cases {
        let a = call(&api, method, &p, key, body).await;
        expect(
            &a,
            403,
            "permission_required",
            &format!("{method} {p} without {grant}"),
        );
        assert!(a.json["error"]["message"].as_str().unwrap().contains(grant));
    }
    // A key acts within its creator's current permissions: all:all on the
    // key is no more than the user holds, and revoking the user's
    // permission revokes the key's.
    c.admin(&[
        "user",
        "create",
        "--tenant",
        "acme",
        "bob",
        "--permissions",
        "sandboxes:write",
    ]);
    let bob = with_key(
        &t,
        &c.admin(&[
            "key", "create", "--tenant", "acme", "--user", "bob", "--grants", "all:all",
        ]),
    );
    let bob_sb = api.create_sandbox(&bob, json!({})).await;
    assert_eq!(bob_sb.status, 201, "{}", bob_sb.text);
    let bob_sb = bob_sb.json["id"].as_str().unwrap().to_string();
    let a = api.start_task(&bob, &bob_sb, "x").await;
    expect(
        &a,
        403,
        "permission_required",
        "all:all key of a user without ai_chat:use",
    );
    c.admin(&[
        "user",
        "set-permissions",
        "--tenant",
        "acme",
        "bob",
        "--permissions",
        "sandboxes:write,ai_chat:use",
    ]);
    let a = api
        .start_task(&bob, &bob_sb, "[[mock:script:slow]] wait")
        .await;
    assert_eq!(
        a.status, 202,
        "granted to the user, the key may: {}",
        a.text
    );
    let bob_task = a.json["id"].as_str().unwrap().to_string();
    c.admin(&[
        "user",
        "set-permissions",
        "--tenant",
        "acme",
        "bob",
        "--permissions",
        "sandboxes:read",
    ]);
    let a = api
        .control(&bob, &bob_sb, "pause", json!({"task_id": bob_task}))
        .await;
    expect(
        &a,
        403,
        "permission_required",
        "after the user's permission was revoked",
    );
    let a = call(
        &api,
        "GET",
        &Api::sandbox_path(&bob, &bob_sb),
        &bob.key,
        None,
    )
    .await;
    assert_eq!(a.status, 200, "reads stay within the remaining permission");

    // --- 403 task_owner_required: another user of the tenant ---
    let admin_key = c.admin(&[
        "key", "create", "--tenant", "acme", "--user", "reader", "--grants", "all:all",
    ]);
    let admin = with_key(&t, &admin_key);
    let a = api.control(&admin, &sb, "steer", steer.clone()).await;
    expect(&a, 403, "task_owner_required", "steer by a non-owner");
    let a = call(
        &api,
        "DELETE",
        &format!("{path}/agent/tasks?task_id={task}"),
        &admin_key,
        None,
    )
    .await;
    expect(&a, 403, "task_owner_required", "cancel by a non-owner");
    let a = api.output(&admin, &sb, &task, 0).await;
    assert_eq!(a.status, 200, "output needs sandboxes:write, not ownership");

    // --- 400 ---
    let bad_bodies: Vec<(&str, Value, &str)> = vec![
        ("steer", json!({"task_id": task}), "missing prompt"),
        (
            "steer",
            json!({"task_id": task, "prompt": "   \n"}),
            "blank prompt",
        ),
        (
            "steer",
            json!({"task_id": task, "prompt": "é".repeat(4097)}),
            "prompt of 8194 UTF-8 bytes",
        ),
        (
            "steer",
            json!({"task_id": task, "prompt": 5}),
            "non-string prompt",
        ),
        (
            "steer",
            json!({"task_id": "nope", "prompt": "x"}),
            "task_id not a UUID",
        ),
        ("steer", json!({"prompt": "x"}), "missing task_id"),
        (
            "steer",
            json!({"task_id": task, "prompt": "x", "extra": 1}),
            "unknown field",
        ),
        (
            "pause",
            json!({"task_id": task, "prompt": "x"}),
            "pause with a prompt",
        ),
        (
            "resume",
            json!({"task_id": task, "prompt": "x"}),
            "resume with a prompt",
        ),
        ("pause", json!({}), "pause without task_id"),
        ("resume", json!([1]), "not an object"),
    ];
    for (kind, body, what) in bad_bodies {
        let a = api.control(&t, &sb, kind, body).await;
        expect(&a, 400, "invalid_request", what);
    }
    let raw = reqwest::Client::new()
        .post(format!("{}{path}/agent/tasks/steer", c.url))
        .bearer_auth(&t.key)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status().as_u16(), 400, "malformed JSON");
    for q in [
        format!("task_id={task}&after=-1"),
        format!("task_id={task}&after=abc"),
        "after=0".to_string(),
        "task_id=123".to_string(),
        format!("task_id={task}&x=1"),
    ] {
        let a = call(
            &api,
            "GET",
            &format!("{path}/agent/tasks/output?{q}"),
            &t.key,
            None,
        )
        .await;
        expect(&a, 400, "invalid_request", &format!("output query {q}"));
    }
    for q in ["", "task_id=abc"] {
        let a = call(
            &api,
            "DELETE",
            &format!("{path}/agent/tasks?{q}"),
            &t.key,
            None,
        )
        .await;
        expect(&a, 400, "invalid_request", &format!("cancel query {q:?}"));
    }
    let a = api.start_task(&t, &sb, "").await;
    expect(&a, 400, "invalid_request", "blank task prompt");
    let a = api.create_sandbox(&t, json!({"llm": {"model": ""}})).await;
    expect(&a, 400, "invalid_request", "llm without a model");
    let a = api.create_sandbox(&t, json!({"llm": "gpt"})).await;
    expect(&a, 400, "invalid_request", "llm not an object");
    let a = api.create_sandbox(&t, json!({"flavor": "big"})).await;
    expect(&a, 400, "invalid_request", "unknown sandbox field");
    // Exactly 8192 bytes is allowed (multi-byte characters count as bytes).
    let a = api
        .control(
            &t,
            &sb,
            "steer",
            json!({"task_id": task, "prompt": "é".repeat(4096)}),
        )
        .await;
    assert_eq!(a.status, 202, "a prompt of exactly 8192 bytes: {}", a.text);

    // --- 409 ---
    let stranger = uuid::Uuid::new_v4().to_string();
    for kind in ["steer", "pause", "resume"] {
        let body = if kind == "steer" {
            json!({"task_id": stranger, "prompt": "x"})
        } else {
            json!({"task_id": stranger})
        };
        let a = api.control(&t, &sb, kind, body).await;
        expect(
            &a,
            409,
            "sandbox_agent_session_changed",
            &format!("{kind} of a task that is not current"),
        );
    }
    let a = api.output(&t, &sb, &stranger, 0).await;
    expect(
        &a,
        409,
        "sandbox_agent_session_changed",
        "output of a task that is not current",
    );
    let a = call(
        &api,
        "DELETE",
        &format!("{path}/agent/tasks?task_id={stranger}"),
        &t.key,
        None,
    )
    .await;
    expect(
        &a,
        409,
        "sandbox_agent_session_changed",
        "cancel of a task that is not current",
    );
    let a = api.start_task(&t, &sb, "another").await;
    expect(
        &a,
        409,
        "sandbox_agent_busy",
        "a second task while one runs",
    );

    // --- 429: the tenant's running-task limit ---
    let limited = c.admin(&["tenant", "create", "small", "--max-running-tasks", "1"]);
    c.admin(&[
        "user",
        "create",
        "--tenant",
        "small",
        "sam",
        "--permissions",
        full,
    ]);
    let s = Tenant {
        id: limited,
        user: String::new(),
        key: c.admin(&[
            "key", "create", "--tenant", "small", "--user", "sam", "--grants", full,
        ]),
    };
    let s1 = api.create_sandbox(&s, json!({})).await.json["id"]
        .as_str()
        .unwrap()
        .to_string();
    let s2 = api.create_sandbox(&s, json!({})).await.json["id"]
        .as_str()
        .unwrap()
        .to_string();
    let first = api.start_task(&s, &s1, "[[mock:script:slow]] one").await;
    assert_eq!(first.status, 202, "{}", first.text);
    let a = api.start_task(&s, &s2, "[[mock:script:slow]] two").await;
    expect(
        &a,
        429,
        "sandbox_model_limit",
        "beyond the tenant's running-task limit",
    );
    let first_id = first.json["id"].as_str().unwrap();
    let a = call(
        &api,
        "DELETE",
        &format!(
            "{}/agent/tasks?task_id={first_id}",
            Api::sandbox_path(&s, &s1)
        ),
        &s.key,
        None,
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.text);
    let a = api.start_task(&s, &s2, "done quickly").await;
    assert_eq!(a.status, 202, "the slot is free again: {}", a.text);

    // --- 409 sandbox_agent_task_ended: controls on an ended task ---
    let a = call(
        &api,
        "DELETE",
        &format!("{path}/agent/tasks?task_id={task}"),
        &t.key,
        None,
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.text);
    let a = api.control(&t, &sb, "steer", steer.clone()).await;
    expect(&a, 409, "sandbox_agent_task_ended", "steer after the end");
    let a = api.control(&t, &sb, "resume", tid.clone()).await;
    expect(&a, 409, "sandbox_agent_task_ended", "resume after the end");
    // A finished task's output is complete.
    let mut done = Followed::default();
    follow_until(&api, &t, &sb, &task, &mut done, WAIT, |_| false).await;
    assert_eq!(done.exit.as_ref().unwrap()["exit_code"], 130);

    // --- 503 sandbox_agent_unavailable with task controls off ---
    c.stop();
    let off = Control::start(
        &db,
        &llm.base_url(),
        Options {
            env: vec![("OH_CONTROL_TASKS_ENABLED".into(), "0".into())],
            data_dir: Some(c.data_dir.clone()),
        },
    );
    let api = Api::new(&off.url);
    for kind in ["steer", "pause", "resume"] {
        let body = if kind == "steer" {
            steer.clone()
        } else {
            tid.clone()
        };
        let a = api.control(&t, &sb, kind, body).await;
        expect(
            &a,
            503,
            "sandbox_agent_unavailable",
            &format!("{kind} while the feature is off"),
        );
    }
    let a = api.start_task(&t, &sb, "x").await;
    expect(
        &a,
        503,
        "sandbox_agent_unavailable",
        "task start while the feature is off",
    );
    let agent = call(&api, "GET", &format!("{path}/agent"), &t.key, None).await;
    assert_eq!(agent.status, 200);
    assert_eq!(agent.json["tasks_enabled"], false);
    assert_eq!(agent.json["controls"], json!(["cancel"]));
    assert_eq!(agent.json["current_task"]["id"], task.as_str());
    // Saved output stays available.
    let mut saved = Followed::default();
    follow_until(&api, &t, &sb, &task, &mut saved, WAIT, |_| false).await;
    assert_eq!(saved.lines, done.lines);
    assert_eq!(call(&api, "GET", &base, &t.key, None).await.status, 200);
    llm.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_sqlite() {
    refusals(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_postgres() {
    refusals(true).await;
}
