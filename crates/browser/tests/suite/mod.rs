//! The suites, one module per former test target.

mod browser;
mod recording;
mod sandbox;
