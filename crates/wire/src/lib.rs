//! Wire types of the OpenHands agent SDK.
//!
//! Everything in this crate serializes to exactly the JSON the reference
//! implementation (openhands-sdk / openhands-agent-server 1.58.2) reads and
//! writes: events with their `kind` discriminator, LLM messages, the LLM and
//! agent configuration clients send, conversation state (`base_state.json`)
//! and metrics. It deliberately depends on no async runtime so that any
//! client, tool or storage layer can use it.
//!
//! Conventions shared by every type here:
//! * `None` fields are omitted on output (`exclude_none=True` in the reference);
//! * fields this crate does not model are kept in an `extra` map and written
//!   back unchanged, so data from newer peers survives a round trip;
//! * event ids are dashed UUID4 strings and timestamps are naive local
//!   ISO-8601 strings (see [`time`]).
//!
//! # Map of the crate
//!
//! What lives where (moved from ARCHITECTURE.md, which keeps the one-page map): every JSON type
//! that crosses a process boundary: events (`Event` = common fields + `EventBody`, `kind`
//! discriminator), `Message`/`Content`, `LlmConfig`, `AgentSpec`, `ConversationState`
//! (`base_state.json`), metrics, tool definitions; event → LLM message conversion
//!
//! serde only, no tokio. Unknown `kind`s and unknown fields are kept verbatim
//! (`EventBody::Unknown`, `extra` maps) so data from newer peers round-trips. Round-trip tested
//! against the reference's captured events.

pub mod agent;
pub mod content;
pub mod convert;
pub mod event;
pub mod ids;
pub mod llm_config;
pub mod message;
pub mod metrics;
pub mod secret;
pub mod state;
pub mod time;
pub mod tool;

pub use content::{Content, ImageContent, TextContent};
pub use event::{Event, EventBody, SourceType};
pub use llm_config::LlmConfig;
pub use message::{Message, MessageToolCall, Role};
pub use secret::SecretString;
