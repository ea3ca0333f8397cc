//! Times the browser tools against a local page: browser start + first
//! navigate, a navigate + get-content round trip, and one cheap action
//! (list tabs) on a running browser. `cargo run --release -p
//! openhands-browser --example browser_bench [-- URL]`; without a URL it
//! serves the test site itself. `compat/browser_bench.py` measures the
//! reference the same way.

use openhands_browser::ops::BrowserOp;
use openhands_browser::{BrowserConfig, BrowserSession};
use openhands_testkit::site::TestSite;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const STARTS: u32 = 3;
const ROUNDS: u32 = 20;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let site = TestSite::start().await?;
    let url = std::env::args().nth(1).unwrap_or_else(|| site.url("/"));
    let never = CancellationToken::new();
    let navigate = || BrowserOp::Navigate {
        url: url.clone(),
        new_tab: false,
    };

    let mut starts = Vec::new();
    for _ in 0..STARTS {
        let session = BrowserSession::new(BrowserConfig::default());
        let t = Instant::now();
        session.run(navigate(), &never).await?;
        starts.push(ms(t.elapsed()));
        session.close().await;
    }

    let session = BrowserSession::new(BrowserConfig::default());
    session.run(navigate(), &never).await?;
    let mut round_trips = Vec::new();
    let mut actions = Vec::new();
    for _ in 0..ROUNDS {
        let t = Instant::now();
        session.run(navigate(), &never).await?;
        let content = session
            .run(
                BrowserOp::GetContent {
                    links: false,
                    start: 0,
                },
                &never,
            )
            .await?;
        round_trips.push(ms(t.elapsed()));
        assert!(content.text.contains("<webpage_content>"));
        let t = Instant::now();
        session.run(BrowserOp::ListTabs, &never).await?;
        actions.push(ms(t.elapsed()));
    }
    session.close().await;
    println!(
        "{{\"impl\":\"rust\",\"start_and_first_navigate_ms\":{:.1},\"navigate_get_content_ms\":{:.1},\"list_tabs_ms\":{:.2}}}",
        median(starts),
        median(round_trips),
        median(actions)
    );
    Ok(())
}
