//! Conversations on an agent server (ours or the reference), driven from
//! Rust: [`RemoteConversation`] over the server's REST API and its event
//! socket (`/sockets/events/{id}`, reconnecting with `resend_mode=since`);
//! the completion logs the server streams are written into the client's
//! log folders (`completion_logs`).

mod completion_logs;
mod conversation;
mod error;
mod http;
mod hub;
mod socket;
mod sync;

pub use conversation::{RemoteConversation, RemoteOptions};
pub use error::RemoteError;
pub use socket::SocketState;
