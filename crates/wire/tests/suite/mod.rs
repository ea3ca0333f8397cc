//! The suites, one module per former test target.

mod convert;
mod round_trip;
