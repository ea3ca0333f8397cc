//! Event routes (search filters and paging, count, get, batch get, send)
//! and bad input on every conversation route: always a 4xx in the
//! reference's shape, never a 500, never a changed conversation.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use serde_json::{Value, json};
use std::time::Duration;
use uuid::Uuid;

/// A log grown past the length from which a resumed log leaves its heads
/// on disk (1,024), while no server ran, resumes whole and pages, filters
/// and counts correctly from any event, in both orders: on the first start
/// (its files parsed, the head index written) and the next (the index read).
#[tokio::test]
async fn a_long_log_resumes_and_pages_from_any_event() {
    const N: usize = 1100;
    let mut env = Env::start(two_step).await;
    let id = finished_conversation(&env).await;
    let before = env.events(&id).await;
    if let Some(h) = env.server.take() {
        h.shutdown().await.unwrap();
    }
    let dir = env
        .conversations_dir()
        .join(id.replace('-', ""))
        .join("events");
    let user = before
        .iter()
        .find(|e| e["kind"] == "MessageEvent" && e["source"] == "user")
        .unwrap();
    let mut added = Vec::new();
    for index in before.len()..N {
        let mut event = user.clone();
        let new_id = Uuid::new_v4().to_string();
        event["id"] = json!(new_id);
        std::fs::write(
            dir.join(format!("event-{index:05}-{new_id}.json")),
            event.to_string(),
        )
        .unwrap();
        added.push(new_id);
    }
    let count_of =
        |key: &str, value: &str| before.iter().filter(|e| e[key] == value).count() + added.len();
    let (messages, from_user) = (count_of("kind", "MessageEvent"), count_of("source", "user"));
    // Since the last stored event: the added copies carry the user
    // message's older time, so their runs of heads need not be read.
    let time = |e: &Value| e["timestamp"].as_str().unwrap().to_string();
    let last = before.last().map(time).unwrap();
    let late = before.iter().filter(|e| time(e) >= last).count()
        + if time(user) >= last { added.len() } else { 0 };
    let since = format!("timestamp__gte={last}");
    // Filters whose counts the runs' summaries give without reading them.
    let user_messages = before
        .iter()
        .filter(|e| e["kind"] == "MessageEvent" && e["source"] == "user")
        .count()
        + added.len();
    let agent_messages = before
        .iter()
        .filter(|e| e["kind"] == "MessageEvent" && e["source"] == "agent")
        .count();
    let first = before.iter().map(time).min().unwrap();
    let from_user_since_first = format!("source=user&timestamp__gte={first}");
    let want: Vec<Value> = before
        .iter()
        .map(|e| e["id"].clone())
        .chain(added.iter().map(|i| json!(i)))
        .collect();
    for start in ["files parsed", "index read"] {
        env.restart().await;
        let all: Vec<Value> = env
            .events(&id)
            .await
            .iter()
            .map(|e| e["id"].clone())
            .collect();
        assert_eq!(all, want, "{start}");
        check_long_pages(&env, &id, &all).await;
        let base = format!("/api/conversations/{id}/events");
        for (query, expect) in [
            ("kind=MessageEvent", messages),
            ("source=user", from_user),
            ("kind=ActionEvent", 2),
            (since.as_str(), late),
            ("kind=MessageEvent&source=user", user_messages),
            ("kind=MessageEvent&source=agent", agent_messages),
            (from_user_since_first.as_str(), from_user),
        ] {
            let (_, n) = env.get(&format!("{base}/count?{query}")).await;
            assert_eq!(n, json!(expect), "{start}: {query}");
        }
        // The newest messages first, across the stored and the added.
        let (_, newest) = env
            .get(&format!(
                "{base}/search?kind=MessageEvent&sort_order=TIMESTAMP_DESC&limit=3"
            ))
            .await;
        let ids = ids_of(&newest);
        assert_eq!(ids, all[N - 3..].iter().rev().cloned().collect::<Vec<_>>());
        // A socket resending since that time replays the same events.
        let mut ws = env
            .ws(&id, &format!("?resend_mode=since&after_timestamp={last}"))
            .await;
        assert_eq!(ws.frame().await["key"], "full_state");
        let mut replayed = 0;
        while let WsItem::Frame(_) = ws.next(Duration::from_millis(300)).await {
            replayed += 1;
        }
        assert_eq!(replayed, late, "{start}: resent since {last}");
        let eid = all[N - 50].as_str().unwrap();
        let (s, one) = env.get(&format!("{base}/{eid}")).await;
        assert_eq!((s, &one["id"]), (200, &all[N - 50]), "{start}");
    }
    env.stop().await;
}

