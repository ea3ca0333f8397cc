//! [`MockLlmServer`]: the scripted LLM over HTTP, speaking OpenAI Chat
//! Completions, OpenAI Responses and Anthropic Messages (plain and SSE).
//!
//! Routes (each completion route with and without the `/v1` prefix):
//! `POST /v1/chat/completions`, `POST /v1/responses`, `POST /v1/messages`,
//! `GET /v1/models`, `GET /_mock/requests`, `DELETE /_mock/requests`,
//! `PUT /_mock/script` (replace the script), `GET /health`.

mod anthropic;
mod chat;
mod common;
mod handle;
mod recorder;
mod responses;
mod router;
mod sse;

pub use common::MOCK_MODEL;
pub use handle::{MockLlmHandle, MockLlmServer, MockServerError};
pub use recorder::{MAX_RECORDED, MAX_RECORDED_BYTES, RecordedRequest};
