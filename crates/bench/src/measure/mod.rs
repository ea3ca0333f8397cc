//! The measurements, one module each. They talk to a running server
//! through [`crate::api::Api`]; every loop is bounded by a count and a
//! deadline.

pub mod create;
pub mod fanout;
pub mod health;
pub mod runs;
pub mod throughput;
