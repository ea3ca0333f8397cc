//! The suites, one module per former test target.

mod cloud;
mod sandbox;
mod workspaces;
