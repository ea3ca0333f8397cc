//! JSON-RPC 2.0 over newline-delimited stdio, as ACP uses it.
//!
//! One reader task owns the peer's output: responses complete the pending
//! request with the same id, requests from the peer are answered by the
//! [`IncomingHandler`], notifications go to a channel in arrival order (so a
//! turn's updates are all queued before its prompt response completes).
//! Lines that are not JSON objects are skipped (some ACP servers print banners
//! on standard output). When the peer's output ends every pending request
//! fails with [`RpcError::Closed`].

use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// Longest line read from the peer (a larger message closes the connection).
const MAX_LINE: usize = 64 * 1024 * 1024;
/// How long one write to the peer's input may take.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// Errors of one JSON-RPC exchange.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RpcError {
    /// The peer answered with a JSON-RPC error.
    #[error("{message} (code {code}){}", data_suffix(.data))]
    Remote {
        /// JSON-RPC error code.
        code: i64,
        /// Error message.
        message: String,
        /// Optional error data.
        data: Option<Value>,
    },
    /// The connection is gone (the peer exited or closed its output).
    #[error("{0}")]
    Closed(String),
    /// No answer in time.
    #[error("ACP request '{method}' timed out after {secs:.0}s")]
    Timeout {
        /// The request's method.
        method: String,
        /// The limit in seconds.
        secs: f64,
    },
    /// The request could not be written.
    #[error("cannot write to the ACP server: {0}")]
    Write(String),
}

fn data_suffix(data: &Option<Value>) -> String {
    match data {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => format!(": {s}"),
        Some(v) => format!(": {v}"),
    }
}

/// Answers the peer's requests (`session/request_permission`, `fs/*`, ...):
/// `Ok(result)` or `Err((code, message))`.
pub type IncomingHandler =
    Arc<dyn Fn(&str, &Value) -> Result<Value, (i64, String)> + Send + Sync + 'static>;

/// A notification from the peer: method and params.
#[derive(Debug, Clone)]
pub struct Notification {
    /// The method (`session/update`, ...).
    pub method: String,
    /// Its params.
    pub params: Value,
}

type Pending = HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>;

struct Shared {
    pending: Mutex<Pending>,
    next_id: AtomicU64,
    writer: tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>,
    closed: CancellationToken,
    close_reason: Mutex<Option<String>>,
}

/// A JSON-RPC connection to one peer. Cheap to clone.
#[derive(Clone)]
pub struct RpcConnection {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for RpcConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcConnection")
            .field("closed", &self.shared.closed.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl RpcConnection {
    /// Starts the connection on the peer's output `reader` and input
    /// `writer`; notifications arrive on the returned receiver.
    pub fn start(
        reader: impl AsyncRead + Send + Unpin + 'static,
        writer: impl AsyncWrite + Send + Unpin + 'static,
        handler: IncomingHandler,
    ) -> (Self, mpsc::UnboundedReceiver<Notification>) {
        let shared = Arc::new(Shared {
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            writer: tokio::sync::Mutex::new(Box::new(writer)),
            closed: CancellationToken::new(),
            close_reason: Mutex::new(None),
        });
        let (tx, rx) = mpsc::unbounded_channel();
        let conn = Self { shared };
        tokio::spawn(conn.clone().read_loop(reader, handler, tx));
        (conn, rx)
    }

    /// Whether the peer's output has ended.
    pub fn is_closed(&self) -> bool {
        self.shared.closed.is_cancelled()
    }

    /// Why the connection closed, once it has.
    pub fn close_reason(&self) -> Option<String> {
        self.shared.close_reason.lock().clone()
    }

    /// Marks the connection closed with `reason` (first reason wins) and
    /// fails every pending request.
    pub fn close(&self, reason: &str) {
        {
            let mut r = self.shared.close_reason.lock();
            if r.is_none() {
                *r = Some(reason.to_string());
            }
        }
        self.shared.closed.cancel();
        let pending: Vec<_> = self.shared.pending.lock().drain().collect();
        let reason = self.close_reason().unwrap_or_else(|| reason.to_string());
        for (_, tx) in pending {
            let _ = tx.send(Err(RpcError::Closed(reason.clone())));
        }
    }

    /// Sends a request and waits up to `timeout` for its answer.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, RpcError> {
        let (id, rx) = self.begin(method, params).await?;
        self.finish(method, id, rx, timeout).await
    }

    /// Sends a request and returns a handle to await its answer later.
    pub async fn begin(
        &self,
        method: &str,
        params: Value,
    ) -> Result<(u64, oneshot::Receiver<Result<Value, RpcError>>), RpcError> {
        if self.is_closed() {
            return Err(RpcError::Closed(
                self.close_reason()
                    .unwrap_or_else(|| "ACP connection closed".into()),
            ));
        }
        let id = self.shared.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = oneshot::channel();
        self.shared.pending.lock().insert(id, tx);
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if let Err(e) = self.write(&msg).await {
            self.shared.pending.lock().remove(&id);
            return Err(e);
        }
        Ok((id, rx))
    }

    /// Waits up to `timeout` for the answer to request `id`.
    pub async fn finish(
        &self,
        method: &str,
        id: u64,
        rx: oneshot::Receiver<Result<Value, RpcError>>,
        timeout: Duration,
    ) -> Result<Value, RpcError> {
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(RpcError::Closed(
                self.close_reason()
                    .unwrap_or_else(|| "ACP connection closed".into()),
            )),
            Err(_) => {
                self.shared.pending.lock().remove(&id);
                Err(RpcError::Timeout {
                    method: method.to_string(),
                    secs: timeout.as_secs_f64(),
                })
            }
        }
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), RpcError> {
        self.write(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await
    }

    async fn write(&self, msg: &Value) -> Result<(), RpcError> {
        let mut line = serde_json::to_vec(msg).map_err(|e| RpcError::Write(e.to_string()))?;
        line.push(b'\n');
        let fut = async {
            let mut w = self.shared.writer.lock().await;
            w.write_all(&line).await?;
            w.flush().await
        };
        match tokio::time::timeout(WRITE_TIMEOUT, fut).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(RpcError::Write(e.to_string())),
            Err(_) => Err(RpcError::Write("write timed out".into())),
        }
    }

