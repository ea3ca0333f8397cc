//! Conversations: the owner of the one mutable state (an append-only event
//! log plus a few public fields), persisted in the reference's layout:
//! `<persistence root>/<conversation id hex>/base_state.json` and
//! `events/event-<index>-<event id>.json`.
//!
//! [`LocalConversation`] runs the agent in this process. It is a cheap
//! handle (`Clone`); `run` drives the agent loop until the agent finishes,
//! pauses, needs confirmation, gets stuck or fails, while `send_message`,
//! `pause` and `interrupt` may be called from other tasks at any time.

pub mod acp;
mod agent_hooks;
mod analysis;
pub mod branch;
mod child;
mod core;
mod critique;
mod error;
pub mod event_store;
mod hooks;
mod local;
mod pending;
mod pins;
mod plugins;
mod profile_llms;
mod step;
pub mod stuck;
pub mod view;
mod writer;

pub use error::{ConversationError, error_code};
pub use local::{ConversationOptions, EventCallback, LocalConversation, NOTHING_TO_CONDENSE};
pub use pins::{PINS_FILE, Pins};
pub use plugins::LoadPluginError;
pub use stuck::{StuckDetector, StuckPattern};
