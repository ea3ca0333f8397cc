//! Server-sent-event bodies: optional delay before the first event, and a
//! scripted cut that ends the stream part-way.

use axum::body::Body;
use bytes::Bytes;
use futures::StreamExt;
use serde_json::Value;
use std::time::Duration;

/// One SSE event, marked when it carries content (a delta).
#[derive(Debug, Clone)]
pub(crate) struct SseEvent {
    pub(crate) bytes: Bytes,
    pub(crate) is_delta: bool,
}

impl SseEvent {
    /// `data: <json>` (OpenAI Chat style, no event name).
    pub(crate) fn data(v: &Value, is_delta: bool) -> Self {
        Self {
            bytes: Bytes::from(format!("data: {v}\n\n")),
            is_delta,
        }
    }

    /// `event: <name>` + `data: <json>` (Responses and Anthropic style).
    pub(crate) fn named(name: &str, v: &Value, is_delta: bool) -> Self {
        Self {
            bytes: Bytes::from(format!("event: {name}\ndata: {v}\n\n")),
            is_delta,
        }
    }

    /// The `data: [DONE]` terminator.
    pub(crate) fn done() -> Self {
        Self {
            bytes: Bytes::from_static(b"data: [DONE]\n\n"),
            is_delta: false,
        }
    }
}

/// The events kept when a stream is cut: everything up to and including
/// half of the deltas (at least one), or only the first event when there
/// are no deltas.
pub(crate) fn cut_events(mut events: Vec<SseEvent>) -> Vec<SseEvent> {
    let deltas: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.is_delta)
        .map(|(i, _)| i)
        .collect();
    let keep = match deltas.len() {
        0 => 1,
        n => deltas[(n / 2).max(1) - 1] + 1,
    };
    events.truncate(keep.min(events.len()));
    events
}

/// The streaming body: waits `delay`, then sends the events; with `cut`
/// only the first part of them (the response then ends without its final
/// event and the server closes the connection, see `Connection: close`).
pub(crate) fn sse_body(events: Vec<SseEvent>, delay: Option<Duration>, cut: bool) -> Body {
    let events = if cut { cut_events(events) } else { events };
    let head = futures::stream::once(async move {
        if let Some(d) = delay {
            tokio::time::sleep(d).await;
        }
    })
    .filter_map(|()| async { None::<Result<Bytes, std::io::Error>> });
    let body = futures::stream::iter(events.into_iter().map(|e| Ok(e.bytes)));
    Body::from_stream(head.chain(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(d: bool) -> SseEvent {
        SseEvent {
            bytes: Bytes::new(),
            is_delta: d,
        }
    }

    #[test]
    fn cut_keeps_half_of_the_deltas() {
        let evs = vec![ev(false), ev(true), ev(true), ev(true), ev(true), ev(false)];
        assert_eq!(cut_events(evs).len(), 3);
        let evs = vec![ev(false), ev(true), ev(false), ev(false)];
        assert_eq!(cut_events(evs).len(), 2);
        let evs = vec![ev(false), ev(false), ev(false)];
        assert_eq!(cut_events(evs).len(), 1);
        assert!(cut_events(Vec::new()).is_empty());
    }
}