    async fn read_loop(
        self,
        reader: impl AsyncRead + Send + Unpin + 'static,
        handler: IncomingHandler,
        notifications: mpsc::UnboundedSender<Notification>,
    ) {
        let mut reader = BufReader::new(reader);
        let mut buf = Vec::new();
        let reason = loop {
            buf.clear();
            let read = tokio::select! {
                r = read_line(&mut reader, &mut buf) => r,
                _ = self.shared.closed.cancelled() => break "ACP connection closed".to_string(),
            };
            match read {
                Ok(0) => break "ACP server closed its output (process exited)".to_string(),
                Ok(_) => {}
                Err(e) => break format!("reading from the ACP server failed: {e}"),
            }
            let text = String::from_utf8_lossy(&buf);
            let line = text.trim();
            if !line.starts_with('{') {
                if !line.is_empty() {
                    tracing::debug!(target: "openhands_acp::stdout", "{line}");
                }
                continue;
            }
            let Ok(Value::Object(msg)) = serde_json::from_str::<Value>(line) else {
                tracing::debug!("ACP: skipped a line that is not JSON-RPC");
                continue;
            };
            self.dispatch(msg, &handler, &notifications).await;
        };
        self.close(&reason);
    }

    async fn dispatch(
        &self,
        msg: Map<String, Value>,
        handler: &IncomingHandler,
        notifications: &mpsc::UnboundedSender<Notification>,
    ) {
        let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
        let id = msg.get("id").cloned().filter(|v| !v.is_null());
        match (method, id) {
            (Some(method), Some(id)) => {
                let params = msg.get("params").cloned().unwrap_or(Value::Null);
                let reply = match handler(&method, &params) {
                    Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    Err((code, message)) => json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": code, "message": message}}),
                };
                if let Err(e) = self.write(&reply).await {
                    tracing::warn!(%method, error = %e, "ACP: could not answer a request");
                }
            }
            (Some(method), None) => {
                let params = msg.get("params").cloned().unwrap_or(Value::Null);
                let _ = notifications.send(Notification { method, params });
            }
            (None, Some(id)) => {
                let Some(id) = id.as_u64() else { return };
                let Some(tx) = self.shared.pending.lock().remove(&id) else {
                    return;
                };
                let result = match msg.get("error").filter(|e| !e.is_null()) {
                    Some(err) => Err(RpcError::Remote {
                        code: err.get("code").and_then(Value::as_i64).unwrap_or(-32603),
                        message: err
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        data: err.get("data").cloned(),
                    }),
                    None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
                };
                let _ = tx.send(result);
            }
            (None, None) => {}
        }
    }
}

