//! Condensers keep the LLM's view of a long conversation within limits.
//!
//! * `NoOpCondenser` never condenses;
//! * `LLMSummarizingCondenser` (reference defaults `max_size` 240, `keep_first`
//!   2, `minimum_progress` 0.1, no `max_tokens`) condenses for three reasons,
//!   as the reference: a pending `CondensationRequest` (the agent adds one
//!   when the model's context window overflows, `condense` adds one by hand),
//!   the view's estimated tokens above `max_tokens` (or the agent model's
//!   input limit, whichever is smaller), or more than `max_size` events. The
//!   first `keep_first` events (and the system prompt) and the newest events
//!   stay; the middle, cut only between complete tool-call batches, is
//!   summarised by an LLM into a `Condensation` event (forgotten ids +
//!   summary + offset). Too little to forget (below `minimum_progress` of the
//!   view) skips a size-triggered condensation; a request or token pressure
//!   then does a *hard context reset* instead: everything after the system
//!   prompt is summarised (event texts shortened and retried when the summary
//!   call fails). Tokens are estimated (about 4 characters a token): there is
//!   no model tokenizer here.
//! * `PipelineCondenser` asks each of its condensers in turn.
//!
//! The condensation itself is an event, so a resumed conversation rebuilds
//! exactly the same view.

mod summarizing;

use openhands_llm::{Llm, LlmError};
use openhands_wire::event::{Condensation, Event};
use serde_json::Value;

/// A configured condenser.
#[derive(Clone)]
pub enum Condenser {
    /// Never condenses.
    NoOp,
    /// Summarises the middle of the view with an LLM.
    LlmSummarizing(Box<Summarizing>),
    /// Several condensers, first one that condenses wins.
    Pipeline(Vec<Condenser>),
}

/// `LLMSummarizingCondenser` settings.
#[derive(Clone)]
pub struct Summarizing {
    /// LLM used for summaries.
    pub llm: Llm,
    /// View size that triggers condensation.
    pub max_size: usize,
    /// Tokens that trigger condensation.
    pub max_tokens: Option<usize>,
    /// How the view's tokens are counted (the agent model's tokenizer, as
    /// the reference counts with the agent's LLM).
    pub tokens: crate::tokens::TokenCounter,
    /// Leading events always kept.
    pub keep_first: usize,
    /// Smallest share of the view a condensation must forget.
    pub minimum_progress: f64,
    /// Attempts of a hard context reset.
    pub hard_reset_max_retries: usize,
    /// Factor the event texts shrink by after a failed hard-reset attempt.
    pub hard_reset_scaling: f64,
}

/// How urgently a view must be condensed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requirement {
    /// Only the event count is over: skip when nothing good can be forgotten.
    Soft,
    /// A request or token pressure: condense, by hard reset if need be.
    Hard,
}

impl std::fmt::Debug for Condenser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Condenser::NoOp => f.write_str("NoOpCondenser"),
            Condenser::LlmSummarizing(c) => f
                .debug_struct("LLMSummarizingCondenser")
                .field("max_size", &c.max_size)
                .field("max_tokens", &c.max_tokens)
                .field("keep_first", &c.keep_first)
                .field("minimum_progress", &c.minimum_progress)
                .finish(),
            Condenser::Pipeline(c) => f.debug_tuple("PipelineCondenser").field(c).finish(),
        }
    }
}

