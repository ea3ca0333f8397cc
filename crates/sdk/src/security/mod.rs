//! Security analyzers: the risk of an action before it runs.
//!
//! Configured by JSON with the reference's `kind`s:
//! * `LLMSecurityAnalyzer`: the `security_risk` the model attached to its call;
//! * `PatternSecurityAnalyzer`: known signatures ([`pattern`], with the
//!   always-on command signatures of [`signatures`]);
//! * `PolicyRailSecurityAnalyzer`: rules over the parsed shell structure ([`rails`]);
//! * `ToolShieldLLMSecurityAnalyzer` (`llm`, `history_window`,
//!   `safety_experiences`): a separate guardrail model ([`toolshield`]);
//! * `GraySwanAnalyzer` (`api_url`, `api_key`/`GRAYSWAN_API_KEY`,
//!   `policy_id`, thresholds, `timeout`): a remote monitor service
//!   ([`grayswan`]);
//! * `EnsembleSecurityAnalyzer` (`analyzers`, `propagate_unknown`): the highest
//!   concrete risk of its children; UNKNOWN only when every child says so (or
//!   any, with `propagate_unknown`); a child that fails counts as HIGH.
//!
//! An analyzer that fails is never read as "low": the action is HIGH and the
//! error is in the analysis details (recorded in the `SecurityAnalysisEvent`).

pub mod extract;
pub mod grayswan;
pub mod pattern;
pub mod rails;
pub mod shell;
pub mod signatures;
pub mod toolshield;

#[cfg(test)]
#[path = "table_tests.rs"]
mod table_tests;

#[cfg(test)]
#[path = "corpus_tests.rs"]
mod corpus_tests;

use std::panic::{AssertUnwindSafe, catch_unwind};

use openhands_wire::event::{ActionEvent, Event, SecurityRisk};
use serde_json::{Map, Value, json};

/// A configuration the analyzers cannot use.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AnalyzerConfigError {
    /// `kind` names no analyzer this implementation has.
    #[error("unknown security analyzer kind '{0}'")]
    UnknownKind(String),
    /// A known analyzer this implementation does not provide.
    #[error("security analyzer kind '{0}' is not supported by this server")]
    Unsupported(String),
    /// `kind` is missing.
    #[error("security analyzer has no `kind`")]
    NoKind,
    /// A field has a bad value.
    #[error("security analyzer field `{field}`: {message}")]
    Field {
        /// The field.
        field: String,
        /// What is wrong.
        message: String,
    },
}

