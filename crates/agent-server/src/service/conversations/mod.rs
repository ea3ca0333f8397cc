//! Conversations of the agent server: the service that creates, loads,
//! runs, evicts and deletes them, their stored metadata (`meta.json`), the
//! request bodies of the conversation routes, the event hub feeding the
//! event WebSocket, and event search.

pub mod additions;
pub mod agent_settings;
pub mod bindings;
pub mod catalog;
pub mod children;
pub mod config;
pub mod error;
pub mod goal;
pub mod hub;
pub mod info;
pub mod info_cache;
pub mod live;
pub mod observability;
pub mod sandboxing;
pub mod search;
pub mod service;
pub mod start;
pub mod stored;

pub use config::ServiceConfig;
pub use error::ServiceError;
pub use live::Live;
pub use openhands_protocol::conversation_info::ConversationPage;
pub use service::{ConversationService, ConversationSortOrder};
pub use stored::StoredConversation;
