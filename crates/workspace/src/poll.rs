//! Waiting for a remote sandbox to come up: pauses that double up to a
//! cap within an overall limit, and the agent server's `/health` probe.
//! Shared by the hosted workspaces (Cloud, Runtime API).

use std::time::Duration;
use tokio::time::Instant;

/// How long one `/health` probe may take.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(5);

/// Doubling pauses between polls, capped at `max`, for at most `limit`
/// from its creation.
#[derive(Debug)]
pub(crate) struct Backoff {
    start: Instant,
    pause: Duration,
    max: Duration,
    limit: Duration,
}

impl Backoff {
    /// Starts the clock: the first pause is `first`.
    pub(crate) fn new(first: Duration, max: Duration, limit: Duration) -> Self {
        Self {
            start: Instant::now(),
            pause: first,
            max,
            limit,
        }
    }

    /// Sleeps before the next poll; `false` (without sleeping) when the
    /// next poll would come after the limit.
    pub(crate) async fn wait(&mut self) -> bool {
        if self.start.elapsed() + self.pause > self.limit {
            return false;
        }
        tokio::time::sleep(self.pause).await;
        self.pause = (self.pause * 2).min(self.max);
        true
    }
}

/// Whether the agent server at `url` answers `GET /health` with a 2xx;
/// the reason when not.
pub(crate) async fn health(http: &reqwest::Client, url: &str) -> Result<(), HealthError> {
    let resp = http
        .get(format!("{url}/health"))
        .timeout(HEALTH_TIMEOUT)
        .send()
        .await
        .map_err(HealthError::Request)?;
    if resp.status().is_success() {
        Ok(())
    } else {
        Err(HealthError::Status(resp.status()))
    }
}

/// Why an agent server is not healthy yet.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HealthError {
    /// No answer.
    #[error("the agent server's /health failed: {0}")]
    Request(#[source] reqwest::Error),
    /// An answer other than 2xx.
    #[error("health check failed with status {0}")]
    Status(reqwest::StatusCode),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn pauses_double_up_to_the_cap_and_stop_at_the_limit() {
        let mut b = Backoff::new(
            Duration::from_secs(1),
            Duration::from_secs(3),
            Duration::from_secs(10),
        );
        let t = tokio::time::Instant::now();
        let mut slept = Vec::new();
        let mut last = t;
        while b.wait().await {
            slept.push(last.elapsed().as_secs());
            last = tokio::time::Instant::now();
        }
        // 1 + 2 + 3 + 3 = 9 s; a further 3 s would pass the 10-s limit.
        assert_eq!(slept, [1, 2, 3, 3]);
    }
}