impl AnalyzerConfigError {
    fn field(field: &str, message: &str) -> Self {
        AnalyzerConfigError::Field {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The JSON path (below the analyzer object) the error is about.
    pub fn loc(&self) -> Vec<String> {
        match self {
            AnalyzerConfigError::Field { field, .. } => vec![field.clone()],
            _ => vec!["kind".into()],
        }
    }
}

/// One action's verdict: the risk and optional analyzer-specific detail.
#[derive(Debug, Clone, PartialEq)]
pub struct SecurityAnalysis {
    /// The risk.
    pub risk: SecurityRisk,
    /// Why (rules, detector ids, child verdicts, an error).
    pub details: Option<Map<String, Value>>,
}

impl SecurityAnalysis {
    /// A verdict without detail.
    pub fn plain(risk: SecurityRisk) -> Self {
        SecurityAnalysis {
            risk,
            details: None,
        }
    }

    fn with_detector(risk: SecurityRisk, id: &str) -> Self {
        let mut m = Map::new();
        m.insert("detector".into(), json!(id));
        SecurityAnalysis {
            risk,
            details: Some(m),
        }
    }

    /// The failure verdict: HIGH, with the error in the details.
    pub fn failed(error: &str) -> Self {
        let mut m = Map::new();
        m.insert("error".into(), json!(error));
        SecurityAnalysis {
            risk: SecurityRisk::High,
            details: Some(m),
        }
    }
}

/// What an analyzer may know of the conversation besides the action.
#[derive(Clone, Copy)]
pub struct AnalysisContext<'a> {
    /// The actions before the analyzed one (oldest first).
    pub history: &'a [ActionEvent],
    /// The conversation's events before the analyzed action (oldest first;
    /// filled only as far as [`SecurityAnalyzer::event_window`] says).
    pub events: &'a [Event],
    /// The agent's model: lends its client/key to a guardrail on the same
    /// endpoint.
    pub agent_llm: &'a openhands_llm::Llm,
}

/// A configured analyzer.
#[derive(Debug, Clone)]
pub enum SecurityAnalyzer {
    /// `LLMSecurityAnalyzer`.
    Llm,
    /// `PatternSecurityAnalyzer`.
    Pattern(Box<pattern::PatternAnalyzer>),
    /// `PolicyRailSecurityAnalyzer`.
    PolicyRail,
    /// `ToolShieldLLMSecurityAnalyzer`.
    ToolShield(Box<toolshield::ToolShield>),
    /// `GraySwanAnalyzer`.
    GraySwan(Box<grayswan::GraySwan>),
    /// `EnsembleSecurityAnalyzer`.
    Ensemble {
        /// Children (at least one).
        analyzers: Vec<SecurityAnalyzer>,
        /// Any UNKNOWN child makes the result UNKNOWN.
        propagate_unknown: bool,
    },
}

impl SecurityAnalyzer {
    /// Builds an analyzer from its JSON (`{"kind": …, …}`).
    pub fn from_json(value: &Value) -> Result<Self, AnalyzerConfigError> {
        let kind = value
            .get("kind")
            .and_then(Value::as_str)
            .ok_or(AnalyzerConfigError::NoKind)?;
        match kind {
            "LLMSecurityAnalyzer" => Ok(SecurityAnalyzer::Llm),
            "PatternSecurityAnalyzer" => Ok(SecurityAnalyzer::Pattern(Box::new(
                pattern::PatternAnalyzer::from_json(value)?,
            ))),
            "PolicyRailSecurityAnalyzer" => Ok(SecurityAnalyzer::PolicyRail),
            "EnsembleSecurityAnalyzer" => {
                let items = value
                    .get("analyzers")
                    .and_then(Value::as_array)
                    .ok_or_else(|| AnalyzerConfigError::field("analyzers", "a list is required"))?;
                if items.is_empty() {
                    return Err(AnalyzerConfigError::field(
                        "analyzers",
                        "at least one analyzer is required",
                    ));
                }
                let propagate_unknown = match value.get("propagate_unknown") {
                    None | Some(Value::Null) => false,
                    Some(Value::Bool(b)) => *b,
                    Some(_) => {
                        return Err(AnalyzerConfigError::field(
                            "propagate_unknown",
                            "must be a boolean",
                        ));
                    }
                };
                Ok(SecurityAnalyzer::Ensemble {
                    analyzers: items
                        .iter()
                        .map(SecurityAnalyzer::from_json)
                        .collect::<Result<_, _>>()?,
                    propagate_unknown,
                })
            }
            "ToolShieldLLMSecurityAnalyzer" => Ok(SecurityAnalyzer::ToolShield(Box::new(
                toolshield::ToolShield::from_json(value)?,
            ))),
            "GraySwanAnalyzer" => Ok(SecurityAnalyzer::GraySwan(Box::new(
                grayswan::GraySwan::from_json(value)?,
            ))),
            other => Err(AnalyzerConfigError::UnknownKind(other.into())),
        }
    }

    /// The `kind` name (what `SecurityAnalysisEvent.analyzer` carries).
    pub fn kind(&self) -> &'static str {
        match self {
            SecurityAnalyzer::Llm => "LLMSecurityAnalyzer",
            SecurityAnalyzer::Pattern(_) => "PatternSecurityAnalyzer",
            SecurityAnalyzer::PolicyRail => "PolicyRailSecurityAnalyzer",
            SecurityAnalyzer::ToolShield(_) => "ToolShieldLLMSecurityAnalyzer",
            SecurityAnalyzer::GraySwan(_) => "GraySwanAnalyzer",
            SecurityAnalyzer::Ensemble { .. } => "EnsembleSecurityAnalyzer",
        }
    }

    /// Whether a model or a remote service is asked (then
    /// [`SecurityAnalyzer::analyze_with`] must be used).
    pub fn needs_llm(&self) -> bool {
        match self {
            SecurityAnalyzer::ToolShield(_) | SecurityAnalyzer::GraySwan(_) => true,
            SecurityAnalyzer::Ensemble { analyzers, .. } => analyzers.iter().any(Self::needs_llm),
            _ => false,
        }
    }

    /// How many recent LLM-visible events an analyzer in the tree reads
    /// (0: none); [`AnalysisContext::events`] must hold at least those and
    /// the leading system prompt.
    pub fn event_window(&self) -> usize {
        match self {
            SecurityAnalyzer::GraySwan(g) => g.history_limit,
            SecurityAnalyzer::Ensemble { analyzers, .. } => {
                analyzers.iter().map(Self::event_window).max().unwrap_or(0)
            }
            _ => 0,
        }
    }

    /// The largest action history any analyzer in the tree looks at.
    pub fn history_window(&self) -> usize {
        match self {
            SecurityAnalyzer::ToolShield(t) => t.history_window,
            SecurityAnalyzer::Ensemble { analyzers, .. } => analyzers
                .iter()
                .map(Self::history_window)
                .max()
                .unwrap_or(0),
            _ => 0,
        }
    }

