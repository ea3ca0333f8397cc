//! The suites, one module per former test target.

mod bench;
mod controls;
mod docker;
mod e2e;
mod fencing;
mod hosts;
mod instances;
mod kubernetes;
mod openapi;
mod output_limits;
mod refusals;
mod restart;
mod runtime_api;
mod ssh;
mod swarm;
mod tail;
mod tls;
