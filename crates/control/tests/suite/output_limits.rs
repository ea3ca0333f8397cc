//! Output limits: at most 512 KiB retained per task (a reader asking for
//! older output gets a notice naming the first kept `seq`), and events
//! above 16 KiB become notices naming their id, kind and size.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    Api, Control, Followed, Options, chunk_data, database, eventually, follow_until, mock_llm,
    ndjson,
};
use openhands_testkit::{Script, Turn};
use serde_json::json;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(90);

/// 60 distinct thoughts of ~3 KB (each event well under 16 KiB, together
/// well over 512 KiB), one thought of 20 KB (its action event becomes a
/// notice), then finish.
fn script() -> Script {
    let mut turns: Vec<Turn> = (0..60)
        .map(|i| {
            Turn::tool_call(
                "think",
                json!({"thought": format!("{i}: {}", "lorem ipsum ".repeat(250))}),
            )
        })
        .collect();
    turns.push(Turn::tool_call(
        "think",
        json!({"thought": "x".repeat(20_000)}),
    ));
    turns.push(Turn::tool_call("finish", json!({"message": "done"})));
    Script::from_turns([Turn::text("unused")])
        .with_script("big", turns)
        .with_toolless_reply(Turn::text("title"))
}

async fn limits(postgres: bool) {
    let Some(db) = database(postgres).await else {
        return;
    };
    let llm = mock_llm(script()).await;
    let c = Control::start(&db, &llm.base_url(), Options::default());
    let api = Api::new(&c.url);
    let full = "sandboxes:write,ai_chat:use";
    let t = common::tenant(&c, "acme", full, full);
    let sb = api.create_sandbox(&t, json!({})).await.json["id"]
        .as_str()
        .unwrap()
        .to_string();
    let started = api
        .start_task(&t, &sb, "[[mock:script:big]] think a lot")
        .await;
    assert_eq!(started.status, 202, "{}", started.text);
    let task = started.json["id"].as_str().unwrap().to_string();
    // Nobody reads while it runs.
    let agent_path = format!("{}/agent", Api::sandbox_path(&t, &sb));
    eventually(WAIT, "the task to end", || async {
        let a = api.call("GET", &agent_path, Some(&t.key), None).await;
        (a.json["current_task"]["ended"] == true).then_some(())
    })
    .await;

    let all = ndjson(&api.output(&t, &sb, &task, 0).await.text);
    let notice = &all[0];
    assert_eq!(notice["type"], "notice", "first line: {notice}");
    assert_eq!(notice["code"], "output_dropped");
    let kept_from = notice["kept_from_seq"].as_i64().unwrap();
    assert!(kept_from > 1, "older output was dropped");
    let chunks: Vec<_> = all.iter().filter(|l| l["type"] == "chunk").collect();
    assert_eq!(
        chunks[0]["seq"], kept_from,
        "output continues from the first kept seq"
    );
    let retained: usize = chunks.iter().map(|c| chunk_data(c).len()).sum();
    assert!(retained <= 512 * 1024, "retained {retained} bytes");
    assert!(
        retained > 400 * 1024,
        "retention keeps close to the limit: {retained}"
    );
    let exit = all.last().unwrap();
    assert_eq!(exit["type"], "exit");
    assert_eq!(exit["exit_code"], 0);

    // The big event became a notice naming its id, kind and size.
    let mut f = Followed::default();
    f.absorb(all[1..].to_vec());
    let big = f
        .stdout
        .iter()
        .find(|o| o["type"] == "task_event" && o.get("notice").is_some())
        .expect("a notice for the large event");
    assert_eq!(big["notice"]["kind"], "ActionEvent");
    assert!(big["notice"]["id"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(big["notice"]["size"].as_u64().unwrap() > 16 * 1024);
    // Every forwarded event is at most 16 KiB.
    for e in f.events() {
        assert!(e.to_string().len() <= 16 * 1024);
    }
    assert_eq!(f.statuses().last().unwrap(), "finished");

    // Reading from the first kept seq on gives no notice.
    let from_kept = ndjson(&api.output(&t, &sb, &task, kept_from - 1).await.text);
    assert_eq!(from_kept[0]["seq"], kept_from);
    assert!(from_kept.iter().all(|l| l["type"] != "notice"));
    // A follower starting late sees the notice once, then everything kept.
    let mut g = Followed::default();
    follow_until(&api, &t, &sb, &task, &mut g, WAIT, |_| false).await;
    assert_eq!(g.lines, all);
    llm.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_sqlite() {
    limits(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_postgres() {
    limits(true).await;
}
