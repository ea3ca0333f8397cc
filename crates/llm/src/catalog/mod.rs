//! The one model table of the project: LiteLLM's
//! `model_prices_and_context_window.json` (the table the reference bills
//! and sizes models with), shipped in `crates/llm/data/` and refreshed by
//! `scripts/refresh_model_prices.sh`.
//!
//! * [`table`] loads it once (lazily) into typed entries;
//! * [`lookup`] finds a configured model's entry with LiteLLM's rules
//!   (provider prefix, exact key, case-insensitive, stripped snapshot or
//!   version suffixes; never a substring guess);
//! * [`cost`] prices one call's usage as LiteLLM does (input, output, cache
//!   read/write, reasoning tokens, above-N-tokens tiers, tiered tables);
//! * [`listing`] answers the agent server's `/api/llm/providers`,
//!   `/api/llm/models` and `/api/llm/models/verified`.

pub mod cost;
pub mod listing;
pub mod lookup;
pub mod offpeak;
pub mod table;

pub use cost::{Usage, cost_of};
pub use listing::{model_names, providers, verified};
pub use lookup::lookup;
pub use table::{Capabilities, ModelEntry};
