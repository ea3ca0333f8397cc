//! Bash commands run by clients outside the agent's terminal: started as
//! plain subprocesses, their events (`BashCommand`, `BashOutput`) stored as
//! files and pushed to WebSocket subscribers.

pub mod runner;
pub mod service;
pub mod store;

pub use openhands_protocol::bash::{
    BashCommand, BashError, BashEvent, BashEventPage, BashEventSortOrder, BashOutput,
    ExecuteBashRequest, HexId, UtcTime,
};
pub use service::{BashEventService, BashServiceError, join_outputs};
pub use store::SearchFilter;