/// The ids of a search page's items.
fn ids_of(page: &Value) -> Vec<Value> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].clone())
        .collect()
}

/// Pages of 100 from events spread over `all`, ascending and descending.
async fn check_long_pages(env: &Env, id: &str, all: &[Value]) {
    let n = all.len();
    let base = format!("/api/conversations/{id}/events/search");
    for at in [0, 1, 499, n - 2, n - 1] {
        let from = all[at].as_str().unwrap();
        let (_, up) = env.get(&format!("{base}?limit=100&page_id={from}")).await;
        let ids = ids_of(&up);
        assert_eq!(ids, all[at..(at + 100).min(n)], "ascending from {at}");
        assert_eq!(
            up["next_page_id"],
            all.get(at + 100).cloned().unwrap_or(Value::Null)
        );
        let (_, down) = env
            .get(&format!(
                "{base}?limit=100&page_id={from}&sort_order=TIMESTAMP_DESC"
            ))
            .await;
        let ids = ids_of(&down);
        let want: Vec<Value> = all[at.saturating_sub(99)..=at]
            .iter()
            .rev()
            .cloned()
            .collect();
        assert_eq!(ids, want, "descending from {at}");
    }
}

async fn finished_conversation(env: &Env) -> String {
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap().to_string();
    env.send(&id, "Please create x.txt, then finish.", true)
        .await;
    env.wait_finished_and_settled(&id).await;
    id
}

/// The filters, orders, counts and gets answer the same on a conversation
/// held by the server and on one resumed after a restart, whose events are
/// read from their files (a body search then loads the log).
#[tokio::test]
async fn search_filters_and_pages_events() {
    let mut env = Env::start(two_step).await;
    let id = finished_conversation(&env).await;
    let all = env.events(&id).await;
    assert!(all.len() >= 10, "{}", all.len());
    check_search(&env, &id, &all).await;
    env.restart().await;
    check_search(&env, &id, &all).await;
    env.stop().await;
}