/// Errors building a condenser from its JSON configuration.
#[derive(Debug, thiserror::Error)]
pub enum CondenserError {
    /// The configuration is invalid.
    #[error("invalid condenser configuration: {0}")]
    Invalid(String),
    /// The condenser's LLM cannot be built.
    #[error(transparent)]
    Llm(#[from] LlmError),
}

impl Condenser {
    /// Builds a condenser from its JSON (`{"kind":"LLMSummarizingCondenser", "llm":{...}, ...}`).
    /// The agent's LLM is reused (with usage id `condenser`) when the
    /// condenser names the same model, so both share one client.
    pub fn from_json(value: &Value, agent_llm: &Llm) -> Result<Self, CondenserError> {
        match value.get("kind").and_then(Value::as_str) {
            Some("NoOpCondenser") => Ok(Condenser::NoOp),
            Some("PipelineCondenser") => {
                let items = value
                    .get("condensers")
                    .and_then(Value::as_array)
                    .ok_or_else(|| CondenserError::Invalid("`condensers` list missing".into()))?;
                Ok(Condenser::Pipeline(
                    items
                        .iter()
                        .map(|c| Condenser::from_json(c, agent_llm))
                        .collect::<Result<_, _>>()?,
                ))
            }
            Some("LLMSummarizingCondenser") | None if value.get("llm").is_some() => {
                let limits = Limits::parse(value)?;
                let mut config: openhands_wire::LlmConfig = value
                    .get("llm")
                    .cloned()
                    .map(serde_json::from_value)
                    .transpose()
                    .map_err(|e| CondenserError::Invalid(e.to_string()))?
                    .unwrap_or_else(|| agent_llm.config().clone());
                let llm = if config.model == agent_llm.config().model
                    && config.base_url == agent_llm.config().base_url
                {
                    agent_llm.with_usage_id(config.usage_id.clone())
                } else {
                    if config
                        .api_key
                        .as_ref()
                        .is_none_or(|k| k.is_redacted_or_empty())
                    {
                        config.api_key = agent_llm.config().api_key.clone();
                    }
                    Llm::new(config)?
                };
                Ok(Condenser::LlmSummarizing(Box::new(Summarizing {
                    llm,
                    max_size: limits.max_size,
                    max_tokens: limits.max_tokens,
                    tokens: crate::tokens::TokenCounter::for_model(&agent_llm.config().model),
                    keep_first: limits.keep_first,
                    minimum_progress: limits.minimum_progress,
                    hard_reset_max_retries: limits.hard_reset_max_retries,
                    hard_reset_scaling: limits.hard_reset_scaling,
                })))
            }
            Some(other) => Err(CondenserError::Invalid(format!(
                "unknown condenser kind '{other}'"
            ))),
            None => Err(CondenserError::Invalid("condenser has no `kind`".into())),
        }
    }

    /// How urgently `view` (with a pending request or not) must be
    /// condensed; `agent_limit` is the agent model's input-token limit.
    pub fn requirement(
        &self,
        view: &[&Event],
        requested: bool,
        agent_limit: Option<usize>,
    ) -> Option<Requirement> {
        match self {
            Condenser::NoOp => None,
            Condenser::LlmSummarizing(c) => c.requirement(view, requested, agent_limit),
            Condenser::Pipeline(items) => items
                .iter()
                .filter_map(|x| x.requirement(view, requested, agent_limit))
                .max_by_key(|r| *r == Requirement::Hard),
        }
    }

    /// Whether this condenser can serve a `CondensationRequest`.
    pub fn handles_requests(&self) -> bool {
        match self {
            Condenser::NoOp => false,
            Condenser::LlmSummarizing(_) => true,
            Condenser::Pipeline(c) => c.iter().any(Condenser::handles_requests),
        }
    }

    /// Decides on `view` (LLM-visible events, oldest first; `requested` when
    /// a `CondensationRequest` is pending) and returns the condensation to
    /// record, if any.
    pub async fn condense(
        &self,
        view: &[Event],
        previous_summary: Option<&str>,
        requested: bool,
        agent_limit: Option<usize>,
    ) -> Result<Option<Condensation>, LlmError> {
        match self {
            Condenser::NoOp => Ok(None),
            Condenser::Pipeline(items) => {
                for c in items {
                    if let Some(done) =
                        Box::pin(c.condense(view, previous_summary, requested, agent_limit)).await?
                    {
                        return Ok(Some(done));
                    }
                }
                Ok(None)
            }
            Condenser::LlmSummarizing(c) => {
                c.condense(view, previous_summary, requested, agent_limit)
                    .await
            }
        }
    }

