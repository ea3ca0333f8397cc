//! The tail against a real (SQLite) store: readers get exactly what a read
//! of the database gives, whether served from the copy or not.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::store::now_ms;
use crate::store::sandboxes::Sandbox;
use crate::store::tasks::{Writer, status};

/// A store in a temporary directory with one running task; its id.
async fn store_with_task(dir: &tempfile::TempDir) -> (Store, String) {
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("db").display());
    let store = Store::connect(&url, Duration::from_secs(10)).await.unwrap();
    let tenant = store.create_tenant("t", 10).await.unwrap();
    let sandbox = Sandbox {
        id: "sb".into(),
        tenant_id: tenant.id.clone(),
        name: "sb".into(),
        placement: "local".into(),
        engine: None,
        engine_id: None,
        status_reason: None,
        host_id: None,
        owner_instance: "i".into(),
        url: None,
        sealed_key: None,
        working_dir: "/w".into(),
        sealed_llm: None,
        llm_model: None,
        status: "ready".into(),
        current_task_id: None,
        task_busy: 0,
        created_by: "u".into(),
        created_at: now_ms(),
        deleted_at: None,
        runtime_session: None,
        sealed_runtime: None,
    };
    store.insert_sandbox(&sandbox).await.unwrap();
    let task = Task {
        id: "task".into(),
        sandbox_id: "sb".into(),
        tenant_id: tenant.id,
        owner_user_id: "u".into(),
        session_id: "s".into(),
        stream_id: "st".into(),
        status: status::RUNNING.into(),
        ended: 0,
        exit_code: None,
        exit_seq: None,
        next_seq: 0,
        output_bytes: 0,
        kept_from_seq: 1,
        pump_instance: None,
        pump_heartbeat: None,
        last_event_id: None,
        lease_epoch: 0,
        created_at: now_ms(),
        updated_at: now_ms(),
        ended_at: None,
    };
    store.start_task(&task).await.unwrap().unwrap();
    (store, task.id)
}

async fn append(store: &Store, task: &str, n: usize) {
    for i in 0..n {
        store
            .append_output(
                task,
                "stdout",
                &format!("line {i}\n"),
                None,
                i64::MAX,
                Writer::Control,
            )
            .await
            .unwrap()
            .unwrap();
    }
}

fn seqs(v: &View) -> Vec<i64> {
    v.chunks.iter().map(|c| c.seq).collect()
}

const LONG: Duration = Duration::from_secs(3600);

#[tokio::test]
async fn readers_are_served_what_the_database_holds() {
    let dir = tempfile::tempdir().unwrap();
    let (store, task) = store_with_task(&dir).await;
    let tail = Tail::new();
    append(&store, &task, 3).await;
    let first = tail.read(&store, &task, 0, 200, LONG).await.unwrap();
    assert_eq!(seqs(&first), [1, 2, 3]);
    // Another reader, and one further on, from the copy.
    assert_eq!(
        seqs(&tail.read(&store, &task, 0, 200, LONG).await.unwrap()),
        [1, 2, 3]
    );
    assert_eq!(
        seqs(&tail.read(&store, &task, 2, 200, LONG).await.unwrap()),
        [3]
    );

    // Written and woken: the copy is refreshed.
    append(&store, &task, 2).await;
    tail.wake();
    assert_eq!(
        seqs(&tail.read(&store, &task, 3, 200, LONG).await.unwrap()),
        [4, 5]
    );
    // Written by another instance (no wake): shown once the copy is older
    // than the freshness bound, not before.
    append(&store, &task, 1).await;
    assert_eq!(
        seqs(&tail.read(&store, &task, 5, 200, LONG).await.unwrap()),
        Vec::<i64>::new()
    );
    assert_eq!(
        seqs(
            &tail
                .read(&store, &task, 5, 200, Duration::ZERO)
                .await
                .unwrap()
        ),
        [6]
    );
}

#[tokio::test]
async fn a_short_page_means_there_is_nothing_more() {
    let dir = tempfile::tempdir().unwrap();
    let (store, task) = store_with_task(&dir).await;
    let tail = Tail::new();
    append(&store, &task, 25).await;
    // Pages of 10: the first read fills the copy with a full page only.
    assert_eq!(
        seqs(&tail.read(&store, &task, 0, 10, LONG).await.unwrap()),
        (1..=10).collect::<Vec<_>>()
    );
    // A reader near the end of that page still gets a full page, read on
    // from the database, and the last page is the rest.
    assert_eq!(
        seqs(&tail.read(&store, &task, 8, 10, LONG).await.unwrap()),
        (9..=18).collect::<Vec<_>>()
    );
    assert_eq!(
        seqs(&tail.read(&store, &task, 18, 10, LONG).await.unwrap()),
        (19..=25).collect::<Vec<_>>()
    );

    // A reader ahead of a copy that ends in a full page: the refresh's page
    // leaves it one chunk, and the rest is read on rather than the short
    // answer taken for the end.
    let tail = Tail::new();
    assert_eq!(
        tail.read(&store, &task, 0, 10, LONG)
            .await
            .unwrap()
            .chunks
            .len(),
        10
    );
    assert_eq!(
        seqs(&tail.read(&store, &task, 19, 10, LONG).await.unwrap()),
        (20..=25).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn a_reader_behind_the_copy_reads_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let (store, task) = store_with_task(&dir).await;
    let tail = Tail::new();
    append(&store, &task, KEPT_CHUNKS + 50).await;
    // A live reader at the end, then one from the start: the copy starts
    // where the first reader was, so the second is served by the database.
    let end = (KEPT_CHUNKS + 40) as i64;
    assert_eq!(
        seqs(&tail.read(&store, &task, end, 200, LONG).await.unwrap()),
        ((end + 1)..=(end + 10)).collect::<Vec<_>>()
    );
    assert_eq!(
        seqs(&tail.read(&store, &task, 0, 5, LONG).await.unwrap()),
        [1, 2, 3, 4, 5]
    );
    // The copy keeps at most KEPT_CHUNKS chunks as it grows.
    append(&store, &task, KEPT_CHUNKS + 10).await;
    tail.wake();
    for _ in 0..10 {
        tail.read(&store, &task, end, 200, LONG).await.unwrap();
    }
    let copy = tail.copy.lock().await;
    assert!(copy.chunks.len() <= KEPT_CHUNKS, "{}", copy.chunks.len());
    assert!(copy.from >= end);
}
