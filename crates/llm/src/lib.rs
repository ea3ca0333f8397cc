//! LLM abstraction of the OpenHands agent SDK.
//!
//! [`Llm`] couples an [`LlmConfig`](openhands_wire::LlmConfig) with an
//! [`LlmBackend`] (the real HTTP providers, or a scripted fake in tests),
//! adds retries with exponential backoff, error classification and metrics.
//! Providers: OpenAI Chat Completions (and every OpenAI-compatible server),
//! OpenAI Responses, Anthropic Messages.

pub mod error;
pub mod types;

pub use error::LlmError;
pub use types::{LlmBackend, LlmRequest, LlmResponse, StreamDelta, TokenCallback, ToolSchema};
