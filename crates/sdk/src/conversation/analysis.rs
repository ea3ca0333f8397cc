//! The configured security analyzer consulted before actions run, and its
//! verdict recorded as a `SecurityAnalysisEvent` (as the reference: once per
//! batch whenever an analyzer is set, whatever the policy then decides).

use super::error::ConversationError;
use super::local::LocalConversation;
use super::step::mask_strings;
use crate::security::{AnalysisContext, SecurityAnalysis, SecurityAnalyzer};
use openhands_wire::event::{ActionEvent, Event, EventBody, SecurityRisk, SourceType};
use openhands_wire::state::ConfirmationPolicy;
use serde_json::{Map, Value, json};

/// `kind` of the event carrying an analyzer's verdicts.
pub const SECURITY_ANALYSIS_KIND: &str = "SecurityAnalysisEvent";

impl LocalConversation {
    /// Risks of `actions` for the confirmation policy. Without an analyzer
    /// every action is UNKNOWN; a lone `finish`/`think` is never analyzed.
    /// An analyzer configuration that cannot be used makes every action
    /// HIGH, with the error recorded.
    pub(crate) async fn analyze_actions(
        &self,
        config: Option<&Value>,
        policy: &ConfirmationPolicy,
        actions: &[(String, ActionEvent)],
    ) -> Result<Vec<SecurityRisk>, ConversationError> {
        if actions.is_empty()
            || (actions.len() == 1 && matches!(actions[0].1.tool_name.as_str(), "finish" | "think"))
        {
            return Ok(Vec::new());
        }
        let Some(config) = config else {
            return Ok(vec![SecurityRisk::Unknown; actions.len()]);
        };
        let (kind, analyses): (String, Vec<SecurityAnalysis>) = match SecurityAnalyzer::from_json(
            config,
        ) {
            Ok(analyzer) if analyzer.needs_llm() => {
                // A guardrail model judges each action with the actions
                // before it (from the log, so a restart keeps them).
                let window = analyzer.history_window();
                let event_window = analyzer.event_window();
                let want_events = event_window > 0;
                let first = actions[0].0.clone();
                let (mut history, mut before): (Vec<ActionEvent>, Vec<Event>) =
                    self.with_branch(|events| {
                        let end = events
                            .iter()
                            .rposition(|e| e.id == first)
                            .unwrap_or(events.len());
                        let mut prior: Vec<ActionEvent> = events[..end]
                            .iter()
                            .rev()
                            .filter_map(|e| match &e.body {
                                EventBody::Action(a) => Some(a.clone()),
                                _ => None,
                            })
                            .take(window)
                            .collect();
                        prior.reverse();
                        let mut before: Vec<Event> = Vec::new();
                        if want_events {
                            // The leading system prompt and the recent window.
                            let mut recent: Vec<Event> = events[..end]
                                .iter()
                                .rev()
                                .filter(|e| e.is_llm_convertible())
                                .take(event_window)
                                .cloned()
                                .collect();
                            recent.reverse();
                            if let Some(sp) = events[..end]
                                .iter()
                                .find(|e| e.is_llm_convertible())
                                .filter(|e| matches!(e.body, EventBody::SystemPrompt(_)))
                                && !recent.iter().any(|e| e.id == sp.id)
                            {
                                before.push(sp.clone());
                            }
                            before.extend(recent);
                        }
                        (prior, before)
                    });
                let agent_llm = self.inner.agent.llm();
                let mut analyses = Vec::with_capacity(actions.len());
                for (id, act) in actions {
                    let ctx = AnalysisContext {
                        history: &history,
                        events: &before,
                        agent_llm: &agent_llm,
                    };
                    analyses.push(analyzer.analyze_with(act, &ctx).await);
                    history.push(act.clone());
                    if want_events {
                        let mut e = Event::new(EventBody::Action(act.clone()));
                        e.id = id.clone();
                        before.push(e);
                    }
                }
                (analyzer.kind().to_string(), analyses)
            }
            Ok(analyzer) => {
                let list = actions.to_vec();
                let a = analyzer.clone();
                // Parsing is CPU work: off the runtime's workers.
                let analyses = tokio::task::spawn_blocking(move || {
                    list.iter()
                        .map(|(_, act)| a.analyze(act))
                        .collect::<Vec<_>>()
                })
                .await
                .unwrap_or_else(|e| {
                    vec![
                        SecurityAnalysis::failed(&format!("analysis task failed: {e}"));
                        actions.len()
                    ]
                });
                (analyzer.kind().to_string(), analyses)
            }
            Err(e) => {
                tracing::error!(error = %e, "security analyzer unusable; actions treated as HIGH");
                let kind = config
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown")
                    .to_string();
                (
                    kind,
                    vec![SecurityAnalysis::failed(&e.to_string()); actions.len()],
                )
            }
        };
        let policy_kind = serde_json::to_value(policy)
            .ok()
            .and_then(|v| v.get("kind").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_default();
        let mut risks_map = Map::new();
        let mut details = Map::new();
        for ((id, _), a) in actions.iter().zip(&analyses) {
            risks_map.insert(id.clone(), json!(a.risk));
            if let Some(d) = &a.details {
                details.insert(id.clone(), Value::Object(d.clone()));
            }
        }
        let mut fields = Map::new();
        fields.insert("analyzer".into(), json!(kind));
        fields.insert("policy".into(), json!(policy_kind));
        fields.insert("risks".into(), Value::Object(risks_map));
        fields.insert("details".into(), Value::Object(details));
        let mut value = Value::Object(fields);
        mask_strings(&mut value, &self.secrets());
        let fields = match value {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let event = Event::with_source(
            SourceType::Environment,
            EventBody::Unknown {
                kind: SECURITY_ANALYSIS_KIND.into(),
                fields,
            },
        );
        self.emit_async(event).await?;
        Ok(analyses.into_iter().map(|a| a.risk).collect())
    }
}
