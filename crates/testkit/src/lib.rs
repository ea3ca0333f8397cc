//! Scripted test LLM (in-process and as an OpenAI/Anthropic-compatible HTTP server).
//!
//! Tests of the agent, the server and the LLM client need a model that
//! answers predictably. This crate provides one, driven by a *script*:
//!
//! * [`ScriptedLlm`] implements [`openhands_llm::LlmBackend`] in process;
//! * [`MockLlmServer`] serves the same script over HTTP on `127.0.0.1`,
//!   speaking OpenAI Chat Completions, OpenAI Responses and Anthropic
//!   Messages, plain JSON and server-sent events, so real HTTP clients
//!   (ours, the `openai` Python SDK, LiteLLM) can be tested end to end.
//!
//! Both choose turns with the same logic ([`ScriptEngine`]).
//!
//! # Script format
//!
//! A script file is JSON:
//!
//! ```json
//! {
//!   "scripts": {
//!     "default": [
//!       {"tool_calls": [{"name": "terminal", "arguments": {"command": "ls"}}]},
//!       {"text": "All done."}
//!     ],
//!     "flaky": [
//!       {"error": {"status": 503}, "fail_times": 2, "text": "worked on the third try"}
//!     ]
//!   },
//!   "toolless_reply": {"text": "A short title"},
//!   "exhausted_reply": {"text": "Script exhausted."}
//! }
//! ```
//!
//! A bare array `[TURN, ...]` is shorthand for `{"scripts": {"default": [...]}}`.
//!
//! **Which script.** The first `[[mock:script:NAME]]` marker found in a user
//! message selects `scripts.NAME` (NAME: ASCII letters, digits, `_`, `.`,
//! `-`); without a marker, `default`. A marker
//! naming a script the file does not have is answered with HTTP 400 (code
//! `unknown_script`) listing the available names.
//!
//! **Which turn.** Selection is stateless: the position is the number of
//! assistant turns already in the request's history (Chat: messages with
//! role `assistant`; Responses: each maximal run of assistant `message`,
//! `function_call` and `reasoning` items in `input`; Anthropic: `assistant`
//! messages). A resumed, retried or concurrent conversation therefore always
//! gets the reply for its position. Past the end of the script the answer is
//! `exhausted_reply` (default: text `Script exhausted.`).
//!
//! **Tool-less requests** (no `tools` offered, e.g. title generation) are
//! answered with `toolless_reply` when the file sets one, without looking at
//! the script; otherwise they are selected like any request.
//!
//! **Turn fields** (all optional, combinable):
//!
//! | field | meaning |
//! |---|---|
//! | `text` | assistant text |
//! | `reasoning` | reasoning text: Chat `reasoning_content`; Responses `reasoning` item with a summary; Anthropic `thinking` block with a signature |
//! | `tool_calls` | `[{"name", "arguments", "id"}]`; `arguments` is an object (sent as JSON text) or a string sent verbatim (so invalid JSON can be scripted); `id` defaults to `call_<position>_<index>_<8 random hex>`; several entries are parallel calls |
//! | `error` | `{"status": 500, "message", "type", "code", "retry_after"}`: answer with that status and the API's error body; `retry_after` (seconds) sets `Retry-After`; `"code": "context_length_exceeded"` scripts a context-window error |
//! | `fail_times` | with `error`: only the first N attempts at this (script, position, conversation) fail, later ones get the turn's normal reply; conversations are told apart by `prompt_cache_key`, else the `x-litellm-session-id` header, else the first user message's text (in process: `LlmRequest::conversation_id`, else the first user message) |
//! | `delay_ms` | wait before answering (streams: headers first, then the wait, then the first event) |
//! | `usage` | `{"prompt_tokens": 100, "completion_tokens": 10, "cache_read_tokens": 0, "cache_write_tokens": 0, "reasoning_tokens": 0}` (the defaults); `prompt_tokens` is the whole prompt including cached parts |
//! | `raw_body` | answer this body verbatim with status 200 (in process: [`openhands_llm::LlmError::MalformedResponse`]) |
//! | `cut_stream` | when streaming, send about half of the content deltas, then end the response without the final event (`finish_reason` chunk and `[DONE]`; `response.completed`; `message_stop`) and close the connection; in process: the callback gets half of the pieces, then `LlmError::MalformedResponse` |
//! | `chunk_chars` | size in characters of streamed pieces (default 8; 0 = one piece) |
//! | `comment` | ignored; for people reading the script |
//!
//! Unknown fields are rejected when the script is loaded, with the JSON path
//! of the offending turn in the message ([`ScriptLoadError`]).
//!
//! # Example
//!
//! ```no_run
//! use openhands_testkit::{MockLlmServer, Script, ScriptedLlm, Turn};
//! use serde_json::json;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let script = Script::from_turns([
//!     Turn::tool_call("terminal", json!({"command": "ls"})),
//!     Turn::text("Done."),
//! ]);
//! // in process
//! let llm = std::sync::Arc::new(ScriptedLlm::new(script.clone()));
//! // over HTTP
//! let server = MockLlmServer::start(script, 0).await?;
//! let base_url = server.base_url(); // http://127.0.0.1:PORT/v1
//! # let _ = (llm, base_url);
//! server.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! # Map of the crate
//!
//! What lives where (moved from ARCHITECTURE.md, which keeps the one-page map): the scripted fake
//! LLM: in-process `ScriptedLlm` backend and `MockLlmServer` (OpenAI/Responses/Anthropic over HTTP,
//! plain + SSE) from one JSON script format; `kube_api`: a stand-in Kubernetes API server serving
//! the agent-sandbox contract (Secret, Sandbox, SandboxClaim; a small controller; injected errors)
//! for the Kubernetes engine and `AgentSandboxWorkspace` tests; `openai_auth`: a stand-in of
//! OpenAI's auth server (browser sign-in with PKCE, device code, code exchange, refresh) for the
//! ChatGPT subscription tests
//!
//! shipped, used by every end-to-end test and the offline demo (`openhands mock-llm`).

pub mod cloud;
pub mod fixtures;
pub mod kube_api;
pub mod openai_auth;
pub mod reply;
pub mod script;
pub mod scripted_llm;
pub mod selection;
pub mod server;
pub mod site;
pub mod tls;

pub use reply::{Reply, ReplyToolCall};
pub use script::{
    Script, ScriptLoadError, ScriptToolCall, ScriptUsage, ToolArguments, Turn, TurnError,
};
pub use scripted_llm::ScriptedLlm;
pub use selection::{
    Outcome, RequestView, ScriptEngine, Selection, TurnSource, ViewMessage, ViewRole,
};
pub use server::{MOCK_MODEL, MockLlmHandle, MockLlmServer, MockServerError, RecordedRequest};
