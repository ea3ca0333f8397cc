//! Webhook delivery (`OH_WEBHOOKS_*`).
//!
//! Events are batched per conversation and POSTed as a JSON list to
//! `{base_url}/events/{conversation id hex}`; conversation info is POSTed to
//! `{base_url}/conversations` when a conversation is created, updated,
//! paused, interrupted or deleted. Both carry the session key header (when
//! the server has keys) and the configured headers, and are retried
//! `num_retries` times `retry_delay` seconds apart.
//!
//! Nothing here ever waits on the agent's side: events enter a bounded
//! channel with `try_send` (dropped and counted when full) and each webhook
//! has its own delivery tasks. Per conversation, at most `max_queue_size`
//! events / `max_queue_bytes` bytes are buffered (oldest dropped first); a
//! buffer is flushed when it holds `event_buffer_size` events or
//! `max_batch_bytes` bytes, or `flush_delay` seconds after its first event.

use crate::config::WebhookSpec;
use openhands_client::{HttpOptions, http_client};
use openhands_protocol::SESSION_API_KEY_HEADER;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use uuid::Uuid;

/// Timeout of one webhook request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Conversation-info posts waiting for delivery, per webhook.
const CONVERSATION_QUEUE: usize = 256;

enum Command {
    Event(Uuid, Arc<str>),
    Shutdown(oneshot::Sender<()>),
}

struct Hook {
    events: mpsc::Sender<Command>,
    conversations: mpsc::Sender<Value>,
    dropped: Arc<AtomicU64>,
}

/// Delivers events and conversation info to the configured webhooks.
pub struct WebhookDispatcher {
    hooks: Vec<Hook>,
}

impl std::fmt::Debug for WebhookDispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookDispatcher")
            .field("webhooks", &self.hooks.len())
            .finish()
    }
}

#[derive(Clone)]
struct Poster {
    client: reqwest::Client,
    headers: Vec<(String, String)>,
    num_retries: u32,
    retry_delay: Duration,
}

impl Poster {
    fn new(spec: &WebhookSpec, session_api_key: Option<&str>) -> Option<Self> {
        let options = HttpOptions::with_timeout(REQUEST_TIMEOUT);
        let client = match http_client(&options) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(error = %e, "cannot build the webhook HTTP client");
                return None;
            }
        };
        let mut headers: Vec<(String, String)> = spec
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let Some(k) = session_api_key {
            headers.push((SESSION_API_KEY_HEADER.into(), k.to_string()));
        }
        Some(Self {
            client,
            headers,
            num_retries: u32::try_from(spec.num_retries.max(0)).unwrap_or(0),
            retry_delay: Duration::from_secs(u64::try_from(spec.retry_delay.max(0)).unwrap_or(0)),
        })
    }

    /// POSTs `body` (JSON text) with retries; true on a 2xx answer.
    async fn post(&self, url: &str, body: String) -> bool {
        for attempt in 0..=self.num_retries {
            let mut req = self
                .client
                .post(url)
                .header("content-type", "application/json")
                .body(body.clone());
            for (k, v) in &self.headers {
                req = req.header(k.as_str(), v.as_str());
            }
            match req.send().await {
                Ok(r) if r.status().is_success() => return true,
                Ok(r) => {
                    tracing::warn!(%url, status = %r.status(), attempt = attempt + 1, "webhook post failed")
                }
                Err(e) => {
                    tracing::warn!(%url, error = %e, attempt = attempt + 1, "webhook post failed")
                }
            }
            if attempt < self.num_retries {
                tokio::time::sleep(self.retry_delay).await;
            }
        }
        tracing::error!(%url, attempts = self.num_retries + 1, "webhook post gave up");
        false
    }
}

impl WebhookDispatcher {
    /// Starts delivery tasks for `specs`; `None` when there are none.
    /// Must be called inside a tokio runtime.
    pub fn start(specs: &[WebhookSpec], session_api_key: Option<String>) -> Option<Self> {
        let hooks: Vec<Hook> = specs
            .iter()
            .filter(|s| !s.base_url.trim().is_empty())
            .filter_map(|spec| {
                let poster = Poster::new(spec, session_api_key.as_deref())?;
                let capacity = usize::try_from(spec.max_queue_size.max(1)).unwrap_or(1000);
                let (events, events_rx) = mpsc::channel(capacity);
                let (conversations, conv_rx) = mpsc::channel(CONVERSATION_QUEUE);
                let base = spec.base_url.trim_end_matches('/').to_string();
                tokio::spawn(event_worker(
                    Limits::from_spec(spec),
                    base.clone(),
                    poster.clone(),
                    events_rx,
                ));
                tokio::spawn(conversation_worker(base, poster, conv_rx));
                Some(Hook {
                    events,
                    conversations,
                    dropped: Arc::new(AtomicU64::new(0)),
                })
            })
            .collect();
        if hooks.is_empty() {
            None
        } else {
            Some(Self { hooks })
        }
    }

