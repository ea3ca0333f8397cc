//! The price of one call, computed from a table entry as LiteLLM's
//! `generic_cost_per_token` does for the standard service tier:
//!
//! * input: uncached prompt tokens at the input rate, cache reads at the
//!   cache-read rate, cache writes at the cache-creation rate (an absent
//!   cache rate is the input rate);
//! * output: completion tokens at the output rate; reasoning tokens (part
//!   of the completion) at the reasoning rate when the entry has one;
//! * a prompt larger than an `*_above_<N>[k]_tokens` threshold bills every
//!   token at that tier's rates (xAI: from the threshold on); a
//!   `tiered_pricing` table picks one tier by prompt size instead;
//! * while an `off_peak_pricing` window is open its rates replace those;
//! * Fireworks models without a cache-read rate read at half the input
//!   rate.

use super::offpeak;
use super::table::ModelEntry;
use chrono::{DateTime, Utc};

/// Token counts of one call. `prompt` includes the cached tokens (read and
/// written); `reasoning` is part of `completion`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// Prompt tokens, cached ones included.
    pub prompt: u64,
    /// Completion tokens, reasoning included.
    pub completion: u64,
    /// Prompt tokens read from the cache.
    pub cache_read: u64,
    /// Prompt tokens written to the cache.
    pub cache_write: u64,
    /// Reasoning tokens of the completion.
    pub reasoning: u64,
}

/// Providers whose price tiers start at the threshold itself.
const INCLUSIVE_THRESHOLD_PROVIDERS: &[&str] = &["xai"];

/// Service-tier and batch suffixes: their tier keys are not standard ones.
const NON_STANDARD_SUFFIXES: &[&str] = &[
    "_priority",
    "_flex",
    "_batches",
    "_balanced",
    "_ultrafast",
    "_standard",
    "_on_demand",
];

const RATE_PREFIXES: &[&str] = &[
    "input_cost_per_token",
    "output_cost_per_token",
    "cache_read_input_token_cost",
    "cache_creation_input_token_cost",
];

struct Rates {
    input: f64,
    output: f64,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
}

/// The threshold of an `<prefix>_above_<N>[k]_tokens` key.
fn threshold(key: &str) -> Option<f64> {
    let (_, rest) = key.rsplit_once("_above_")?;
    let n = rest.strip_suffix("_tokens")?;
    match n.strip_suffix('k') {
        Some(k) => k.parse::<f64>().ok().map(|v| v * 1000.0),
        None => n.parse::<f64>().ok(),
    }
}

fn tiered_rates(entry: &ModelEntry, prompt: u64) -> Option<(Rates, Option<f64>)> {
    let p = prompt as f64;
    let tier = entry
        .tiers
        .iter()
        .find(|t| p >= t.range.0 && p < t.range.1)
        .or_else(|| {
            // Beyond the last range: the last tier.
            entry
                .tiers
                .iter()
                .max_by(|a, b| a.range.1.total_cmp(&b.range.1))
                .filter(|t| p >= t.range.1)
        })?;
    let input = *tier.rates.get("input_cost_per_token")?;
    let rate = |k: &str| tier.rates.get(k).copied();
    let output = rate("output_cost_per_token")
        .or_else(|| entry.rate("output_cost_per_token"))
        .unwrap_or(0.0);
    let reasoning = rate("output_cost_per_reasoning_token").or(rate("output_cost_per_token"));
    Some((
        Rates {
            input,
            output,
            cache_read: Some(rate("cache_read_input_token_cost").unwrap_or(input)),
            cache_write: Some(rate("cache_creation_input_token_cost").unwrap_or(input)),
        },
        reasoning,
    ))
}

fn base_rates(entry: &ModelEntry, prompt: u64) -> Rates {
    let mut r = Rates {
        input: entry.rate("input_cost_per_token").unwrap_or(0.0),
        output: entry.rate("output_cost_per_token").unwrap_or(0.0),
        cache_read: entry.rate("cache_read_input_token_cost"),
        cache_write: entry.rate("cache_creation_input_token_cost"),
    };
    if r.output == 0.0
        && let Some(image) = entry.rate("output_cost_per_image_token")
    {
        r.output = image;
    }
    let inclusive = INCLUSIVE_THRESHOLD_PROVIDERS.contains(&entry.provider.as_str());
    let mut tiers: Vec<(f64, &str)> = entry
        .rates
        .keys()
        .filter(|k| {
            RATE_PREFIXES
                .iter()
                .any(|p| k.starts_with(&format!("{p}_above_")))
                && k.contains("_tokens")
                && !NON_STANDARD_SUFFIXES.iter().any(|s| k.ends_with(s))
        })
        .filter_map(|k| {
            let suffix = k.rsplit_once("_above_")?.1;
            Some((threshold(k)?, suffix))
        })
        .collect();
    tiers.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (limit, suffix) in tiers {
        let over = if inclusive {
            prompt as f64 >= limit
        } else {
            prompt as f64 > limit
        };
        if !over {
            continue;
        }
        let at = |p: &str| entry.rate(&format!("{p}_above_{suffix}"));
        r.input = at("input_cost_per_token").unwrap_or(r.input);
        r.output = at("output_cost_per_token").unwrap_or(r.output);
        r.cache_read = at("cache_read_input_token_cost").or(r.cache_read);
        r.cache_write = at("cache_creation_input_token_cost").or(r.cache_write);
    }
    r
}

