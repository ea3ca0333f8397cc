//! The AWS event-stream binary framing (`application/vnd.amazon.eventstream`)
//! ConverseStream answers in: each message is a 12-byte prelude (total
//! length, headers length, CRC32 of those 8 bytes), typed headers
//! (`:event-type`, `:message-type`, `:exception-type`, ...), a payload and
//! a CRC32 of everything before it. Both checksums are verified.

use std::collections::VecDeque;

/// Largest message accepted (AWS's own limit is 16 MiB).
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

const PRELUDE: usize = 12;
const MIN_MESSAGE: usize = PRELUDE + 4;

/// A framing error: the stream cannot be trusted past it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The prelude's checksum does not match.
    #[error("event-stream prelude checksum mismatch")]
    PreludeCrc,
    /// The message's checksum does not match.
    #[error("event-stream message checksum mismatch")]
    MessageCrc,
    /// A length field is impossible.
    #[error("event-stream message length {0} is invalid")]
    Length(usize),
    /// A header cannot be read.
    #[error("event-stream header is malformed: {0}")]
    Header(&'static str),
}

/// A header value (the types the framing defines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderValue {
    /// Types 0 and 1.
    Bool(bool),
    /// Types 2 to 5 and 8 (timestamp, milliseconds).
    Int(i64),
    /// Type 6.
    Bytes(Vec<u8>),
    /// Type 7.
    String(String),
    /// Type 9.
    Uuid([u8; 16]),
}

/// One decoded message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Headers in order.
    pub headers: Vec<(String, HeaderValue)>,
    /// The payload bytes.
    pub payload: Vec<u8>,
}

impl Message {
    /// A string header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find_map(|(n, v)| match v {
            HeaderValue::String(s) if n == name => Some(s.as_str()),
            _ => None,
        })
    }
}

fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn take<'a>(b: &mut &'a [u8], n: usize) -> Result<&'a [u8], FrameError> {
    if b.len() < n {
        return Err(FrameError::Header("truncated"));
    }
    let (head, rest) = b.split_at(n);
    *b = rest;
    Ok(head)
}

fn int(b: &[u8]) -> i64 {
    let mut v: i64 = if b.first().is_some_and(|x| x & 0x80 != 0) {
        -1
    } else {
        0
    };
    for x in b {
        v = (v << 8) | i64::from(*x);
    }
    v
}

fn parse_headers(mut b: &[u8]) -> Result<Vec<(String, HeaderValue)>, FrameError> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let n = take(&mut b, 1)?[0] as usize;
        let name = std::str::from_utf8(take(&mut b, n)?)
            .map_err(|_| FrameError::Header("name is not UTF-8"))?
            .to_string();
        let value = match take(&mut b, 1)?[0] {
            0 => HeaderValue::Bool(true),
            1 => HeaderValue::Bool(false),
            2 => HeaderValue::Int(int(take(&mut b, 1)?)),
            3 => HeaderValue::Int(int(take(&mut b, 2)?)),
            4 => HeaderValue::Int(int(take(&mut b, 4)?)),
            5 | 8 => HeaderValue::Int(int(take(&mut b, 8)?)),
            t @ (6 | 7) => {
                let len = take(&mut b, 2)?;
                let len = u16::from_be_bytes([len[0], len[1]]) as usize;
                let raw = take(&mut b, len)?.to_vec();
                if t == 6 {
                    HeaderValue::Bytes(raw)
                } else {
                    HeaderValue::String(
                        String::from_utf8(raw)
                            .map_err(|_| FrameError::Header("string is not UTF-8"))?,
                    )
                }
            }
            9 => {
                let mut u = [0u8; 16];
                u.copy_from_slice(take(&mut b, 16)?);
                HeaderValue::Uuid(u)
            }
            _ => return Err(FrameError::Header("unknown value type")),
        };
        out.push((name, value));
    }
    Ok(out)
}

/// Incremental decoder: feed bytes as they arrive, take whole messages.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: VecDeque<u8>,
}

impl Decoder {
    /// An empty decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends received bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend(bytes);
    }

    /// Bytes received but not yet part of a whole message.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// The next whole message, `None` until one has arrived.
    pub fn next_message(&mut self) -> Result<Option<Message>, FrameError> {
        if self.buf.len() < PRELUDE {
            return Ok(None);
        }
        let prelude: Vec<u8> = self.buf.range(..PRELUDE).copied().collect();
        if crc32fast::hash(&prelude[..8]) != be_u32(&prelude[8..12]) {
            return Err(FrameError::PreludeCrc);
        }
        let total = be_u32(&prelude[..4]) as usize;
        let headers_len = be_u32(&prelude[4..8]) as usize;
        if !(MIN_MESSAGE..=MAX_MESSAGE_BYTES).contains(&total) || headers_len > total - MIN_MESSAGE
        {
            return Err(FrameError::Length(total));
        }
        if self.buf.len() < total {
            return Ok(None);
        }
        let raw: Vec<u8> = self.buf.drain(..total).collect();
        if crc32fast::hash(&raw[..total - 4]) != be_u32(&raw[total - 4..]) {
            return Err(FrameError::MessageCrc);
        }
        let headers = parse_headers(&raw[PRELUDE..PRELUDE + headers_len])?;
        Ok(Some(Message {
            headers,
            payload: raw[PRELUDE + headers_len..total - 4].to_vec(),
        }))
    }
}

