//! The bounded log of requests the mock server received.

use axum::http::{HeaderMap, Method, Uri};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};

/// Maximum number of recorded requests kept (oldest dropped first).
pub const MAX_RECORDED: usize = 10_000;
/// Maximum total body bytes kept (oldest dropped first).
pub const MAX_RECORDED_BYTES: usize = 256 * 1024 * 1024;

/// One request as the mock server received it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    /// Sequence number, increasing from 1 over the server's life.
    pub seq: u64,
    /// HTTP method (`POST`).
    pub method: String,
    /// Path (`/v1/chat/completions`).
    pub path: String,
    /// Query string, when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// Headers, names lowercase; repeated headers joined by `, `.
    pub headers: BTreeMap<String, String>,
    /// The JSON body (`null` when empty or not JSON).
    pub body: Value,
    /// The body as text when it was not JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_text: Option<String>,
}

impl RecordedRequest {
    /// A header value by (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// True for requests to a completion endpoint (chat, responses, messages).
    pub fn is_completion(&self) -> bool {
        self.method == "POST"
            && ["/chat/completions", "/responses", "/messages"]
                .iter()
                .any(|p| self.path.ends_with(p))
    }
}

#[derive(Debug, Default)]
struct Inner {
    entries: VecDeque<(RecordedRequest, usize)>,
    bytes: usize,
    next_seq: u64,
}

/// Thread-safe bounded request log.
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    inner: Mutex<Inner>,
}

impl Recorder {
    /// Records a request; `json` is the parsed body when it was JSON.
    pub(crate) fn record(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        raw: &[u8],
        json: Option<&Value>,
    ) {
        let mut map: BTreeMap<String, String> = BTreeMap::new();
        for (name, value) in headers {
            let v = String::from_utf8_lossy(value.as_bytes()).into_owned();
            map.entry(name.as_str().to_string())
                .and_modify(|existing| {
                    existing.push_str(", ");
                    existing.push_str(&v);
                })
                .or_insert(v);
        }
        let (body, body_text) = match json {
            Some(v) => (v.clone(), None),
            None if raw.is_empty() => (Value::Null, None),
            None => (Value::Null, Some(String::from_utf8_lossy(raw).into_owned())),
        };
        let size = raw.len() + 256;
        let mut inner = self.inner.lock();
        inner.next_seq += 1;
        let entry = RecordedRequest {
            seq: inner.next_seq,
            method: method.as_str().to_string(),
            path: uri.path().to_string(),
            query: uri.query().map(str::to_string),
            headers: map,
            body,
            body_text,
        };
        while !inner.entries.is_empty()
            && (inner.entries.len() >= MAX_RECORDED || inner.bytes + size > MAX_RECORDED_BYTES)
        {
            if let Some((_, s)) = inner.entries.pop_front() {
                inner.bytes = inner.bytes.saturating_sub(s);
            }
        }
        inner.bytes += size;
        inner.entries.push_back((entry, size));
    }

    /// Every recorded request, oldest first.
    pub(crate) fn all(&self) -> Vec<RecordedRequest> {
        self.inner
            .lock()
            .entries
            .iter()
            .map(|(r, _)| r.clone())
            .collect()
    }

    /// Forgets everything; returns how many were dropped.
    pub(crate) fn clear(&self) -> usize {
        let mut inner = self.inner.lock();
        let n = inner.entries.len();
        inner.entries.clear();
        inner.bytes = 0;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_and_caps_entries() {
        let r = Recorder::default();
        let mut h = HeaderMap::new();
        h.insert("X-Test", "a".parse().unwrap());
        h.append("x-test", "b".parse().unwrap());
        let uri: Uri = "/v1/chat/completions?x=1".parse().unwrap();
        for i in 0..(MAX_RECORDED + 5) {
            let v = serde_json::json!({ "i": i });
            r.record(&Method::POST, &uri, &h, b"{}", Some(&v));
        }
        let all = r.all();
        assert_eq!(all.len(), MAX_RECORDED);
        assert_eq!(all[0].body["i"], 5);
        assert_eq!(all[0].seq, 6);
        assert_eq!(all[0].header("X-TEST"), Some("a, b"));
        assert_eq!(all[0].query.as_deref(), Some("x=1"));
        assert!(all[0].is_completion());
        r.record(&Method::POST, &uri, &h, b"not json", None);
        assert_eq!(
            r.all().last().unwrap().body_text.as_deref(),
            Some("not json")
        );
        assert_eq!(r.clear(), MAX_RECORDED);
        assert!(r.all().is_empty());
    }
}
