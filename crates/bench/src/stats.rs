//! Percentiles and latency summaries.

use serde::Serialize;
use std::time::Duration;

/// The `p`-th percentile (0 < p ≤ 100) of `samples` by the nearest-rank
/// method: the smallest sample such that at least `p`% of the samples are
/// less than or equal to it. `None` when there are no samples.
///
/// With 20 samples, p50 is the 10th smallest and p99 the largest.
pub fn percentile(samples: &[Duration], p: f64) -> Option<Duration> {
    if samples.is_empty() || !(p > 0.0 && p <= 100.0) {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let n = sorted.len();
    let rank = ((p / 100.0) * n as f64).ceil() as usize;
    sorted.get(rank.clamp(1, n) - 1).copied()
}

/// A latency distribution in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Median (nearest rank).
    pub p50_ms: f64,
    /// 90th percentile (nearest rank).
    pub p90_ms: f64,
    /// 99th percentile (nearest rank).
    pub p99_ms: f64,
    /// Smallest sample.
    pub min_ms: f64,
    /// Largest sample.
    pub max_ms: f64,
    /// Arithmetic mean.
    pub mean_ms: f64,
}

impl Summary {
    /// Summarises `samples`; `None` when there are none.
    pub fn of(samples: &[Duration]) -> Option<Summary> {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let total: Duration = samples.iter().sum();
        Some(Summary {
            n: samples.len(),
            p50_ms: ms(percentile(samples, 50.0)?),
            p90_ms: ms(percentile(samples, 90.0)?),
            p99_ms: ms(percentile(samples, 99.0)?),
            min_ms: ms(*samples.iter().min()?),
            max_ms: ms(*samples.iter().max()?),
            mean_ms: ms(total) / samples.len() as f64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|&m| Duration::from_millis(m)).collect()
    }

    #[test]
    fn nearest_rank_on_unsorted_input() {
        let s = ms(&[50, 10, 40, 20, 30]);
        assert_eq!(percentile(&s, 50.0), Some(Duration::from_millis(30)));
        assert_eq!(percentile(&s, 20.0), Some(Duration::from_millis(10)));
        assert_eq!(percentile(&s, 21.0), Some(Duration::from_millis(20)));
        assert_eq!(percentile(&s, 99.0), Some(Duration::from_millis(50)));
        assert_eq!(percentile(&s, 100.0), Some(Duration::from_millis(50)));
    }

    #[test]
    fn p99_of_twenty_is_the_maximum_and_p50_the_tenth() {
        let s: Vec<Duration> = (1..=20).map(Duration::from_millis).collect();
        assert_eq!(percentile(&s, 50.0), Some(Duration::from_millis(10)));
        assert_eq!(percentile(&s, 99.0), Some(Duration::from_millis(20)));
        assert_eq!(percentile(&s, 90.0), Some(Duration::from_millis(18)));
    }

    #[test]
    fn p99_of_a_thousand_skips_the_ten_slowest() {
        let s: Vec<Duration> = (1..=1000).map(Duration::from_millis).collect();
        assert_eq!(percentile(&s, 99.0), Some(Duration::from_millis(990)));
    }

    #[test]
    fn empty_or_out_of_range_is_none() {
        assert_eq!(percentile(&[], 50.0), None);
        let s = ms(&[1]);
        assert_eq!(percentile(&s, 0.0), None);
        assert_eq!(percentile(&s, 100.5), None);
        assert_eq!(percentile(&s, f64::NAN), None);
        assert_eq!(percentile(&s, 1.0), Some(Duration::from_millis(1)));
        assert!(Summary::of(&[]).is_none());
    }

    #[test]
    fn summary_fields() {
        let s = Summary::of(&ms(&[4, 1, 3, 2])).unwrap();
        assert_eq!(s.n, 4);
        assert_eq!(s.p50_ms, 2.0);
        assert_eq!(s.p99_ms, 4.0);
        assert_eq!(s.min_ms, 1.0);
        assert_eq!(s.max_ms, 4.0);
        assert_eq!(s.mean_ms, 2.5);
    }
}