/// Encodes one message with string headers (the framing's writer side, for
/// stand-in servers in tests and the round-trip test).
pub fn encode(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    for (name, value) in headers {
        h.push(name.len() as u8);
        h.extend_from_slice(name.as_bytes());
        h.push(7);
        h.extend_from_slice(&(value.len() as u16).to_be_bytes());
        h.extend_from_slice(value.as_bytes());
    }
    let total = PRELUDE + h.len() + payload.len() + 4;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&(total as u32).to_be_bytes());
    out.extend_from_slice(&(h.len() as u32).to_be_bytes());
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_in_pieces() {
        let a = encode(
            &[
                (":event-type", "contentBlockDelta"),
                (":message-type", "event"),
            ],
            br#"{"delta":{"text":"hi"}}"#,
        );
        let b = encode(&[(":event-type", "messageStop")], b"{}");
        let all = [a.clone(), b].concat();
        let mut d = Decoder::new();
        let mut got = Vec::new();
        for chunk in all.chunks(7) {
            d.push(chunk);
            while let Some(m) = d.next_message().unwrap() {
                got.push(m);
            }
        }
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].header(":event-type"), Some("contentBlockDelta"));
        assert_eq!(got[0].header(":message-type"), Some("event"));
        assert_eq!(got[0].payload, br#"{"delta":{"text":"hi"}}"#);
        assert_eq!(got[1].header(":event-type"), Some("messageStop"));
        assert_eq!(d.pending(), 0);
    }

    /// A message built by hand with every header type: each decodes.
    #[test]
    fn every_header_type_decodes() {
        let mut h = Vec::new();
        let mut add = |name: &str, t: u8, v: &[u8]| {
            h.push(name.len() as u8);
            h.extend_from_slice(name.as_bytes());
            h.push(t);
            h.extend_from_slice(v);
        };
        add("t", 0, &[]);
        add("f", 1, &[]);
        add("b", 2, &[0xff]);
        add("s", 3, &[0x01, 0x00]);
        add("i", 4, &[0, 0, 0, 7]);
        add("l", 5, &[0, 0, 0, 0, 0, 0, 0, 9]);
        add("y", 6, &[0, 2, 1, 2]);
        add("ts", 8, &[0, 0, 0, 0, 0, 0, 0, 1]);
        add("u", 9, &[3; 16]);
        let total = PRELUDE + h.len() + 4;
        let mut m = Vec::new();
        m.extend_from_slice(&(total as u32).to_be_bytes());
        m.extend_from_slice(&(h.len() as u32).to_be_bytes());
        let c = crc32fast::hash(&m);
        m.extend_from_slice(&c.to_be_bytes());
        m.extend_from_slice(&h);
        let c = crc32fast::hash(&m);
        m.extend_from_slice(&c.to_be_bytes());
        let mut d = Decoder::new();
        d.push(&m);
        let msg = d.next_message().unwrap().unwrap();
        let values: Vec<HeaderValue> = msg.headers.into_iter().map(|(_, v)| v).collect();
        assert_eq!(
            values,
            vec![
                HeaderValue::Bool(true),
                HeaderValue::Bool(false),
                HeaderValue::Int(-1),
                HeaderValue::Int(256),
                HeaderValue::Int(7),
                HeaderValue::Int(9),
                HeaderValue::Bytes(vec![1, 2]),
                HeaderValue::Int(1),
                HeaderValue::Uuid([3; 16]),
            ]
        );
    }

    #[test]
    fn corrupt_frames_are_refused() {
        let good = encode(&[(":event-type", "x")], b"{}");
        let mut bad_prelude = good.clone();
        bad_prelude[1] ^= 1;
        let mut d = Decoder::new();
        d.push(&bad_prelude);
        assert_eq!(d.next_message(), Err(FrameError::PreludeCrc));
        let mut bad_body = good.clone();
        let n = bad_body.len();
        bad_body[n - 6] ^= 1;
        let mut d = Decoder::new();
        d.push(&bad_body);
        assert_eq!(d.next_message(), Err(FrameError::MessageCrc));
        // An absurd length is refused before waiting for it.
        let mut huge = Vec::new();
        huge.extend_from_slice(&(u32::MAX).to_be_bytes());
        huge.extend_from_slice(&0u32.to_be_bytes());
        let c = crc32fast::hash(&huge);
        huge.extend_from_slice(&c.to_be_bytes());
        let mut d = Decoder::new();
        d.push(&huge);
        assert!(matches!(d.next_message(), Err(FrameError::Length(_))));
        // A partial message waits.
        let mut d = Decoder::new();
        d.push(&good[..good.len() - 1]);
        assert_eq!(d.next_message(), Ok(None));
    }
}
