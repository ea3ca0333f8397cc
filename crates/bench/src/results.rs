//! What one server's benchmark produced (serialised as the `--json` output).

use crate::stats::Summary;
use serde::Serialize;

/// All figures of one server. Fields are `None` when their phase failed
/// (the reason is in `errors`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ServerResult {
    /// `ours` or `reference`.
    pub label: String,
    /// Version string of the server, when known.
    pub version: Option<String>,
    /// Spawn → first `GET /ready` 200, in milliseconds.
    pub ready_ms: Option<f64>,
    /// Server process RSS one second after it became ready.
    pub idle_rss_bytes: Option<u64>,
    /// How many conversations were created sequentially.
    pub conversations: usize,
    /// Server process RSS after those creations.
    pub rss_after_conversations_bytes: Option<u64>,
    /// `POST /api/conversations` latency.
    pub create: Option<Summary>,
    /// Creations that failed.
    pub create_failures: usize,
    /// Two-step run latency (message with `run:true` → terminal status seen).
    pub run: Option<Summary>,
    /// Of each run, the terminal tool's share (`TerminalAction` event →
    /// `TerminalObservation` event, by the events' timestamps).
    pub run_terminal_step: Option<Summary>,
    /// Runs that failed or did not end in `finished`.
    pub run_failures: usize,
    /// Runs whose end was observed by polling because the socket failed.
    pub runs_observed_by_polling: usize,
    /// One entry per concurrency level.
    pub throughput: Vec<Throughput>,
    /// WebSocket fan-out figures.
    pub fanout: Option<Fanout>,
    /// Server process RSS after every phase, once the conversations were
    /// deleted and the server had `settle_s` seconds to release memory.
    pub rss_end_bytes: Option<u64>,
    /// Seconds waited before `rss_end_bytes` was read.
    pub settle_s: f64,
    /// Processes still carrying the server's tag after it stopped (killed).
    pub leftover_processes_killed: usize,
    /// What went wrong, phase by phase.
    pub errors: Vec<String>,
}

/// Conversations per second at one concurrency level.
#[derive(Debug, Clone, Serialize)]
pub struct Throughput {
    /// Conversations in flight at once.
    pub concurrency: usize,
    /// Conversations attempted.
    pub attempted: usize,
    /// Conversations that reached `finished`.
    pub finished: usize,
    /// Rounds the conversations ran in (see `measure::throughput`).
    pub rounds: usize,
    /// Wall time from the first creation to the last terminal status,
    /// summed over the rounds.
    pub wall_s: f64,
    /// `finished / wall_s`.
    pub conversations_per_s: f64,
    /// Per conversation: create + subscribe + run until finished.
    pub per_conversation: Option<Summary>,
    /// Runs whose end was observed by polling.
    pub observed_by_polling: usize,
    /// `GET /health` latency while the conversations ran.
    pub health: Option<HealthFigures>,
}

/// `GET /health` as seen by a separate poller during a phase.
#[derive(Debug, Clone, Default, Serialize)]
pub struct HealthFigures {
    /// Latency of the answered probes.
    pub latency: Option<Summary>,
    /// Probes that failed or timed out.
    pub failures: usize,
}

/// Events fanned out to several WebSocket subscribers of one conversation.
#[derive(Debug, Clone, Serialize)]
pub struct Fanout {
    /// Subscribers on the conversation.
    pub subscribers: usize,
    /// Messages sent one at a time for the latency figure.
    pub latency_events: usize,
    /// Send of the message (`POST …/events`) → its `MessageEvent` received
    /// by every subscriber.
    pub latency: Option<Summary>,
    /// Messages sent back to back for the rate figure.
    pub burst_events: usize,
    /// Deliveries seen in the burst (at most `subscribers × burst_events`).
    pub burst_deliveries: usize,
    /// First send → last delivery.
    pub burst_s: f64,
    /// `burst_deliveries / burst_s`.
    pub deliveries_per_s: f64,
}
