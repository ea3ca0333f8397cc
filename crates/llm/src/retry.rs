//! Retry policy: which failures are retried, how many attempts, how long
//! to wait (tenacity's `wait_exponential`, honouring `Retry-After`).

use crate::error::LlmError;
use crate::http::secs;
use openhands_wire::LlmConfig;
use std::sync::Arc;
use std::time::Duration;

/// Total attempts for a configuration (`num_retries`, at least one).
pub fn max_attempts(config: &LlmConfig) -> u32 {
    config.num_retries.max(1)
}

/// Exponential backoff after failed attempt number `attempt` (1-based):
/// `clamp(retry_multiplier * 2^(attempt-1), retry_min_wait, retry_max_wait)`
/// seconds.
pub fn backoff(config: &LlmConfig, attempt: u32) -> Duration {
    let exp = attempt.saturating_sub(1).min(62) as i32;
    let raw = config.retry_multiplier * 2f64.powi(exp);
    let min = config.retry_min_wait.max(0.0);
    let max = config.retry_max_wait.max(min);
    let wait = if raw.is_finite() {
        raw.clamp(min, max)
    } else {
        max
    };
    secs(Some(wait)).unwrap_or(Duration::ZERO)
}

/// The wait before the next attempt: the backoff, or the provider's
/// `Retry-After` when longer (capped at `retry_max_wait`).
pub fn wait_for(config: &LlmConfig, attempt: u32, error: &LlmError) -> Duration {
    let base = backoff(config, attempt);
    let cap = secs(Some(config.retry_max_wait)).unwrap_or(Duration::ZERO);
    match error.retry_after() {
        Some(ra) => base.max(ra.min(cap)),
        None => base,
    }
}

/// Whether a failed attempt is worth repeating.
pub fn should_retry(error: &LlmError) -> bool {
    error.is_retryable() && !error.is_quota_exhaustion()
}

/// A retry about to happen.
#[derive(Debug, Clone)]
pub struct RetryEvent {
    /// Number of the attempt that failed (1-based).
    pub attempt: u32,
    /// Total attempts allowed.
    pub max_attempts: u32,
    /// Why it failed.
    pub error: LlmError,
    /// How long we wait before the next attempt.
    pub wait: Duration,
}

/// Observes retries (for logs, UIs, tests).
pub type RetryListener = Arc<dyn Fn(&RetryEvent) + Send + Sync>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_defaults_give_8_16_32_64() {
        let c = LlmConfig::default();
        let waits: Vec<u64> = (1..=6).map(|a| backoff(&c, a).as_secs()).collect();
        assert_eq!(waits, vec![8, 16, 32, 64, 64, 64]);
        assert_eq!(max_attempts(&c), 5);
    }

    #[test]
    fn clamps_and_odd_values() {
        let mut c = LlmConfig {
            retry_multiplier: 0.001,
            retry_min_wait: 0.002,
            retry_max_wait: 0.005,
            ..LlmConfig::default()
        };
        let w: Vec<Duration> = (1..=4).map(|a| backoff(&c, a)).collect();
        assert_eq!(
            w,
            vec![
                Duration::from_millis(2),
                Duration::from_millis(2),
                Duration::from_millis(4),
                Duration::from_millis(5)
            ]
        );
        c.retry_multiplier = f64::NAN;
        assert_eq!(backoff(&c, 1), Duration::from_millis(5));
        assert_eq!(backoff(&c, u32::MAX), Duration::from_millis(5));
        c.num_retries = 0;
        assert_eq!(max_attempts(&c), 1);
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_cap() {
        let c = LlmConfig {
            retry_multiplier: 1.0,
            retry_min_wait: 1.0,
            retry_max_wait: 10.0,
            ..LlmConfig::default()
        };
        let rl = |s| LlmError::RateLimit {
            message: "x".into(),
            retry_after: Some(Duration::from_secs(s)),
        };
        assert_eq!(wait_for(&c, 1, &rl(5)), Duration::from_secs(5));
        assert_eq!(wait_for(&c, 1, &rl(500)), Duration::from_secs(10));
        assert_eq!(wait_for(&c, 3, &rl(0)), Duration::from_secs(4));
    }

    #[test]
    fn retry_classes() {
        assert!(should_retry(&LlmError::ServiceUnavailable("x".into())));
        assert!(should_retry(&LlmError::Timeout("x".into())));
        assert!(should_retry(&LlmError::MalformedResponse("x".into())));
        assert!(!should_retry(&LlmError::BadRequest("x".into())));
        assert!(!should_retry(&LlmError::ContextWindowExceeded("x".into())));
        assert!(!should_retry(&LlmError::RateLimit {
            message: "insufficient_quota".into(),
            retry_after: None
        }));
    }
}
