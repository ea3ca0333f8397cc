//! Cross-cutting layers: CORS, JSON error bodies, panic capture.

pub mod cors;
pub mod errors;
