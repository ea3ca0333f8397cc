//! A tiny HTTP/1.1 server for unit tests of clients of remote services
//! (security monitors, critics): every request is recorded and answered by
//! a function of its JSON body.

use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One recorded request: head (lower-cased) and the JSON body.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub headers: String,
    pub body: Value,
}

/// A server answering every request with `answer(body)` = (status, body,
/// delay in ms); returns its base URL and the request log.
pub(crate) async fn monitor(
    answer: impl Fn(&Value) -> (u16, String, u64) + Send + Sync + 'static,
) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let log = log.clone();
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let (head_end, length) = loop {
                    let Ok(n) = sock.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..pos]).to_ascii_lowercase();
                        let length = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        break (pos + 4, length);
                    }
                };
                while buf.len() < head_end + length {
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let headers = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
                let body: Value = serde_json::from_slice(&buf[head_end..head_end + length])
                    .unwrap_or(Value::Null);
                let (status, text, delay_ms) = answer(&body);
                log.lock().expect("log").push(Seen { headers, body });
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                let reply = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                    text.len()
                );
                let _ = sock.write_all(reply.as_bytes()).await;
            });
        }
    });
    (url, seen)
}
