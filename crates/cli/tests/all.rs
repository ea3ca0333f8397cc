//! Integration tests of `cli`, one binary: each file of `suite/` is one
//! former test target; the helpers they share sit beside this file.

#![allow(
    clippy::disallowed_methods,
    reason = "tests start real programs, stage files and read fixture locations from the environment"
)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "../../agent-server/tests/otel_support/mod.rs"]
mod otel_support;
mod suite;
