//! LLM abstraction of the OpenHands agent SDK.
//!
//! [`Llm`] couples an [`LlmConfig`](openhands_wire::LlmConfig) with an
//! [`LlmBackend`] (the real HTTP providers, or a scripted fake in tests),
//! adds retries with exponential backoff, error classification and metrics.
//! Providers: OpenAI Chat Completions (and every OpenAI-compatible server),
//! OpenAI Responses, Anthropic Messages; [`routing`] picks one from the
//! model name, `base_url` and `api_mode`. Models without native function
//! calling get tools described in the prompt ([`non_native`]).
//! [`router`] is the reference's router LLM (one configuration whose
//! members answer by a strategy); [`LlmRegistry`] holds the LLMs of a
//! conversation by usage id and their metrics.

pub mod anthropic;
pub mod catalog;
pub mod classify;
pub mod common;
pub mod completion_log;
pub mod error;
pub mod fallback;
pub mod http;
pub mod llm;
pub mod model_info;
pub mod non_native;
pub mod openai_chat;
pub mod openai_responses;
pub mod provider_env;
pub mod registry;
pub mod retry;
pub mod router;
pub mod routing;
pub mod telemetry;
pub mod types;

pub use error::LlmError;
pub use http::HttpBackend;
pub use llm::{FallbackLoader, Llm};
pub use model_info::ModelFeatures;
pub use registry::{LlmRegistry, RegistryError};
pub use retry::{RetryEvent, RetryListener};
pub use router::{Router, Strategy as RouterStrategy};
pub use routing::{ApiKind, Route};
pub use types::{LlmBackend, LlmRequest, LlmResponse, StreamDelta, TokenCallback, ToolSchema};
