//! The suites, one module per former test target.

mod sandbox;
mod workspaces;
