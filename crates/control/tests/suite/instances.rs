//! Two control-plane instances on one PostgreSQL serve one tenant
//! consistently: what one creates the other serves, a task started on one
//! is controlled and read on the other with the same output, the tenant's
//! running-task limit holds across them, a delete on the non-owner is
//! finished by the owner, and when the instance forwarding a task's events
//! dies the other takes over without losing or repeating output.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Api, Control, Followed, Options, database, eventually, follow_until, mock_llm};
use openhands_testkit::{Script, Turn};
use serde_json::json;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

fn script() -> Script {
    Script::from_turns([Turn::text("unused")])
        .with_script(
            "steps",
            vec![
                Turn::tool_call("terminal", json!({"command": "echo a"})).with_delay_ms(1000),
                Turn::tool_call("terminal", json!({"command": "echo b"})).with_delay_ms(1000),
                Turn::tool_call("terminal", json!({"command": "echo c"})).with_delay_ms(1000),
                Turn::tool_call("finish", json!({"message": "done"})),
            ],
        )
        .with_script(
            "slow",
            vec![
                Turn::tool_call("terminal", json!({"command": "echo late"})).with_delay_ms(60_000),
            ],
        )
        .with_toolless_reply(Turn::text("title"))
}

fn opts() -> Options {
    Options {
        env: vec![("OH_CONTROL_HEARTBEAT_SECONDS".into(), "0.25".into())],
        data_dir: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_on_one_postgres() {
    let Some(db) = database(true).await else {
        return;
    };
    let llm = mock_llm(script()).await;
    let a = Control::start(&db, &llm.base_url(), opts());
    let mut b = Control::start(&db, &llm.base_url(), opts());
    let (api_a, api_b) = (Api::new(&a.url), Api::new(&b.url));
    let full = "sandboxes:write,ai_chat:use";
    // Admin commands through either instance's settings reach one state.
    let t = common::tenant(&a, "acme", full, full);
    b.admin(&["tenant", "set-limit", "--tenant", "acme", "2"]);

    // A sandbox created on A (A runs its process) is served by B.
    let sb = api_a.create_sandbox(&t, json!({"name": "shared"})).await;
    assert_eq!(sb.status, 201, "{}", sb.text);
    let sb = sb.json["id"].as_str().unwrap().to_string();
    let on_b = api_b
        .call("GET", &Api::sandbox_path(&t, &sb), Some(&t.key), None)
        .await;
    assert_eq!(on_b.status, 200);
    assert_eq!(on_b.json["name"], "shared");

    // Two more sandboxes for the limit check below, made before the first
    // task starts so it still runs when the limit is checked.
    let sb2 = api_a.create_sandbox(&t, json!({})).await.json["id"]
        .as_str()
        .unwrap()
        .to_string();
    let sb3 = api_a.create_sandbox(&t, json!({})).await.json["id"]
        .as_str()
        .unwrap()
        .to_string();
    // A task started on B is read on A and controlled on both.
    let started = api_b
        .start_task(&t, &sb, "[[mock:script:steps]] three steps")
        .await;
    assert_eq!(started.status, 202, "{}", started.text);
    let task = started.json["id"].as_str().unwrap().to_string();
    let mut on_a = Followed::default();
    follow_until(&api_a, &t, &sb, &task, &mut on_a, WAIT, |f| f.ran("echo a")).await;
    let steer = api_a
        .control(
            &t,
            &sb,
            "steer",
            json!({"task_id": task, "prompt": "from A"}),
        )
        .await;
    assert_eq!(steer.status, 202, "{}", steer.text);
    let agent = api_b
        .call(
            "GET",
            &format!("{}/agent", Api::sandbox_path(&t, &sb)),
            Some(&t.key),
            None,
        )
        .await;
    assert_eq!(agent.json["current_task"]["id"], task.as_str());
    assert_eq!(agent.json["limits"]["max_running_tasks"], 2);
    assert_eq!(agent.json["limits"]["running_tasks"], 1);

    // The tenant's limit holds across instances (2 running at most).
    // (Every sandbox is made on A: B is killed below, and a killed
    // instance leaves its local sandbox processes behind.)
    let second = api_a.start_task(&t, &sb2, "[[mock:script:slow]] two").await;
    assert_eq!(second.status, 202, "{}", second.text);
    let third = api_b
        .start_task(&t, &sb3, "[[mock:script:slow]] three")
        .await;
    assert_eq!(third.status, 429, "{}", third.text);
    assert_eq!(third.code(), "sandbox_model_limit");

    // B forwards the first task's events; B dies; A takes over.
    follow_until(&api_a, &t, &sb, &task, &mut on_a, WAIT, |f| f.ran("echo b")).await;
    b.kill();
    follow_until(&api_a, &t, &sb, &task, &mut on_a, WAIT, |_| false).await;
    assert_eq!(on_a.exit.as_ref().unwrap()["exit_code"], 0);
    assert!(
        on_a.ran("echo c"),
        "events after the takeover were forwarded"
    );
    // Nothing lost or repeated: every event once, seqs 1..=exit.
    let ids: Vec<&str> = on_a
        .events()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "an event was forwarded twice");
    let seqs: Vec<i64> = on_a
        .lines
        .iter()
        .filter_map(|l| l["seq"].as_i64())
        .collect();
    assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>());
    assert!(
        on_a.events()
            .iter()
            .any(|e| e.to_string().contains("from A"))
    );

    // A second instance again (same data directory as B's): a delete
    // there of A's sandbox is finished by A, the owner.
    let b2 = Control::start(
        &db,
        &llm.base_url(),
        Options {
            data_dir: Some(b.data_dir.clone()),
            ..opts()
        },
    );
    let api_b2 = Api::new(&b2.url);
    let del = api_b2
        .call("DELETE", &Api::sandbox_path(&t, &sb), Some(&t.key), None)
        .await;
    assert_eq!(del.status, 200, "{}", del.text);
    assert_eq!(del.json["status"], "deleting");
    let dir = a.data_dir.join("sandboxes").join(&sb);
    eventually(WAIT, "the owner to finish the delete", || async {
        let g = api_b2
            .call("GET", &Api::sandbox_path(&t, &sb), Some(&t.key), None)
            .await;
        (g.status == 404 && !dir.exists()).then_some(())
    })
    .await;
    let listed = api_a
        .call(
            "GET",
            &format!("/v1/customer/tenants/{}/sandboxes", t.id),
            Some(&t.key),
            None,
        )
        .await;
    assert_eq!(listed.json["sandboxes"].as_array().unwrap().len(), 2);
    llm.shutdown().await;
}