/// Reads one line (up to [`MAX_LINE`] bytes) into `buf`; 0 at end of input.
async fn read_line(
    reader: &mut (impl AsyncBufReadExt + Unpin),
    buf: &mut Vec<u8>,
) -> std::io::Result<usize> {
    let mut total = 0;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(total);
        }
        let (chunk, done) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (&available[..=i], true),
            None => (available, false),
        };
        let n = chunk.len();
        if buf.len() + n > MAX_LINE {
            return Err(std::io::Error::other("message larger than the line limit"));
        }
        buf.extend_from_slice(chunk);
        reader.consume(n);
        total += n;
        if done {
            return Ok(total);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, BufReader};

    fn refuse_all() -> IncomingHandler {
        Arc::new(|_, _| Err((-32601, "no".into())))
    }

    #[tokio::test]
    async fn requests_are_matched_to_answers_and_noise_is_skipped() {
        let (ours, theirs) = tokio::io::duplex(4096);
        let (r, w) = tokio::io::split(ours);
        let (conn, mut notes) = RpcConnection::start(r, w, refuse_all());
        let (pr, mut pw) = tokio::io::split(theirs);
        let peer = tokio::spawn(async move {
            let mut lines = BufReader::new(pr).lines();
            let line = lines.next_line().await.unwrap().unwrap();
            let req: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(req["method"], "initialize");
            let id = req["id"].clone();
            pw.write_all(b"banner text\n").await.unwrap();
            pw.write_all(br#"{"jsonrpc":"2.0","method":"session/update","params":{"x":1}}"#)
                .await
                .unwrap();
            pw.write_all(b"\n").await.unwrap();
            let resp = json!({"jsonrpc":"2.0","id":id,"result":{"ok":true}});
            pw.write_all(format!("{resp}\n").as_bytes()).await.unwrap();
            // A request from the peer is answered by the handler.
            pw.write_all(
                b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"fs/read_text_file\",\"params\":{}}\n",
            )
            .await
            .unwrap();
            let answer = lines.next_line().await.unwrap().unwrap();
            let answer: Value = serde_json::from_str(&answer).unwrap();
            assert_eq!(answer["id"], 7);
            assert_eq!(answer["error"]["code"], -32601);
        });
        let out = conn
            .request("initialize", json!({}), Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(out, json!({"ok": true}));
        let n = notes.recv().await.unwrap();
        assert_eq!(n.method, "session/update");
        peer.await.unwrap();
    }

    #[tokio::test]
    async fn a_closed_peer_fails_pending_requests_and_errors_carry_the_code() {
        let (ours, theirs) = tokio::io::duplex(4096);
        let (r, w) = tokio::io::split(ours);
        let (conn, _notes) = RpcConnection::start(r, w, refuse_all());
        let (pr, mut pw) = tokio::io::split(theirs);
        let peer = tokio::spawn(async move {
            let mut lines = BufReader::new(pr).lines();
            let line = lines.next_line().await.unwrap().unwrap();
            let req: Value = serde_json::from_str(&line).unwrap();
            let resp =
                json!({"jsonrpc":"2.0","id":req["id"],"error":{"code":-32000,"message":"auth"}});
            pw.write_all(format!("{resp}\n").as_bytes()).await.unwrap();
            let _ = lines.next_line().await;
            drop(pw);
        });
        let e = conn
            .request("a", json!({}), Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(matches!(e, RpcError::Remote { code: -32000, .. }), "{e:?}");
        let (id, rx) = conn.begin("b", json!({})).await.unwrap();
        peer.await.unwrap();
        let e = conn
            .finish("b", id, rx, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(matches!(e, RpcError::Closed(_)), "{e:?}");
        assert!(conn.is_closed());
        let e = conn
            .request("c", json!({}), Duration::from_millis(50))
            .await
            .unwrap_err();
        assert!(matches!(e, RpcError::Closed(_)));
    }

    #[tokio::test]
    async fn an_unanswered_request_times_out() {
        let (ours, _theirs) = tokio::io::duplex(4096);
        let (r, w) = tokio::io::split(ours);
        let (conn, _notes) = RpcConnection::start(r, w, refuse_all());
        let e = conn
            .request("x", json!({}), Duration::from_millis(50))
            .await
            .unwrap_err();
        assert!(matches!(e, RpcError::Timeout { .. }), "{e}");
    }
}
