//! `GET /health` latency while another phase loads the server: a separate
//! poller (its own HTTP client and connection) asks one request at a time,
//! at most every [`INTERVAL`], until it is stopped.

use crate::results::HealthFigures;
use crate::stats::Summary;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Pause between the start of two probes (a slower answer is followed by
/// the next probe at once).
pub const INTERVAL: Duration = Duration::from_millis(10);
/// A probe that takes longer than this counts as failed.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// A running poller; [`HealthPoller::stop`] returns its figures.
#[derive(Debug)]
pub struct HealthPoller {
    stop: oneshot::Sender<()>,
    task: JoinHandle<(Vec<Duration>, usize)>,
}

impl HealthPoller {
    /// Starts polling `<base>/health`.
    pub fn start(base: &str) -> anyhow::Result<HealthPoller> {
        let client = reqwest::Client::builder()
            .no_proxy()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(1)
            .build()?;
        let url = format!("{base}/health");
        let (stop, mut stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut failures = 0;
            loop {
                let start = Instant::now();
                // A probe in flight when the phase ends still counts: the
                // slowest answers are the point of the measurement.
                let ok = match client.get(&url).timeout(PROBE_TIMEOUT).send().await {
                    Ok(resp) => resp.status().is_success() && resp.bytes().await.is_ok(),
                    Err(_) => false,
                };
                if ok {
                    samples.push(start.elapsed());
                } else {
                    failures += 1;
                }
                let next = start + INTERVAL;
                tokio::select! {
                    _ = tokio::time::sleep_until(next.into()) => {}
                    _ = &mut stopped => break,
                }
            }
            (samples, failures)
        });
        Ok(HealthPoller { stop, task })
    }

    /// Stops the poller (after the probe in flight, if any) and summarises.
    pub async fn stop(self) -> HealthFigures {
        let _ = self.stop.send(());
        let (samples, failures) = self.task.await.unwrap_or_default();
        HealthFigures {
            latency: Summary::of(&samples),
            failures,
        }
    }
}