    /// Analyzes one action, asking guardrail models and monitor services
    /// where configured, with what `ctx` knows of the conversation.
    pub async fn analyze_with(
        &self,
        action: &ActionEvent,
        ctx: &AnalysisContext<'_>,
    ) -> SecurityAnalysis {
        match self {
            SecurityAnalyzer::ToolShield(t) => match t.client(ctx.agent_llm) {
                Ok(llm) => t.analyze(&llm, action, ctx.history).await,
                Err(e) => SecurityAnalysis::failed(&format!("guardrail model unusable: {e}")),
            },
            SecurityAnalyzer::GraySwan(g) => g.analyze(ctx.events, action).await,
            SecurityAnalyzer::Ensemble {
                analyzers,
                propagate_unknown,
            } => {
                let mut results = Vec::with_capacity(analyzers.len());
                for a in analyzers {
                    let r = Box::pin(a.analyze_with(action, ctx)).await;
                    results.push((a.kind(), r));
                }
                combine(results, *propagate_unknown)
            }
            other => other.analyze(action),
        }
    }

    /// Analyzes one action. Never fails: a failing analyzer yields HIGH with
    /// the error in the details.
    pub fn analyze(&self, action: &ActionEvent) -> SecurityAnalysis {
        match catch_unwind(AssertUnwindSafe(|| self.analyze_inner(action))) {
            Ok(a) => a,
            Err(_) => {
                tracing::error!(analyzer = self.kind(), "security analyzer panicked");
                SecurityAnalysis::failed(&format!("{} failed while analyzing", self.kind()))
            }
        }
    }

    fn analyze_inner(&self, action: &ActionEvent) -> SecurityAnalysis {
        match self {
            SecurityAnalyzer::Llm => SecurityAnalysis::plain(action.security_risk),
            SecurityAnalyzer::Pattern(p) => p.analyze(action),
            SecurityAnalyzer::PolicyRail => policy_rails(action),
            SecurityAnalyzer::Ensemble {
                analyzers,
                propagate_unknown,
            } => combine(
                analyzers
                    .iter()
                    .map(|a| (a.kind(), a.analyze(action)))
                    .collect(),
                *propagate_unknown,
            ),
            SecurityAnalyzer::ToolShield(_) | SecurityAnalyzer::GraySwan(_) => SecurityAnalysis {
                risk: SecurityRisk::Unknown,
                details: Some(Map::from_iter([(
                    "error".to_string(),
                    json!("the guardrail model or service is only asked by the conversation"),
                )])),
            },
        }
    }
}

/// The ensemble's fusion: the highest concrete risk; UNKNOWN when every
/// child is UNKNOWN, or any is with `propagate_unknown`.
fn combine(
    results: Vec<(&'static str, SecurityAnalysis)>,
    propagate_unknown: bool,
) -> SecurityAnalysis {
    let any_unknown = results.iter().any(|(_, r)| r.risk == SecurityRisk::Unknown);
    let concrete = results
        .iter()
        .map(|(_, r)| r.risk)
        .filter(|r| *r != SecurityRisk::Unknown)
        .max();
    let risk = match (propagate_unknown, any_unknown, concrete) {
        (true, true, _) | (_, _, None) => SecurityRisk::Unknown,
        (_, _, Some(r)) => r,
    };
    let children: Vec<Value> = results
        .into_iter()
        .map(|(kind, r)| {
            let mut m = Map::new();
            m.insert("kind".into(), json!(kind));
            m.insert(
                "risk".into(),
                serde_json::to_value(r.risk).unwrap_or(Value::Null),
            );
            if let Some(d) = r.details {
                m.insert("details".into(), Value::Object(d));
            }
            Value::Object(m)
        })
        .collect();
    let mut details = Map::new();
    details.insert("analyzers".into(), Value::Array(children));
    SecurityAnalysis {
        risk,
        details: Some(details),
    }
}

/// `PolicyRailSecurityAnalyzer` on one action: every executable segment is
/// parsed as shell and the rails evaluated; HIGH/MEDIUM when a rail fires,
/// UNKNOWN when relevant structure could not be resolved, else LOW.
fn policy_rails(action: &ActionEvent) -> SecurityAnalysis {
    let mut risk = SecurityRisk::Low;
    let mut rules: Vec<&'static str> = Vec::new();
    let mut uncertain = false;
    for seg in extract::exec_segments(action) {
        let v = rails::assess(&seg);
        if v.risk > risk {
            risk = v.risk;
        }
        uncertain |= v.uncertain;
        for r in v.rules {
            if !rules.contains(&r) {
                rules.push(r);
            }
        }
    }
    if risk == SecurityRisk::Low && uncertain {
        risk = SecurityRisk::Unknown;
    }
    if rules.is_empty() {
        return SecurityAnalysis::plain(risk);
    }
    let mut m = Map::new();
    m.insert("rules".into(), json!(rules));
    SecurityAnalysis {
        risk,
        details: Some(m),
    }
}
