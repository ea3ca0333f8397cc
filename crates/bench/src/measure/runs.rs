//! Two-step runs: a conversation is created, its event socket subscribed,
//! a user message sent with `run:true`, and the run's end awaited.

use crate::api::{Api, Subscriber};
use anyhow::{Result, bail};
use futures::StreamExt;
use serde_json::Value;
use std::time::{Duration, Instant};

/// Timings of one successful two-step conversation.
#[derive(Debug, Clone, Copy)]
pub struct RunTiming {
    /// Message sent (`POST …/events` with `run:true`) → `finished` observed.
    pub run: Duration,
    /// Creation start → `finished` observed (creation, subscription, run).
    pub total: Duration,
    /// Whether the end was observed by polling (the socket failed).
    pub polled: bool,
}

/// One attempt: the conversation id (when it was created) and the outcome.
#[derive(Debug)]
pub struct RunAttempt {
    /// The created conversation, for clean-up.
    pub id: Option<String>,
    /// Timings, or why the run failed.
    pub result: Result<RunTiming>,
}

/// Runs one two-step conversation. The end is the first
/// `ConversationStateUpdateEvent` on the event socket announcing
/// `finished`/`error`/`stuck`; when the socket cannot be opened the
/// conversation is polled instead. Anything but `finished` is an error.
pub async fn two_step(api: &Api, body: &Value, n: usize, timeout: Duration) -> RunAttempt {
    let t0 = Instant::now();
    let deadline = t0 + timeout;
    let id = match api.create(body).await {
        Ok(id) => id,
        Err(e) => {
            return RunAttempt {
                id: None,
                result: Err(e),
            };
        }
    };
    let result = run_created(api, &id, n, t0, deadline).await;
    RunAttempt {
        id: Some(id),
        result,
    }
}

async fn run_created(
    api: &Api,
    id: &str,
    n: usize,
    t0: Instant,
    deadline: Instant,
) -> Result<RunTiming> {
    let subscriber: Option<Subscriber> = api.subscribe(id).await.ok();
    let polled = subscriber.is_none();
    let sent = Instant::now();
    api.send_message(id, &format!("Say hi. [bench:run:{n}]"), true)
        .await?;
    let status = match subscriber {
        Some(mut sub) => {
            let status = sub.wait_until_done(deadline).await;
            sub.close().await;
            status?
        }
        None => api.poll_until_done(id, deadline).await?,
    };
    let end = Instant::now();
    if status != "finished" {
        bail!("conversation {id} ended {status}");
    }
    Ok(RunTiming {
        run: end - sent,
        total: end - t0,
        polled,
    })
}

/// Deletes conversations, four at a time, each bounded by the client's
/// timeout. Returns how many deletions failed.
pub async fn delete_all(api: &Api, ids: Vec<String>) -> usize {
    futures::stream::iter(ids)
        .map(|id| async move { api.delete(&id).await.is_err() })
        .buffer_unordered(4)
        .filter(|failed| futures::future::ready(*failed))
        .count()
        .await
}
