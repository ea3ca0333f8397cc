//! Sequential `POST /api/conversations` latency.

use crate::api::Api;
use serde_json::Value;
use std::time::{Duration, Instant};

/// What `n` sequential creations produced.
#[derive(Debug, Default)]
pub struct Creations {
    /// Latency of each successful creation.
    pub latencies: Vec<Duration>,
    /// Ids of the conversations created.
    pub ids: Vec<String>,
    /// Error texts of failed creations.
    pub failures: Vec<String>,
}

/// Creates `n` conversations one after the other with `body`, timing each
/// request (send → whole answer read).
pub async fn sequential(api: &Api, body: &Value, n: usize) -> Creations {
    let mut out = Creations::default();
    for _ in 0..n {
        let t0 = Instant::now();
        match api.create(body).await {
            Ok(id) => {
                out.latencies.push(t0.elapsed());
                out.ids.push(id);
            }
            Err(e) => out.failures.push(format!("{e:#}")),
        }
    }
    out
}
