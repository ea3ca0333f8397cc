//! The HTTP layer: shared state, authentication, middleware, request
//! extractors, error answers, routes, WebSockets and the `/v1` gateway.
//! It calls [`crate::service`]; nothing there imports from here.

pub mod auth;
pub mod deferred;
pub mod error;
pub mod extract;
pub mod front;
pub mod gateway;
pub mod middleware;
pub mod observability_headers;
pub mod route_docs;
pub mod routes;
pub mod session_keys;
pub mod setup;
pub mod sockets;
pub mod state;
pub mod workspace_cookie;
