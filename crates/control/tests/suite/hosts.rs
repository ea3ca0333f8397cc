//! Registered remote agent servers: `host add` checks the key, sandboxes
//! go to the least loaded host and work like local ones, and a host that
//! stops answering gives `503 sandboxes_unavailable` (never a hang) and
//! fails its running task.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Api, Control, Followed, Options, RemoteHost, database, follow_until, mock_llm};
use openhands_testkit::{Script, Turn};
use serde_json::{Value, json};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

fn script() -> Script {
    Script::from_turns([
        Turn::tool_call(
            "terminal",
            json!({"command": "echo remote > made-here.txt"}),
        ),
        Turn::tool_call("finish", json!({"message": "done"})),
    ])
    .with_script(
        "slow",
        vec![Turn::tool_call("terminal", json!({"command": "echo late"})).with_delay_ms(60_000)],
    )
    .with_toolless_reply(Turn::text("title"))
}

fn host_loads(c: &Control) -> Vec<Value> {
    c.admin(&["host", "list"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

async fn registered_hosts(postgres: bool) {
    let Some(db) = database(postgres).await else {
        return;
    };
    let llm = mock_llm(script()).await;
    let c = Control::start(
        &db,
        &llm.base_url(),
        Options {
            env: vec![
                ("OH_CONTROL_HOST_GIVE_UP_SECONDS".into(), "1".into()),
                ("OH_CONTROL_HOST_TIMEOUT_SECONDS".into(), "1.5".into()),
                ("OH_CONTROL_HEARTBEAT_SECONDS".into(), "0.5".into()),
            ],
            data_dir: None,
        },
    );
    let api = Api::new(&c.url);
    let full = "sandboxes:write,ai_chat:use";
    let t = common::tenant(&c, "acme", full, full);
    let one = RemoteHost::start("key-one");
    let two = RemoteHost::start("key-two");

    // The key is checked before a host is registered.
    let (ok, _, err) = c.admin_result(&["host", "add", &one.url, "--key", "wrong"]);
    assert!(!ok, "a wrong key is refused");
    assert!(err.contains("cannot be used"), "{err}");
    let root_one = one.dir.path().join("sandboxes");
    let root_two = two.dir.path().join("sandboxes");
    let h1 = c.admin(&[
        "host",
        "add",
        &one.url,
        "--key",
        "key-one",
        "--workspace-root",
        root_one.to_str().unwrap(),
    ]);
    assert!(uuid::Uuid::try_parse(&h1).is_ok());

    // A sandbox on the registered host works like a local one.
    let sb = api.create_sandbox(&t, json!({})).await;
    assert_eq!(sb.status, 201, "{}", sb.text);
    assert_eq!(sb.json["placement"], "host");
    assert_eq!(sb.json["host_id"], h1.as_str());
    let sb = sb.json["id"].as_str().unwrap().to_string();
    let started = api.start_task(&t, &sb, "write a file").await;
    assert_eq!(started.status, 202, "{}", started.text);
    let task = started.json["id"].as_str().unwrap().to_string();
    let mut f = Followed::default();
    follow_until(&api, &t, &sb, &task, &mut f, WAIT, |_| false).await;
    assert_eq!(f.exit.as_ref().unwrap()["exit_code"], 0);
    assert!(f.ran("echo remote > made-here.txt"));
    assert_eq!(f.statuses(), ["running", "finished"]);
    let made = root_one.join(&sb).join("made-here.txt");
    assert_eq!(std::fs::read_to_string(&made).unwrap().trim(), "remote");
    // The host's key never reaches the task output.
    assert!(
        !f.lines
            .iter()
            .filter(|l| l["type"] == "chunk")
            .any(|l| common::chunk_data(l).contains("key-one"))
    );

    // Least loaded placement: the new host (0 sandboxes) first, then the
    // older one on a tie.
    c.admin(&[
        "host",
        "add",
        &two.url,
        "--key",
        "key-two",
        "--workspace-root",
        root_two.to_str().unwrap(),
    ]);
    let b = api.create_sandbox(&t, json!({})).await;
    let sb_two = b.json["id"].as_str().unwrap().to_string();
    assert_ne!(b.json["host_id"], h1.as_str(), "placed on the idle host");
    let third = api.create_sandbox(&t, json!({})).await;
    assert_eq!(
        third.json["host_id"],
        h1.as_str(),
        "a tie goes to the older host"
    );
    let loads = host_loads(&c);
    assert_eq!(
        loads
            .iter()
            .map(|h| h["sandboxes"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        [2, 1]
    );

    // A host that stops answering: 503 sandboxes_unavailable, no hang,
    // and its running task fails once the give-up time passed.
    let slow = api
        .start_task(&t, &sb_two, "[[mock:script:slow]] wait")
        .await;
    assert_eq!(slow.status, 202, "{}", slow.text);
    let slow_id = slow.json["id"].as_str().unwrap().to_string();
    let mut g = Followed::default();
    follow_until(&api, &t, &sb_two, &slow_id, &mut g, WAIT, |g| {
        g.statuses().iter().any(|s| s == "running")
    })
    .await;
    two.freeze();
    let a = api
        .control(&t, &sb_two, "pause", json!({"task_id": slow_id}))
        .await;
    assert_eq!(a.status, 503, "{}", a.text);
    assert_eq!(a.code(), "sandboxes_unavailable");
    let a = api
        .control(
            &t,
            &sb_two,
            "steer",
            json!({"task_id": slow_id, "prompt": "hello?"}),
        )
        .await;
    assert_eq!(a.code(), "sandboxes_unavailable");
    let read = api
        .call("GET", &Api::sandbox_path(&t, &sb_two), Some(&t.key), None)
        .await;
    assert_eq!(read.status, 200, "reads do not depend on the host");
    follow_until(&api, &t, &sb_two, &slow_id, &mut g, WAIT, |_| false).await;
    assert_eq!(g.exit.as_ref().unwrap()["exit_code"], 1);
    assert_eq!(g.statuses().last().unwrap(), "failed");
    assert!(g.stderr.contains("did not answer"), "{}", g.stderr);
    assert!(g.stdout.iter().any(|o| o["type"] == "task_error"));
    let a = api.start_task(&t, &sb_two, "again").await;
    assert_eq!(a.status, 503, "{}", a.text);
    assert_eq!(a.code(), "sandboxes_unavailable");
    // The health check marks it unhealthy: a new sandbox goes to the
    // healthy host although the frozen one has fewer sandboxes.
    common::eventually(WAIT, "the frozen host to be unhealthy", || async {
        let loads = host_loads(&c);
        (loads[1]["healthy"] == false).then_some(())
    })
    .await;
    assert!(host_loads(&c)[1]["health_error"].is_string());
    let avoided = api.create_sandbox(&t, json!({})).await;
    assert_eq!(avoided.status, 201, "{}", avoided.text);
    assert_eq!(
        avoided.json["host_id"],
        h1.as_str(),
        "the dead host is not chosen"
    );
    two.thaw();
    common::eventually(WAIT, "the host to be healthy again", || async {
        (host_loads(&c)[1]["healthy"] == true).then_some(())
    })
    .await;
    let a = api.start_task(&t, &sb_two, "again").await;
    assert_eq!(a.status, 202, "the host answers again: {}", a.text);

    // Removing a host stops placement on it; its sandboxes stay usable.
    c.admin(&["host", "remove", &two.url]);
    c.admin(&["host", "remove", &h1]);
    let local = api.create_sandbox(&t, json!({})).await;
    assert_eq!(
        local.json["placement"], "local",
        "no enabled host: local sandboxes"
    );
    let del = api
        .call("DELETE", &Api::sandbox_path(&t, &sb), Some(&t.key), None)
        .await;
    assert_eq!(del.json["status"], "deleted");
    llm.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registered_hosts_sqlite() {
    registered_hosts(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registered_hosts_postgres() {
    registered_hosts(true).await;
}
