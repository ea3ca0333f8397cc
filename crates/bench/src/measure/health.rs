//! `GET /health` latency while another phase loads the server: a separate
//! poller (its own thread, runtime, HTTP client and connection) asks one
//! request at a time, at most every [`INTERVAL`], until it is stopped.

use crate::results::HealthFigures;
use crate::stats::Summary;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Pause between the start of two probes (a slower answer is followed by
/// the next probe at once).
pub const INTERVAL: Duration = Duration::from_millis(10);
/// A probe that takes longer than this counts as failed.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// A running poller; [`HealthPoller::stop`] returns its figures.
#[derive(Debug)]
pub struct HealthPoller {
    stop: Arc<AtomicBool>,
    done: oneshot::Receiver<(Vec<Duration>, usize)>,
}

impl HealthPoller {
    /// Starts polling `<base>/health` on a thread of its own (with its own
    /// single-threaded runtime), so that the benchmark's own load (dozens of
    /// conversations, the mock LLM) does not delay the probes.
    pub fn start(base: &str) -> anyhow::Result<HealthPoller> {
        let url = format!("{base}/health");
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, done) = oneshot::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let client = {
            let _entered = runtime.enter();
            openhands_client::http_client(
                &openhands_client::HttpOptions::per_request(Duration::from_secs(30))
                    .no_proxy()
                    .max_idle_per_host(1),
            )?
        };
        let flag = stop.clone();
        std::thread::Builder::new()
            .name("health-poller".into())
            .spawn(move || {
                let figures = runtime.block_on(poll(client, url, flag));
                let _ = tx.send(figures);
            })?;
        Ok(HealthPoller { stop, done })
    }

    /// Stops the poller (after the probe in flight, if any) and summarises.
    pub async fn stop(self) -> HealthFigures {
        self.stop_samples().await.figures()
    }

    /// Stops the poller (after the probe in flight, if any); its probes.
    pub async fn stop_samples(self) -> HealthSamples {
        self.stop.store(true, Ordering::SeqCst);
        let (samples, failures) = self.done.await.unwrap_or_default();
        HealthSamples { samples, failures }
    }
}

/// What a poller saw: the latencies of the answered probes, the failed
/// ones counted.
#[derive(Debug, Default)]
pub struct HealthSamples {
    /// Latency of each answered probe.
    pub samples: Vec<Duration>,
    /// Probes that failed or timed out.
    pub failures: usize,
}

impl HealthSamples {
    /// Adds the probes of another poller.
    pub fn extend(&mut self, other: HealthSamples) {
        self.samples.extend(other.samples);
        self.failures += other.failures;
    }

    /// The summary.
    pub fn figures(&self) -> HealthFigures {
        HealthFigures {
            latency: Summary::of(&self.samples),
            failures: self.failures,
        }
    }
}

/// Probes until `stop` is set: latencies of the answered probes and the
/// number of failed ones.
async fn poll(
    client: reqwest::Client,
    url: String,
    stop: Arc<AtomicBool>,
) -> (Vec<Duration>, usize) {
    let mut samples = Vec::new();
    let mut failures = 0;
    while !stop.load(Ordering::SeqCst) {
        let start = Instant::now();
        // A probe in flight when the phase ends still counts: the slowest
        // answers are the point of the measurement.
        let ok = match client.get(&url).timeout(PROBE_TIMEOUT).send().await {
            Ok(resp) => resp.status().is_success() && resp.bytes().await.is_ok(),
            Err(_) => false,
        };
        if ok {
            samples.push(start.elapsed());
        } else {
            failures += 1;
        }
        tokio::time::sleep_until((start + INTERVAL).into()).await;
    }
    (samples, failures)
}
