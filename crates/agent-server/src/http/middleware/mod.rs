//! Cross-cutting layers: CORS, JSON error bodies, panic capture, client
//! trace context.

pub mod cors;
pub mod errors;
pub mod trace_context;
