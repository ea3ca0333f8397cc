//! The suites, one module per former test target.

mod http_edge;
mod mock_server;