    /// Queues one event (its JSON) of `conversation`. Never waits.
    pub fn event(&self, conversation: Uuid, json: Arc<str>) {
        for hook in &self.hooks {
            if hook
                .events
                .try_send(Command::Event(conversation, json.clone()))
                .is_err()
            {
                let n = hook.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                if n == 1 || n % 100 == 0 {
                    tracing::warn!(dropped = n, "webhook event queue full; events dropped");
                }
            }
        }
    }

    /// Queues a conversation-info post. Never waits.
    pub fn conversation(&self, info: Value) {
        for hook in &self.hooks {
            if hook.conversations.try_send(info.clone()).is_err() {
                tracing::warn!("webhook conversation queue full; update dropped");
            }
        }
    }

    /// Flushes buffered events (best effort, bounded by the retry policy).
    pub async fn shutdown(&self) {
        for hook in &self.hooks {
            let (tx, rx) = oneshot::channel();
            if hook.events.send(Command::Shutdown(tx)).await.is_ok() {
                let _ = tokio::time::timeout(Duration::from_secs(60), rx).await;
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Limits {
    buffer_size: usize,
    flush_delay: Duration,
    max_queue_size: usize,
    max_batch_bytes: usize,
    max_queue_bytes: usize,
}

impl Limits {
    fn from_spec(spec: &WebhookSpec) -> Self {
        let size = |v: i64, d: usize| usize::try_from(v).ok().filter(|n| *n > 0).unwrap_or(d);
        Self {
            buffer_size: size(spec.event_buffer_size, 5),
            flush_delay: Duration::from_secs_f64(if spec.flush_delay.is_finite() {
                spec.flush_delay.max(0.0)
            } else {
                30.0
            }),
            max_queue_size: size(spec.max_queue_size, 1000),
            max_batch_bytes: size(spec.max_batch_bytes, 5 * 1024 * 1024),
            max_queue_bytes: size(spec.max_queue_bytes, 50 * 1024 * 1024),
        }
    }
}

/// Buffered events of one conversation.
#[derive(Default)]
struct Buffer {
    items: VecDeque<Arc<str>>,
    bytes: usize,
    due: Option<Instant>,
    dropped: u64,
}

impl Buffer {
    fn push(&mut self, json: Arc<str>, limits: &Limits) {
        self.bytes += json.len();
        self.items.push_back(json);
        self.trim(limits);
    }

    fn push_front(&mut self, batch: Vec<Arc<str>>, limits: &Limits) {
        for json in batch.into_iter().rev() {
            self.bytes += json.len();
            self.items.push_front(json);
        }
        self.trim(limits);
    }

    fn trim(&mut self, limits: &Limits) {
        while self.items.len() > limits.max_queue_size || self.bytes > limits.max_queue_bytes {
            match self.items.pop_front() {
                Some(j) => {
                    self.bytes -= j.len();
                    self.dropped += 1;
                }
                None => break,
            }
        }
    }

    fn full(&self, limits: &Limits) -> bool {
        self.items.len() >= limits.buffer_size || self.bytes >= limits.max_batch_bytes
    }

    /// Takes one batch: up to `buffer_size` events within `max_batch_bytes`
    /// (at least one event).
    fn take_batch(&mut self, limits: &Limits) -> Vec<Arc<str>> {
        let mut out = Vec::new();
        let mut size = 2usize;
        while let Some(next) = self.items.front() {
            let add = next.len() + usize::from(!out.is_empty());
            if !out.is_empty() && size + add > limits.max_batch_bytes {
                break;
            }
            size += add;
            if let Some(j) = self.items.pop_front() {
                self.bytes -= j.len();
                out.push(j);
            }
            if out.len() >= limits.buffer_size {
                break;
            }
        }
        out
    }
}

fn batch_body(batch: &[Arc<str>]) -> String {
    let mut body = String::with_capacity(batch.iter().map(|j| j.len() + 1).sum::<usize>() + 2);
    body.push('[');
    for (i, j) in batch.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(j);
    }
    body.push(']');
    body
}

async fn flush(id: Uuid, buf: &mut Buffer, limits: &Limits, base: &str, poster: &Poster) {
    let url = format!("{base}/events/{}", id.simple());
    while !buf.items.is_empty() {
        let batch = buf.take_batch(limits);
        if batch.is_empty() {
            break;
        }
        if !poster.post(&url, batch_body(&batch)).await {
            buf.push_front(batch, limits);
            buf.due = Some(Instant::now() + limits.flush_delay.max(Duration::from_secs(1)));
            return;
        }
    }
    buf.due = None;
}

async fn event_worker(
    limits: Limits,
    base: String,
    poster: Poster,
    mut rx: mpsc::Receiver<Command>,
) {
    let mut buffers: HashMap<Uuid, Buffer> = HashMap::new();
    loop {
        let next_due = buffers.values().filter_map(|b| b.due).min();
        let cmd = match next_due {
            Some(due) => tokio::select! {
                c = rx.recv() => c,
                _ = tokio::time::sleep_until(due) => {
                    let now = Instant::now();
                    let ids: Vec<Uuid> = buffers
                        .iter()
                        .filter(|(_, b)| b.due.is_some_and(|d| d <= now))
                        .map(|(k, _)| *k)
                        .collect();
                    for id in ids {
                        if let Some(buf) = buffers.get_mut(&id) {
                            flush(id, buf, &limits, &base, &poster).await;
                        }
                    }
                    buffers.retain(|_, b| !b.items.is_empty());
                    continue;
                }
            },
            None => rx.recv().await,
        };
        match cmd {
            Some(Command::Event(id, json)) => {
                let buf = buffers.entry(id).or_default();
                buf.push(json, &limits);
                if buf.dropped > 0 && buf.dropped % 100 == 1 {
                    tracing::warn!(conversation = %id, dropped = buf.dropped, "webhook buffer over its limits; oldest events dropped");
                }
                if buf.full(&limits) {
                    flush(id, buf, &limits, &base, &poster).await;
                } else if buf.due.is_none() {
                    buf.due = Some(Instant::now() + limits.flush_delay);
                }
                buffers.retain(|_, b| !b.items.is_empty());
            }
            Some(Command::Shutdown(done)) => {
                let ids: Vec<Uuid> = buffers.keys().copied().collect();
                for id in ids {
                    if let Some(buf) = buffers.get_mut(&id) {
                        flush(id, buf, &limits, &base, &poster).await;
                    }
                }
                let _ = done.send(());
                return;
            }
            None => return,
        }
    }
}

async fn conversation_worker(base: String, poster: Poster, mut rx: mpsc::Receiver<Value>) {
    let url = format!("{base}/conversations");
    while let Some(info) = rx.recv().await {
        let body = match serde_json::to_string(&info) {
            Ok(b) => b,
            Err(_) => continue,
        };
        poster.post(&url, body).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(buffer_size: usize, max_batch_bytes: usize) -> Limits {
        Limits {
            buffer_size,
            flush_delay: Duration::from_millis(10),
            max_queue_size: 4,
            max_batch_bytes,
            max_queue_bytes: 1000,
        }
    }

    #[test]
    fn batches_respect_count_and_size() {
        let l = limits(3, 20);
        let mut b = Buffer::default();
        for s in ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"] {
            b.push(Arc::from(s), &l);
        }
        // 2 + 7 + 1 + 7 = 17 fits; a third would exceed 20.
        let batch = b.take_batch(&l);
        assert_eq!(batch.len(), 2);
        assert_eq!(batch_body(&batch), "[{\"a\":1},{\"b\":2}]");
        assert_eq!(b.take_batch(&l).len(), 1);
        assert!(b.items.is_empty());
        assert_eq!(b.bytes, 0);
    }

    #[test]
    fn queue_bounds_drop_the_oldest() {
        let l = limits(10, 1000);
        let mut b = Buffer::default();
        for i in 0..6 {
            b.push(Arc::from(format!("{i}")), &l);
        }
        assert_eq!(b.items.len(), 4);
        assert_eq!(b.dropped, 2);
        assert_eq!(&*b.items[0], "2");
    }
}
