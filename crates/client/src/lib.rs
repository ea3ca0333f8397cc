//! The one typed client of an OpenHands agent server (ours or the
//! reference), used by the SDK's `RemoteConversation`, `RemoteWorkspace`,
//! the sub-agent launcher, webhooks and the control plane.
//!
//! * [`tls`] — the rustls configuration every client shares: the system
//!   roots (`SSL_CERT_FILE`/`SSL_CERT_DIR` honoured) plus an optional CA
//!   bundle ([`TlsOptions::ca_file`]).
//! * [`http`] — the project's one HTTP client factory ([`http_client`]),
//!   for every peer (agent servers, LLM providers, MCP servers, webhooks): that TLS
//!   configuration, timeouts, the process's observability headers.
//! * [`headers`] — the `X-OpenHands-Observability-*` headers of the
//!   process's defaults.
//! * [`AgentServerClient`] — one server at a base URL (`http://` or
//!   `https://`) with its session key (sent as
//!   [`openhands_protocol::SESSION_API_KEY_HEADER`]): REST calls with
//!   typed answers from [`openhands_protocol`], errors as [`ClientError`].
//! * [`loopback`] — the loopback listener receiving an OAuth
//!   authorization redirect (MCP OAuth, the ChatGPT browser sign-in).
//! * [`socket`] — WebSockets (`ws://`/`wss://`) over the same TLS, and the
//!   events socket ([`EventSocket`]).

mod agent;
mod error;
pub mod headers;
pub mod http;
pub mod loopback;
mod query;
pub mod socket;
pub mod tls;

pub use agent::{AgentServerClient, AgentServerClientBuilder, Answer};
pub use error::ClientError;
pub use http::{HttpOptions, http_client};
pub use socket::{EventSocket, Resend, SocketRead};
pub use tls::{ClientIdentity, TlsOptions};
