//! Task output: the NDJSON lines, the forwarder of a task's events into
//! its output, and the readers of that output.

pub mod lines;
pub mod pump;
pub mod reader;
pub mod tail;