async fn check_search(env: &Env, id: &str, all: &[Value]) {
    let base = format!("/api/conversations/{id}/events");

    // Paging: 3 at a time, next_page_id = first id of the next page.
    let (s, p1) = env.get(&format!("{base}/search?limit=3")).await;
    assert_eq!(s, 200);
    assert_eq!(p1["items"].as_array().unwrap().len(), 3);
    assert_eq!(p1["next_page_id"], all[3]["id"]);
    let (_, p2) = env
        .get(&format!(
            "{base}/search?limit=3&page_id={}",
            p1["next_page_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(p2["items"][0], all[3]);

    // Descending.
    let (_, desc) = env
        .get(&format!("{base}/search?sort_order=TIMESTAMP_DESC&limit=2"))
        .await;
    assert_eq!(desc["items"][0], all[all.len() - 1]);
    assert_eq!(desc["next_page_id"], all[all.len() - 3]["id"]);

    // kind / source / body filters and their counts.
    let (_, actions) = env.get(&format!("{base}/search?kind=ActionEvent")).await;
    assert_eq!(actions["items"].as_array().unwrap().len(), 2);
    let (_, n) = env.get(&format!("{base}/count?kind=ActionEvent")).await;
    assert_eq!(n, json!(2));
    let (_, n) = env.get(&format!("{base}/count?source=user")).await;
    assert_eq!(n, json!(1));
    let (_, n) = env.get(&format!("{base}/count")).await;
    assert_eq!(n, json!(all.len()));

    // Timestamp window.
    let t = all[4]["timestamp"].as_str().unwrap();
    let (s, later) = env.get(&format!("{base}/count?timestamp__gte={t}")).await;
    assert_eq!(s, 200, "{later}");
    let expect = all
        .iter()
        .filter(|e| e["timestamp"].as_str().unwrap() >= t)
        .count();
    assert_eq!(later, json!(expect));
    let (_, earlier) = env.get(&format!("{base}/count?timestamp__lt={t}")).await;
    assert_eq!(earlier.as_u64().unwrap() as usize + expect, all.len());

    // Single and batch get.
    let eid = all[2]["id"].as_str().unwrap();
    let (s, one) = env.get(&format!("{base}/{eid}")).await;
    assert_eq!((s, &one), (200, &all[2]));
    let (s, body) = env.get(&format!("{base}/nope")).await;
    assert_eq!((s, body), (404, json!({"detail": "Not Found"})));
    let (s, batch) = env.call("GET", &base, Some(json!([eid, "missing"]))).await;
    assert_eq!(s, 200);
    assert_eq!(batch, json!([all[2].clone(), null]));

    // Last: a body search loads a resumed log.
    let (_, found) = env.get(&format!("{base}/search?body=CREATE%20X.TXT")).await;
    assert_eq!(found["items"].as_array().unwrap().len(), 1);
    assert_eq!(found["items"][0]["kind"], "MessageEvent");
    let (_, n) = env.get(&format!("{base}/count?body=create")).await;
    assert_eq!(n, json!(1));
}

#[tokio::test]
async fn unknown_conversations_are_404_in_the_reference_shape() {
    let env = Env::start(two_step).await;
    let u = Uuid::new_v4();
    let not_found = json!({"detail": format!("Conversation not found: {u}")});
    for path in [
        format!("/api/conversations/{u}/events/search"),
        format!("/api/conversations/{u}/events/count"),
        format!("/api/conversations/{u}/events/some-id"),
    ] {
        let (s, body) = env.get(&path).await;
        assert_eq!((s, &body), (404, &not_found), "{path}");
    }
    // 404 comes before body validation on the events routes.
    let (s, body) = env
        .post(
            &format!("/api/conversations/{u}/events"),
            json!({"role": 5}),
        )
        .await;
    assert_eq!((s, body), (404, not_found.clone()));
    let (s, body) = env
        .post(
            &format!("/api/conversations/{u}/events/respond_to_confirmation"),
            json!({}),
        )
        .await;
    assert_eq!((s, body), (404, not_found));
    let bare = json!({"detail": "Not Found"});
    for (m, path) in [
        ("GET", format!("/api/conversations/{u}")),
        ("DELETE", format!("/api/conversations/{u}")),
        ("POST", format!("/api/conversations/{u}/run")),
        ("POST", format!("/api/conversations/{u}/pause")),
        ("POST", format!("/api/conversations/{u}/interrupt")),
        (
            "GET",
            format!("/api/conversations/{u}/agent_final_response"),
        ),
        ("GET", format!("/api/conversations/{u}/runtime")),
    ] {
        let (s, body) = env.call(m, &path, None).await;
        assert_eq!((s, &body), (404, &bare), "{m} {path}");
    }
    env.stop().await;
}

#[tokio::test]
async fn bad_input_is_422_and_never_corrupts_a_conversation() {
    let env = Env::start(two_step).await;
    let id = finished_conversation(&env).await;
    let before = env.events(&id).await;
    let c = format!("/api/conversations/{id}");

    // Malformed JSON on every body-taking route.
    for path in [
        "/api/conversations".to_string(),
        format!("{c}/events"),
        format!("{c}/events/respond_to_confirmation"),
        format!("{c}/ask_agent"),
        format!("{c}/fork"),
        format!("{c}/secrets"),
        format!("{c}/confirmation_policy"),
        format!("{c}/security_analyzer"),
        format!("{c}/switch_llm"),
    ] {
        let (s, body) = env.raw("POST", &path, "{\"oops").await;
        assert_eq!(s, 422, "{path}: {body}");
        assert_eq!(body["detail"][0]["type"], "json_invalid", "{path}");
    }
    let (s, body) = env.raw("PATCH", &c, "[1,").await;
    assert_eq!(
        (s, body["detail"][0]["type"].clone()),
        (422, json!("json_invalid"))
    );

    // Wrong types.
    let cases: Vec<(String, Value, Value)> = vec![
        (
            format!("{c}/events"),
            json!({"role": "robot", "content": []}),
            json!(["body", "role"]),
        ),
        (
            format!("{c}/events"),
            json!({"content": "text"}),
            json!(["body", "content"]),
        ),
        (
            format!("{c}/events"),
            json!({"content": [], "run": "soon"}),
            json!(["body", "run"]),
        ),
        (
            format!("{c}/events/respond_to_confirmation"),
            json!({"accept": "yes"}),
            json!(["body", "accept"]),
        ),
        (
            format!("{c}/events/respond_to_confirmation"),
            json!({}),
            json!(["body", "accept"]),
        ),
        (
            format!("{c}/ask_agent"),
            json!({"question": 3}),
            json!(["body", "question"]),
        ),
        (
            format!("{c}/fork"),
            json!({"id": "not-a-uuid"}),
            json!(["body", "id"]),
        ),
        (
            format!("{c}/fork"),
            json!({"title": "t".repeat(201)}),
            json!(["body", "title"]),
        ),
        (
            format!("{c}/secrets"),
            json!({"secrets": "x"}),
            json!(["body", "secrets"]),
        ),
        (
            format!("{c}/switch_llm"),
            json!({"llm": 7}),
            json!(["body", "llm"]),
        ),
    ];
    for (path, body, loc) in cases {
        let (s, err) = env.post(&path, body.clone()).await;
        assert_eq!(s, 422, "{path} {body}: {err}");
        assert_eq!(err["detail"][0]["loc"], loc, "{path} {body}: {err}");
    }
    let (s, err) = env.call("GET", &format!("{c}/events"), None).await;
    assert_eq!(s, 422, "{err}");
    let (s, err) = env
        .call("GET", &format!("{c}/events"), Some(json!({"ids": 1})))
        .await;
    assert_eq!(s, 422, "{err}");

    // Query validation.
    for (path, loc) in [
        (format!("{c}/events/search?limit=0"), "limit"),
        (format!("{c}/events/search?limit=101"), "limit"),
        (format!("{c}/events/search?limit=abc"), "limit"),
        (
            format!("{c}/events/search?sort_order=SIDEWAYS"),
            "sort_order",
        ),
        (
            format!("{c}/events/search?timestamp__gte=yesterday"),
            "timestamp__gte",
        ),
        ("/api/conversations/search?limit=0".to_string(), "limit"),
        (
            "/api/conversations/search?status=sleeping".to_string(),
            "status",
        ),
        (
            "/api/conversations/search?sort_order=NAME".to_string(),
            "sort_order",
        ),
        (
            "/api/conversations/count?status=sleeping".to_string(),
            "status",
        ),
        ("/api/conversations?ids=nope".to_string(), "ids"),
        ("/api/conversations".to_string(), "ids"),
    ] {
        let (s, err) = env.get(&path).await;
        assert_eq!(s, 422, "{path}: {err}");
        assert_eq!(err["detail"][0]["loc"][1], loc, "{path}: {err}");
    }
    let (_, err) = env.get(&format!("{c}/events/search?limit=0")).await;
    assert_eq!(
        err,
        json!({"detail": [{"type": "greater_than", "loc": ["query", "limit"], "msg": "Input should be greater than 0", "input": "0", "ctx": {"gt": 0}}]})
    );

    // Ids that are not UUIDs, including traversal attempts.
    for path in [
        "/api/conversations/not-a-uuid".to_string(),
        "/api/conversations/..%2F..%2Fetc/run".to_string(),
        "/api/conversations/%2E%2E/events/search".to_string(),
    ] {
        let (s, err) = env
            .call(
                if path.ends_with("run") { "POST" } else { "GET" },
                &path,
                None,
            )
            .await;
        assert!(s == 422 || s == 404, "{path}: {s} {err}");
        assert!(err.get("detail").is_some(), "{path}: {err}");
    }
    let (s, err) = env.get("/api/conversations/not-a-uuid").await;
    assert_eq!(s, 422);
    assert_eq!(err["detail"][0]["type"], "uuid_parsing");

    // Start requests.
    let (s, err) = env.post("/api/conversations", json!({})).await;
    assert_eq!(s, 422);
    assert_eq!(err["detail"][0]["loc"], json!(["body", "workspace"]));
    let mut bad_tools = env.start_body(json!({}));
    bad_tools["agent"]["tools"] = json!("terminal");
    bad_tools["agent"]["llm"]["api_key"] = json!("sk-redact-me");
    let (s, err) = env.post("/api/conversations", bad_tools).await;
    assert_eq!(s, 422);
    assert_eq!(err["detail"][0]["loc"], json!(["body", "agent", "tools"]));
    assert!(!err.to_string().contains("sk-redact-me"));
    let mut unknown_tool = env.start_body(json!({}));
    unknown_tool["agent"]["tools"] = json!([{"name": "no_such_tool"}]);
    let (s, err) = env.post("/api/conversations", unknown_tool).await;
    assert_eq!(s, 422);
    assert_eq!(
        err,
        json!({"detail": "ToolDefinition 'no_such_tool' is not registered"})
    );
    let (s, err) = env
        .post(
            "/api/conversations",
            env.start_body(json!({"max_iterations": 0})),
        )
        .await;
    assert_eq!(s, 422);
    assert_eq!(err["detail"][0]["type"], "greater_than_equal");
    let mut kind = env.start_body(json!({}));
    kind["agent"]["kind"] = json!("NoSuchAgent");
    let (s, err) = env.post("/api/conversations", kind).await;
    assert_eq!(s, 422);
    assert_eq!(err["detail"][0]["loc"], json!(["body", "agent"]));
    let (s, _) = env
        .post(
            "/api/conversations",
            env.start_body(json!({"secrets": {"A": 5}})),
        )
        .await;
    assert_eq!(s, 422);

    // Nothing above changed the conversation or created another one.
    assert_eq!(env.events(&id).await, before);
    let (_, n) = env.get("/api/conversations/count").await;
    assert_eq!(n, json!(1));
    let (_, got) = env.get(&c).await;
    assert_eq!(got["execution_status"], "finished");
    env.stop().await;
}

#[tokio::test]
async fn secrets_security_analyzer_llm_switch_and_condense() {
    let env = Env::start(two_step).await;
    let info = env
        .create(json!({"secrets": {"GITHUB_TOKEN": "ghp_abc123"}}))
        .await;
    let id = info["id"].as_str().unwrap();
    assert_eq!(
        info["secret_registry"]["secret_sources"]["GITHUB_TOKEN"]["value"],
        Value::Null
    );
    let c = format!("/api/conversations/{id}");
    let (s, body) = env
        .post(&format!("{c}/secrets"), json!({"secrets": {"A": "v", "B": {"value": "w"}, "C": {"kind": "LookupSecret", "url": "http://127.0.0.1:9/x"}}}))
        .await;
    assert_eq!((s, body), (200, json!({"success": true})));
    let (_, got) = env.get(&c).await;
    let sources = &got["secret_registry"]["secret_sources"];
    for k in ["A", "B", "C", "GITHUB_TOKEN"] {
        assert!(sources.get(k).is_some(), "{k}: {sources}");
    }
    assert!(!got.to_string().contains("ghp_abc123"));
    let state = std::fs::read_to_string(
        env.conversations_dir()
            .join(id.replace('-', ""))
            .join("base_state.json"),
    )
    .unwrap();
    assert!(
        !state.contains("ghp_abc123"),
        "secrets must be encrypted at rest"
    );

    let (s, _) = env
        .post(
            &format!("{c}/security_analyzer"),
            json!({"security_analyzer": {"kind": "LLMSecurityAnalyzer"}}),
        )
        .await;
    assert_eq!(s, 200);
    let (_, got) = env.get(&c).await;
    assert_eq!(got["security_analyzer"]["kind"], "LLMSecurityAnalyzer");
    let (s, _) = env
        .post(
            &format!("{c}/security_analyzer"),
            json!({"security_analyzer": null}),
        )
        .await;
    assert_eq!(s, 200);

    let (s, body) = env
        .post(
            &format!("{c}/switch_llm"),
            json!({"llm": {"model": "openai/other-model", "base_url": env.mock.base_url(), "api_key": "k2", "num_retries": 0}}),
        )
        .await;
    assert_eq!((s, body), (200, json!({"success": true})));
    let (_, got) = env.get(&c).await;
    assert_eq!(got["agent"]["llm"]["model"], "openai/other-model");
    assert_eq!(got["agent"]["llm"]["api_key"], Value::Null);

    let (s, body) = env.post(&format!("{c}/condense"), json!(null)).await;
    assert_eq!(
        (s, body),
        (
            409,
            json!({"detail": "Cannot condense conversation: No condenser configured"})
        )
    );
    env.stop().await;
}

#[tokio::test]
async fn switch_profile_uses_a_saved_profile_and_unsupported_features_say_so() {
    let env = Env::start(two_step).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap();
    let c = format!("/api/conversations/{id}");
    let (s, body) = env
        .post(
            "/api/profiles/fast",
            json!({"llm": {"model": "openai/profile-model", "base_url": env.mock.base_url(), "api_key": "pk", "num_retries": 0}}),
        )
        .await;
    assert_eq!(s, 201, "{body}");
    let (s, body) = env
        .post(
            &format!("{c}/switch_profile"),
            json!({"profile_name": "fast"}),
        )
        .await;
    assert_eq!((s, body), (200, json!({"success": true})));
    let (_, got) = env.get(&c).await;
    assert_eq!(got["agent"]["llm"]["model"], "openai/profile-model");
    assert_eq!(got["agent"]["llm"]["usage_id"], "profile:fast");
    let (s, body) = env
        .post(
            &format!("{c}/switch_profile"),
            json!({"profile_name": "missing"}),
        )
        .await;
    assert_eq!(
        (s, body),
        (404, json!({"detail": "Profile 'missing' not found"}))
    );
    // The conversation still runs with the switched LLM.
    env.send(id, "Please create x.txt, then finish.", true)
        .await;
    let done = env.wait_status(id, &["finished", "error"]).await;
    assert_eq!(done["execution_status"], "finished", "{done}");

    let (s, body) = env
        .post(&format!("{c}/switch_acp_model"), json!({"model": "m"}))
        .await;
    assert_eq!(s, 400, "{body}");
    let (s, body) = env
        .post(&format!("{c}/load_plugin"), json!({"plugin_ref": "x"}))
        .await;
    assert_eq!(s, 404, "{body}");
    env.stop().await;
}
