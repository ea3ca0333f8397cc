//! Measures the crate's own CPU cost per call.

fn main() {}
