//! Fencing of task forwarding, directly on the store (SQLite and
//! PostgreSQL): every claim of a task's forwarding moves its lease epoch
//! on, and the writes of a forwarder holding an older lease — appends,
//! status changes, ending the task — are refused, while the new holder's
//! and the control plane's own go through.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::rows::{sandbox, store, task};
use openhands_control::store::now_ms;
use openhands_control::store::tasks::{Line, STDOUT, Writer};

const RETENTION: i64 = 512 * 1024;

async fn stale_forwarders_are_refused(postgres: bool) {
    let dir = tempfile::tempdir().unwrap();
    let Some(store) = store(postgres, &dir).await else {
        return;
    };
    let tenant = store.create_tenant("acme", 4).await.unwrap();
    let s = sandbox(&tenant.id);
    store.insert_sandbox(&s).await.unwrap();
    let t = task(&s);
    store.start_task(&t).await.unwrap().unwrap();

    // Instance a forwards with the lease of epoch 1.
    let a = Writer::Lease(1);
    let seq = store
        .append_output(&t.id, STDOUT, "a1\n", Some("e1"), RETENTION, a)
        .await
        .unwrap();
    assert_eq!(seq, Some(1));

    // a's heartbeat is fresh: b cannot take over.
    assert_eq!(
        store
            .claim_pump(&t.id, "b", now_ms() - 60_000)
            .await
            .unwrap(),
        None
    );
    // a goes silent: b takes over, the epoch moves on.
    let epoch = store
        .claim_pump(&t.id, "b", now_ms() + 1)
        .await
        .unwrap()
        .expect("b claims the stale forwarding");
    assert_eq!(epoch, 2);
    let b = Writer::Lease(epoch);

    // a wakes up: every write of it is refused, nothing changes.
    assert_eq!(
        store
            .append_output(&t.id, STDOUT, "stale\n", Some("e-stale"), RETENTION, a)
            .await
            .unwrap(),
        None
    );
    assert!(
        !store
            .set_task_status(
                &t.id,
                "paused",
                &[
                    Line::event("stale event\n".into(), "e-paused"),
                    Line::stdout("stale status\n".into())
                ],
                RETENTION,
                a
            )
            .await
            .unwrap()
    );
    assert!(
        !store
            .end_task(
                &t.id,
                "failed",
                1,
                &[Line::stdout("stale end\n".into())],
                RETENTION,
                a
            )
            .await
            .unwrap()
    );
    let row = store.task(&t.id).await.unwrap().unwrap();
    assert_eq!(row.next_seq, 1);
    assert_eq!(row.last_event_id.as_deref(), Some("e1"));
    assert_eq!(row.status, "running");
    assert_eq!(row.ended, 0);

    // b and the control plane itself write.
    assert_eq!(
        store
            .append_output(&t.id, STDOUT, "b2\n", Some("e2"), RETENTION, b)
            .await
            .unwrap(),
        Some(2)
    );
    assert_eq!(
        store
            .append_output(&t.id, STDOUT, "control\n", None, RETENTION, Writer::Control)
            .await
            .unwrap(),
        Some(3)
    );
    // b restarts (same instance id): resuming moves the epoch on again and
    // fences its own earlier forwarder.
    let resumed = store
        .claim_pump(&t.id, "b", now_ms() - 60_000)
        .await
        .unwrap()
        .expect("the holder claims again");
    assert_eq!(resumed, 3);
    assert_eq!(
        store
            .append_output(&t.id, STDOUT, "old b\n", None, RETENTION, b)
            .await
            .unwrap(),
        None
    );
    assert!(
        !store
            .append_lines(
                &t.id,
                &[Line::event("old b\n".into(), "e-old")],
                RETENTION,
                b
            )
            .await
            .unwrap()
    );
    // An event and the status change it announces land together, and the
    // event becomes the last forwarded one: a successor resuming after it
    // finds the change recorded.
    let now = Writer::Lease(resumed);
    assert!(
        store
            .set_task_status(
                &t.id,
                "paused",
                &[
                    Line::event("paused event\n".into(), "e4"),
                    Line::stdout("paused\n".into())
                ],
                RETENTION,
                now
            )
            .await
            .unwrap()
    );
    let row = store.task(&t.id).await.unwrap().unwrap();
    assert_eq!(
        (row.status.as_str(), row.last_event_id.as_deref()),
        ("paused", Some("e4"))
    );
    assert!(
        store
            .end_task(
                &t.id,
                "finished",
                0,
                &[
                    Line::event("finished event\n".into(), "e6"),
                    Line::stdout("done\n".into())
                ],
                RETENTION,
                now
            )
            .await
            .unwrap()
    );
    let chunks = store.output_after(&t.id, 0, 100).await.unwrap();
    let data: Vec<&str> = chunks.iter().map(|c| c.data.as_str()).collect();
    assert_eq!(
        data,
        [
            "a1\n",
            "b2\n",
            "control\n",
            "paused event\n",
            "paused\n",
            "finished event\n",
            "done\n"
        ]
    );
    let seqs: Vec<i64> = chunks.iter().map(|c| c.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6, 7]);
    let row = store.task(&t.id).await.unwrap().unwrap();
    assert_eq!(
        (
            row.ended,
            row.exit_seq,
            row.exit_code,
            row.last_event_id.as_deref()
        ),
        (1, Some(8), Some(0), Some("e6"))
    );
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_forwarders_are_refused_sqlite() {
    stale_forwarders_are_refused(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_forwarders_are_refused_postgres() {
    stale_forwarders_are_refused(true).await;
}
