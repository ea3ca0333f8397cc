//! Agent-loop overhead and resume time.
//!
//! * per step: a zero-latency scripted LLM answers `think` calls; the time
//!   spent inside the fake backend is measured separately and subtracted, so
//!   the figure is our own loop (message conversion, event creation,
//!   persistence, stuck check, tool dispatch);
//! * resume: a conversation directory of 10,000 events is loaded;
//! * condense: `condense()` on that 10,000-event conversation with an
//!   `LLMSummarizingCondenser` whose model answers at once (view, forget
//!   range, summary prompt, recording the `Condensation`).
//!
//! Run: `cargo bench -p openhands-sdk --bench agent_loop`.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use async_trait::async_trait;
use openhands_llm::{Llm, LlmBackend, LlmError, LlmRequest, LlmResponse, TokenCallback};
use openhands_sdk::conversation::event_store::EventStore;
use openhands_sdk::fsutil::Durability;
use openhands_sdk::tool::ToolRegistry;
use openhands_sdk::{Agent, ConversationOptions, LocalConversation};
use openhands_testkit::{ScriptedLlm, Turn};
use openhands_wire::LlmConfig;
use openhands_wire::agent::AgentSpec;
use openhands_wire::event::{Event, EventBody, MessageEvent, SourceType};
use openhands_wire::message::Message;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Wraps a backend and accumulates the time spent in it.
struct Timed {
    inner: ScriptedLlm,
    nanos: AtomicU64,
}

#[async_trait]
impl LlmBackend for Timed {
    async fn complete(
        &self,
        config: &LlmConfig,
        request: &LlmRequest,
        on_token: Option<TokenCallback>,
    ) -> Result<LlmResponse, LlmError> {
        let t = Instant::now();
        let r = self.inner.complete(config, request, on_token).await;
        self.nanos
            .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        r
    }
}

fn cpu_time() -> Duration {
    // utime + stime of this process from /proc (Linux); zero elsewhere.
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return Duration::ZERO;
    };
    let after = stat.rsplit(')').next().unwrap_or_default();
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // after ')' the fields start at index 3 (state); utime=14, stime=15 → 11, 12 here
    let total = ticks(11) + ticks(12);
    Duration::from_millis(total * 10)
}

async fn run_steps(steps: usize, persist: bool) -> (Duration, Duration, Duration) {
    let mut turns: Vec<Turn> = (0..steps)
        .map(|i| Turn::tool_call("think", json!({"thought": format!("step {i}")})))
        .collect();
    turns.push(Turn::tool_call("finish", json!({"message": "done"})));
    let backend = Arc::new(Timed {
        inner: ScriptedLlm::from_turns(turns),
        nanos: AtomicU64::new(0),
    });
    let config = LlmConfig::new("openai/bench");
    let llm = Llm::with_backend(config.clone(), backend.clone());
    let agent = Agent::with_llm(AgentSpec::new(config, vec![]), llm, ToolRegistry::new());
    let root = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let options = ConversationOptions {
        persistence_dir: persist.then(|| root.path().to_path_buf()),
        max_iteration_per_run: (steps + 10) as u32,
        ..ConversationOptions::default()
    };
    let c = LocalConversation::new(agent, ws.path(), options).unwrap();
    c.send_message("bench").unwrap();
    let cpu0 = cpu_time();
    let t = Instant::now();
    c.run().await.unwrap();
    let wall = t.elapsed();
    let cpu = cpu_time().saturating_sub(cpu0);
    let in_llm = Duration::from_nanos(backend.nanos.load(Ordering::Relaxed));
    (wall, in_llm, cpu)
}

fn write_conversation(events: usize) -> (tempfile::TempDir, uuid::Uuid) {
    let root = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let config = LlmConfig::new("openai/bench");
    let llm = Llm::with_backend(config.clone(), Arc::new(ScriptedLlm::from_turns(vec![])));
    let agent = Agent::with_llm(AgentSpec::new(config, vec![]), llm, ToolRegistry::new());
    let options = ConversationOptions {
        persistence_dir: Some(root.path().to_path_buf()),
        ..ConversationOptions::default()
    };
    let c = LocalConversation::new(agent, ws.path(), options).unwrap();
    let id = c.id();
    let dir = c.persistence_dir().unwrap();
    drop(c);
    let store = EventStore::open(&dir, Durability::Batched).unwrap();
    for i in 0..events {
        let ev = Event::with_source(
            SourceType::User,
            EventBody::Message(MessageEvent {
                llm_message: Message::user(format!(
                    "message number {i} with some typical length of text in it"
                )),
                llm_response_id: None,
                activated_skills: vec![],
                extended_content: vec![],
                sender: None,
                critic_result: None,
            }),
        );
        store.append(i, &ev).unwrap();
    }
    (root, id)
}

