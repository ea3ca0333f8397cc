//! Integration tests of `mcp`, one binary: each file of `suite/` is one
//! former test target; the helpers they share sit beside this file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
