//! The shared tail of a task's output against the store (SQLite and
//! PostgreSQL): readers get exactly what a read of the database gives,
//! whether served from the copy or not.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::rows::{sandbox, store, task};
use openhands_control::store::Store;
use openhands_control::store::tasks::Writer;
use openhands_control::tasks::tail::{KEPT_CHUNKS, Tail, View};
use std::time::Duration;

/// A store with one running task; the task's id.
async fn store_with_task(postgres: bool, dir: &tempfile::TempDir) -> Option<(Store, String)> {
    let store = store(postgres, dir).await?;
    let tenant = store.create_tenant("t", 10).await.unwrap();
    let s = sandbox(&tenant.id);
    store.insert_sandbox(&s).await.unwrap();
    let t = task(&s);
    store.start_task(&t).await.unwrap().unwrap();
    Some((store, t.id))
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

async fn readers_are_served_what_the_database_holds(postgres: bool) {
    let dir = tempfile::tempdir().unwrap();
    let Some((store, task)) = store_with_task(postgres, &dir).await else {
        return;
    };
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

async fn a_short_page_means_there_is_nothing_more(postgres: bool) {
    let dir = tempfile::tempdir().unwrap();
    let Some((store, task)) = store_with_task(postgres, &dir).await else {
        return;
    };
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

async fn a_reader_behind_the_copy_reads_the_database(postgres: bool) {
    let dir = tempfile::tempdir().unwrap();
    let Some((store, task)) = store_with_task(postgres, &dir).await else {
        return;
    };
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
    let (from, held) = tail.held().await;
    assert!(held <= KEPT_CHUNKS, "{held}");
    assert!(from >= end, "{from}");
}

#[tokio::test]
async fn readers_are_served_what_the_database_holds_sqlite() {
    readers_are_served_what_the_database_holds(false).await;
}

#[tokio::test]
async fn readers_are_served_what_the_database_holds_postgres() {
    readers_are_served_what_the_database_holds(true).await;
}

#[tokio::test]
async fn a_short_page_means_there_is_nothing_more_sqlite() {
    a_short_page_means_there_is_nothing_more(false).await;
}

#[tokio::test]
async fn a_short_page_means_there_is_nothing_more_postgres() {
    a_short_page_means_there_is_nothing_more(true).await;
}

#[tokio::test]
async fn a_reader_behind_the_copy_reads_the_database_sqlite() {
    a_reader_behind_the_copy_reads_the_database(false).await;
}

#[tokio::test]
async fn a_reader_behind_the_copy_reads_the_database_postgres() {
    a_reader_behind_the_copy_reads_the_database(true).await;
}