/// Like [`write_conversation`], but started the usual way first (system
/// prompt, then the user's first message), as a condenser expects.
fn write_started_conversation(events: usize) -> (tempfile::TempDir, uuid::Uuid) {
    let root = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let config = LlmConfig::new("openai/bench");
    let llm = Llm::with_backend(config.clone(), Arc::new(ScriptedLlm::from_turns(vec![])));
    let agent = Agent::with_llm(AgentSpec::new(config, vec![]), llm, ToolRegistry::new());
    let options = ConversationOptions {
        persistence_dir: Some(root.path().to_path_buf()),
        ..ConversationOptions::default()
    };
    let c = LocalConversation::new(agent, ws.path(), options).unwrap();
    c.send_message("start").unwrap();
    let id = c.id();
    let first = c.event_count();
    let dir = c.persistence_dir().unwrap();
    drop(c);
    let store = EventStore::open(&dir, Durability::Batched).unwrap();
    for i in first..events {
        let ev = Event::with_source(
            SourceType::User,
            EventBody::Message(MessageEvent {
                llm_message: Message::user(format!("message number {i} with some typical text")),
                llm_response_id: None,
                activated_skills: vec![],
                extended_content: vec![],
                sender: None,
                critic_result: None,
            }),
        );
        store.append(i, &ev).unwrap();
    }
    (root, id)
}

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!("agent loop overhead (zero-latency scripted LLM, think tool)");
    for (steps, persist) in [(50, false), (200, false), (50, true), (200, true)] {
        let (wall, in_llm, cpu) = rt.block_on(run_steps(steps, persist));
        let ours = wall.saturating_sub(in_llm);
        println!(
            "  {steps:>4} steps, persisted={persist:<5}: {:>7.3} ms/step ours (wall {:>7.3} ms/step, in fake LLM {:>6.3} ms/step, process CPU {:>6.3} ms/step)",
            ours.as_secs_f64() * 1000.0 / steps as f64,
            wall.as_secs_f64() * 1000.0 / steps as f64,
            in_llm.as_secs_f64() * 1000.0 / steps as f64,
            cpu.as_secs_f64() * 1000.0 / steps as f64,
        );
    }
    println!("resume from disk");
    for n in [1_000usize, 10_000] {
        let (root, id) = write_conversation(n);
        let mut best = Duration::MAX;
        for _ in 0..3 {
            let t = Instant::now();
            let c =
                LocalConversation::resume(root.path(), id, None, ConversationOptions::default());
            let el = t.elapsed();
            let c = c.unwrap();
            assert_eq!(c.event_count(), n);
            best = best.min(el);
        }
        println!(
            "  {n:>6} events: {:>8.1} ms (best of 3)",
            best.as_secs_f64() * 1000.0
        );
    }
    println!("condense on request");
    for n in [1_000usize, 10_000] {
        let (root, id) = write_started_conversation(n);
        let config = LlmConfig::new("openai/bench");
        let script = openhands_testkit::Script::from_turns(vec![])
            .with_toolless_reply(Turn::text("summary of the earlier work"));
        let llm = Llm::with_backend(config.clone(), Arc::new(ScriptedLlm::new(script)));
        let mut spec = AgentSpec::new(config, vec![]);
        spec.condenser = Some(json!({
            "kind": "LLMSummarizingCondenser",
            "llm": {"model": "openai/bench", "usage_id": "condenser"},
            "max_size": 240,
            "keep_first": 2
        }));
        let agent = Agent::with_llm(spec, llm, ToolRegistry::new());
        let c =
            LocalConversation::resume(root.path(), id, Some(agent), ConversationOptions::default())
                .unwrap();
        let t = Instant::now();
        rt.block_on(c.condense()).unwrap();
        let el = t.elapsed();
        let t2 = Instant::now();
        let view_len = c.condensable_events();
        let view_el = t2.elapsed();
        println!(
            "  {n:>6} events: condense {:>8.1} ms, view afterwards {view_len} events in {:>6.2} ms",
            el.as_secs_f64() * 1000.0,
            view_el.as_secs_f64() * 1000.0
        );
    }
}
