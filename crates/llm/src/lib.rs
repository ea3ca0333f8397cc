//! LLM abstraction of the OpenHands agent SDK.
//!
//! [`Llm`] couples an [`LlmConfig`](openhands_wire::LlmConfig) with an
//! [`LlmBackend`] (the real HTTP providers, or a scripted fake in tests),
//! adds retries with exponential backoff, error classification and metrics.
//! Providers: OpenAI Chat Completions (and every OpenAI-compatible server),
//! OpenAI Responses, Anthropic Messages, AWS Bedrock Converse, Gemini's own
//! API and Vertex AI (Gemini, Anthropic); [`routing`] picks one from the
//! model name, `base_url` and `api_mode`. Models without native function
//! calling get tools described in the prompt ([`non_native`]).
//! [`router`] is the reference's router LLM (one configuration whose
//! members answer by a strategy); [`LlmRegistry`] holds the LLMs of a
//! conversation by usage id and their metrics.
//!
//! # Map of the crate
//!
//! What lives where (moved from ARCHITECTURE.md, which keeps the one-page map): `catalog` (the one
//! model table: LiteLLM's `model_prices_and_context_window.json` shipped in `data/` and refreshed by
//! `scripts/refresh_model_prices.sh`; `table` parses it, `lookup` applies LiteLLM's name rules,
//! `cost` its pricing — cache reads/writes, reasoning, tiers, off-peak —, `listing` the
//! `/api/llm/*` answers; cost accounting, context windows and output limits read it);
//! `provider_env` (the one reader of provider key/endpoint/version variables, LiteLLM's names;
//! explicit settings win); `bedrock` (`auth`: LiteLLM's model id / region / endpoint /
//! credential rules; `sigv4`: request signing; `converse`: Converse bodies, replies and stream
//! events; `event_stream`: the AWS binary framing); `gemini` (generateContent bodies, replies, SSE
//! chunks; thought signatures carried in the tool call id); `vertex` (application-default credentials: service-account JWT or gcloud user refresh token →
//! access token, cached; Vertex URLs for Gemini and Anthropic); `completion_log` (`log_completions` records, to files or a sink); `subscription` (ChatGPT
//! sign-in: `store` keeps the tokens in the reference's file, `openai` signs in by device code,
//! refreshes and shapes calls for the Codex backend, `browser` signs in in a browser (PKCE, loopback
//! redirect), `consent` shows the terms notice first; `install` lets a host supply its tokens); `Llm` = `LlmConfig` + `LlmBackend` (HTTP providers: OpenAI Chat Completions, OpenAI
//! Responses, Anthropic Messages, Bedrock, Gemini, Vertex AI) + retries + error classification + metrics; `fallback` (the
//! reference's `FallbackStrategy`: profiles tried in order after transient failures, loaded by a
//! `FallbackLoader` the SDK/server installs); `router` (the reference's `RouterLLM`: an LLM JSON
//! with `router_name` + `llms_for_routing`, kept verbatim in `extra`; `multimodal_router` sends
//! image or oversized turns to `primary`, the rest to `secondary`; `random_router`; members answer
//! with their own retries and metrics); `LlmRegistry` (a conversation's LLMs by usage id)
//!
//! Own thin client on reqwest + eventsource-stream: the gateway needs the same wire types
//! server-side and the reference's request shapes need byte-level control (see
//! `../shared/research/ecosystem.md` §5).

pub mod anthropic;
pub mod bedrock;
pub mod catalog;
pub mod classify;
pub mod common;
pub mod completion_log;
pub mod error;
pub mod fallback;
pub mod gemini;
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
pub mod subscription;
pub mod telemetry;
pub mod types;
pub mod vertex;

pub use error::LlmError;
pub use http::HttpBackend;
pub use llm::{FallbackLoadError, FallbackLoader, Llm};
pub use model_info::ModelFeatures;
pub use registry::{LlmRegistry, RegistryError};
pub use retry::{RetryEvent, RetryListener};
pub use router::{Router, Strategy as RouterStrategy};
pub use routing::{ApiKind, Route};
pub use types::{LlmBackend, LlmRequest, LlmResponse, StreamDelta, TokenCallback, ToolSchema};
