//! The suites, one module per former test target.

mod everything;
mod oauth;
mod python_sse;
