//! Stuck detection: recognises unproductive loops in the events after the
//! last user message and stops the run (status `stuck`).
//!
//! Patterns (thresholds configurable, defaults as in the reference):
//! 1. the same action producing the same observation `action_observation` (4) times;
//! 2. the same action ending in the same error `action_error` (3) times;
//! 3. `monologue` (3) agent messages in a row without user input;
//! 4. two action/observation pairs alternating over `alternating_pattern` (6) steps;
//! 5. repeated condensations with nothing in between (the context keeps overflowing).
//!
//! Events are compared by meaning (tool, arguments, thought, content),
//! never by id or timestamp.

use openhands_wire::event::{Event, EventBody, SourceType};
use openhands_wire::state::StuckDetectionThresholds;
use serde_json::Value;

/// How many recent events are scanned.
const MAX_EVENTS_SCANNED: usize = 200;

/// Why a conversation is considered stuck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StuckPattern {
    /// Same action, same observation.
    RepeatingActionObservation,
    /// Same action, same error.
    RepeatingActionError,
    /// Agent talks to itself.
    Monologue,
    /// A/B/A/B…
    AlternatingPattern,
    /// Condensation after condensation.
    ContextWindowLoop,
}

impl StuckPattern {
    /// A sentence for logs and the CLI.
    pub fn describe(self) -> &'static str {
        match self {
            Self::RepeatingActionObservation => {
                "the agent repeated the same action with the same result"
            }
            Self::RepeatingActionError => "the agent repeated the same action with the same error",
            Self::Monologue => "the agent sent several messages in a row without user input",
            Self::AlternatingPattern => "the agent alternated between the same two actions",
            Self::ContextWindowLoop => "the context window kept overflowing",
        }
    }
}

/// Detects stuck patterns with the given thresholds.
#[derive(Debug, Clone, Copy, Default)]
pub struct StuckDetector {
    /// Thresholds in use.
    pub thresholds: StuckDetectionThresholds,
}

#[derive(PartialEq)]
enum Item {
    Action(String),
    Observation(String),
    Error(String),
    AgentMessage(String),
    Condensation,
}

fn action_key(a: &openhands_wire::event::ActionEvent) -> String {
    let thought: String = a.thought.iter().map(|t| t.text.as_str()).collect();
    let args = a
        .action
        .clone()
        .unwrap_or_else(|| Value::String(a.tool_call.arguments.clone()));
    format!("{}\u{1}{}\u{1}{}", a.tool_name, args, thought)
}

fn observation_key(tool: &str, obs: &Value) -> String {
    let content = obs.get("content").cloned().unwrap_or(Value::Null);
    format!("{tool}\u{1}{content}")
}

impl StuckDetector {
    /// A detector with these thresholds.
    pub fn new(thresholds: StuckDetectionThresholds) -> Self {
        Self { thresholds }
    }

    /// Checks `events` (the whole log, oldest first).
    pub fn check(&self, events: &[Event]) -> Option<StuckPattern> {
        let start = events.len().saturating_sub(MAX_EVENTS_SCANNED);
        let window = &events[start..];
        let after_user = window
            .iter()
            .rposition(|e| e.source == SourceType::User && matches!(e.body, EventBody::Message(_)))
            .map(|i| i + 1)
            .unwrap_or(0);
        let items: Vec<Item> = window[after_user..]
            .iter()
            .filter_map(|e| match &e.body {
                EventBody::Action(a) => Some(Item::Action(action_key(a))),
                EventBody::Observation(o) => Some(Item::Observation(observation_key(
                    &o.tool_name,
                    &o.observation,
                ))),
                EventBody::AgentError(err) => Some(Item::Error(err.error.clone())),
                EventBody::Message(m) if e.source == SourceType::Agent => {
                    Some(Item::AgentMessage(m.llm_message.text()))
                }
                EventBody::Condensation(_) => Some(Item::Condensation),
                _ => None,
            })
            .collect();
        let t = self.thresholds;
        if self.repeating_pairs(&items, t.action_observation, false) {
            return Some(StuckPattern::RepeatingActionObservation);
        }
        if self.repeating_pairs(&items, t.action_error, true) {
            return Some(StuckPattern::RepeatingActionError);
        }
        if t.monologue > 0
            && items.len() >= t.monologue
            && items[items.len() - t.monologue..]
                .iter()
                .all(|i| matches!(i, Item::AgentMessage(_)))
        {
            return Some(StuckPattern::Monologue);
        }
        if self.alternating(&items, t.alternating_pattern) {
            return Some(StuckPattern::AlternatingPattern);
        }
        let condensations = items
            .iter()
            .rev()
            .take_while(|i| matches!(i, Item::Condensation))
            .count();
        if condensations >= 3 {
            return Some(StuckPattern::ContextWindowLoop);
        }
        None
    }

    /// Action/result pairs in order: (action, result) where result is the
    /// next observation or error.
    fn pairs(items: &[Item]) -> Vec<(&Item, &Item)> {
        let mut out = Vec::new();
        let mut last_action: Option<&Item> = None;
        for it in items {
            match it {
                Item::Action(_) => last_action = Some(it),
                Item::Observation(_) | Item::Error(_) => {
                    if let Some(a) = last_action.take() {
                        out.push((a, it));
                    }
                }
                _ => {}
            }
        }
        out
    }

    fn repeating_pairs(&self, items: &[Item], n: usize, errors: bool) -> bool {
        if n == 0 {
            return false;
        }
        let pairs = Self::pairs(items);
        if pairs.len() < n {
            return false;
        }
        let tail = &pairs[pairs.len() - n..];
        let kind_ok = tail
            .iter()
            .all(|(_, r)| matches!(r, Item::Error(_)) == errors);
        kind_ok && tail.iter().all(|p| p == &tail[0])
    }

    fn alternating(&self, items: &[Item], n: usize) -> bool {
        if n < 4 {
            return false;
        }
        let pairs = Self::pairs(items);
        if pairs.len() < n {
            return false;
        }
        let tail = &pairs[pairs.len() - n..];
        if tail[0] == tail[1] {
            return false;
        }
        tail.iter().enumerate().all(|(i, p)| p == &tail[i % 2])
    }
}