/// Fireworks' cache reads without a published rate, as LiteLLM bills them.
const FIREWORKS_CACHE_READ_RATIO: f64 = 0.5;

/// The cost in USD of `usage` at `entry`'s prices now.
pub fn cost_of(entry: &ModelEntry, usage: &Usage) -> f64 {
    cost_of_at(entry, usage, Utc::now())
}

/// The cost in USD of `usage` at `entry`'s prices at `now`.
pub fn cost_of_at(entry: &ModelEntry, usage: &Usage, now: DateTime<Utc>) -> f64 {
    let fireworks_read = (entry.provider == "fireworks_ai"
        && entry.rate("cache_read_input_token_cost").is_none())
    .then(|| entry.rate("input_cost_per_token"))
    .flatten()
    .map(|input| input * FIREWORKS_CACHE_READ_RATIO);
    let (mut rates, tier_reasoning) = match tiered_rates(entry, usage.prompt) {
        Some((r, reasoning)) => (r, reasoning),
        None => (base_rates(entry, usage.prompt), None),
    };
    if rates.cache_read.is_none() {
        rates.cache_read = fireworks_read;
    }
    let off_peak = entry
        .off_peak
        .as_ref()
        .filter(|block| offpeak::is_open(block, now));
    let mut off_peak_reasoning = None;
    if let Some(block) = off_peak {
        let input = offpeak::rate(block, "input_cost_per_token");
        let read = offpeak::rate(block, "cache_read_input_token_cost")
            .or_else(|| fireworks_read.and(input.map(|i| i * FIREWORKS_CACHE_READ_RATIO)));
        // An absent cache rate is the (off-peak) input rate.
        let input_now = input.unwrap_or(rates.input);
        rates.cache_read = Some(read.unwrap_or(rates.cache_read.unwrap_or(input_now)));
        rates.cache_write = Some(
            offpeak::rate(block, "cache_creation_input_token_cost")
                .unwrap_or(rates.cache_write.unwrap_or(input_now)),
        );
        rates.input = input_now;
        rates.output = offpeak::rate(block, "output_cost_per_token").unwrap_or(rates.output);
        off_peak_reasoning = offpeak::rate(block, "output_cost_per_reasoning_token");
    }
    let read_rate = rates.cache_read.unwrap_or(rates.input);
    let write_rate = rates.cache_write.unwrap_or(rates.input);
    let text = usage
        .prompt
        .saturating_sub(usage.cache_read + usage.cache_write);
    let input = text as f64 * rates.input
        + usage.cache_read as f64 * read_rate
        + usage.cache_write as f64 * write_rate;
    let output = if usage.reasoning > 0 {
        let reasoning_rate = off_peak_reasoning
            .or(tier_reasoning)
            .or_else(|| entry.rate("output_cost_per_reasoning_token"))
            .unwrap_or(rates.output);
        usage.completion.saturating_sub(usage.reasoning) as f64 * rates.output
            + usage.reasoning as f64 * reasoning_rate
    } else {
        usage.completion as f64 * rates.output
    };
    input + output
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::table::Table;

    fn entry(json: &str) -> ModelEntry {
        let t = Table::parse(&format!(r#"{{"m": {json}}}"#)).unwrap();
        t.get("m").unwrap().clone()
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} != {b}");
    }

    #[test]
    fn cache_and_reasoning() {
        let e = entry(
            r#"{"input_cost_per_token": 1e-6, "output_cost_per_token": 4e-6,
                "cache_read_input_token_cost": 1e-7, "output_cost_per_reasoning_token": 8e-6}"#,
        );
        let u = Usage {
            prompt: 1000,
            completion: 100,
            cache_read: 400,
            cache_write: 100,
            reasoning: 30,
        };
        // 500 uncached + 400 read + 100 written at the input rate; 70 + 30.
        close(
            cost_of(&e, &u),
            500e-6 + 400e-7 + 100e-6 + 70.0 * 4e-6 + 30.0 * 8e-6,
        );
    }

    #[test]
    fn above_threshold_tiers() {
        let e = entry(
            r#"{"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6,
                "input_cost_per_token_above_200k_tokens": 3e-6,
                "output_cost_per_token_above_200k_tokens": 5e-6,
                "input_cost_per_token_above_200k_tokens_priority": 9.0}"#,
        );
        let small = Usage {
            prompt: 200_000,
            completion: 10,
            ..Usage::default()
        };
        close(cost_of(&e, &small), 0.2 + 20e-6);
        let big = Usage {
            prompt: 200_001,
            ..small
        };
        close(cost_of(&e, &big), 200_001.0 * 3e-6 + 50e-6);
    }

    #[test]
    fn tiered_table() {
        let e = entry(
            r#"{"input_cost_per_token": 1.0, "output_cost_per_token": 7e-6, "tiered_pricing": [
                {"input_cost_per_token": 1e-6, "range": [0, 1000]},
                {"input_cost_per_token": 2e-6, "output_cost_per_token": 3e-6, "range": [1000, 5000]}]}"#,
        );
        let u = Usage {
            prompt: 10,
            completion: 1,
            ..Usage::default()
        };
        close(cost_of(&e, &u), 10e-6 + 7e-6);
        let u = Usage {
            prompt: 1000,
            completion: 1,
            ..Usage::default()
        };
        close(cost_of(&e, &u), 1000.0 * 2e-6 + 3e-6);
    }
}
