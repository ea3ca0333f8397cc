//! The suites, one module per former test target.

mod bedrock;
mod gemini;
mod http_edge;
mod litellm_parity;
mod mock_server;
mod subscription;
mod vertex;