    /// The reference's rule for a condenser when the agent's LLM is
    /// switched from `current` to `new`: an `LLMSummarizingCondenser`
    /// whose LLM is configured exactly as `current` (its `usage_id` and an
    /// omitted key aside) follows the switch, keeping its own `usage_id`;
    /// any other condenser keeps its LLM. Returns the condenser's new
    /// JSON, or `None` when it stays as it is.
    pub fn follow_llm_switch(
        value: &Value,
        current: &openhands_wire::LlmConfig,
        new: &openhands_wire::LlmConfig,
    ) -> Option<Value> {
        let kind = value.get("kind").and_then(Value::as_str);
        if !matches!(kind, Some("LLMSummarizingCondenser") | None) {
            return None;
        }
        let mut own: openhands_wire::LlmConfig =
            serde_json::from_value(value.get("llm")?.clone()).ok()?;
        if own
            .api_key
            .as_ref()
            .is_none_or(|k| k.is_redacted_or_empty())
        {
            own.api_key = current.api_key.clone();
        }
        let usage_id = std::mem::take(&mut own.usage_id);
        let mut current = current.clone();
        current.usage_id = String::new();
        if own != current {
            return None;
        }
        let mut config = new.clone();
        config.usage_id = usage_id;
        let mut out = value.clone();
        out.as_object_mut()?
            .insert("llm".into(), serde_json::to_value(config).ok()?);
        Some(out)
    }

    /// The LLM used for summaries, if any.
    pub fn llm(&self) -> Option<&Llm> {
        match self {
            Condenser::LlmSummarizing(c) => Some(&c.llm),
            Condenser::Pipeline(c) => c.iter().find_map(Condenser::llm),
            Condenser::NoOp => None,
        }
    }
}

/// The numeric settings of an `LLMSummarizingCondenser`, validated as the
/// reference validates them.
struct Limits {
    max_size: usize,
    max_tokens: Option<usize>,
    keep_first: usize,
    minimum_progress: f64,
    hard_reset_max_retries: usize,
    hard_reset_scaling: f64,
}

impl Limits {
    fn parse(value: &Value) -> Result<Self, CondenserError> {
        let max_size = positive(value, "max_size", 240)?;
        let keep_first = match value.get("keep_first") {
            None | Some(Value::Null) => 2,
            Some(v) => v.as_u64().ok_or_else(|| {
                CondenserError::Invalid("keep_first must be a non-negative integer".into())
            })? as usize,
        };
        let max_tokens = match value.get("max_tokens") {
            None | Some(Value::Null) => None,
            Some(_) => Some(positive(value, "max_tokens", 0)?),
        };
        if (max_size / 2) as i64 - keep_first as i64 - 1 <= 0 {
            return Err(CondenserError::Invalid(
                "keep_first must be less than max_size // 2 to leave room for condensation".into(),
            ));
        }
        Ok(Limits {
            max_size,
            max_tokens,
            keep_first,
            minimum_progress: fraction(value, "minimum_progress", 0.1)?,
            hard_reset_max_retries: positive(value, "hard_context_reset_max_retries", 5)?,
            hard_reset_scaling: fraction(value, "hard_context_reset_context_scaling", 0.8)?,
        })
    }
}

impl Condenser {
    /// Checks a condenser configuration without building its LLM: the
    /// kinds and settings `from_json` would refuse.
    pub fn validate(value: &Value) -> Result<(), CondenserError> {
        match value.get("kind").and_then(Value::as_str) {
            Some("NoOpCondenser") => Ok(()),
            Some("PipelineCondenser") => value
                .get("condensers")
                .and_then(Value::as_array)
                .ok_or_else(|| CondenserError::Invalid("`condensers` list missing".into()))?
                .iter()
                .try_for_each(Condenser::validate),
            Some("LLMSummarizingCondenser") | None if value.get("llm").is_some() => {
                Limits::parse(value).map(|_| ())
            }
            Some(other) => Err(CondenserError::Invalid(format!(
                "unknown condenser kind '{other}'"
            ))),
            None => Err(CondenserError::Invalid("condenser has no `kind`".into())),
        }
    }
}

fn positive(value: &Value, field: &str, default: usize) -> Result<usize, CondenserError> {
    match value.get(field) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => match v.as_u64() {
            Some(n) if n > 0 => Ok(n as usize),
            _ => Err(CondenserError::Invalid(format!(
                "{field} must be an integer greater than 0"
            ))),
        },
    }
}

fn fraction(value: &Value, field: &str, default: f64) -> Result<f64, CondenserError> {
    match value.get(field) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => match v.as_f64() {
            Some(x) if x > 0.0 && x < 1.0 => Ok(x),
            _ => Err(CondenserError::Invalid(format!(
                "{field} must be greater than 0 and less than 1"
            ))),
        },
    }
}
