//! The judge's verdict and how its free-text answer is read.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Whether the objective is done, as the judge sees it (the reference's
/// `GoalVerdict`: these three fields, in this JSON form).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoalVerdict {
    /// Probability, 0 to 1, that the whole objective is provably done.
    pub score: f64,
    /// Whether the judge considers the objective complete.
    pub complete: bool,
    /// What remains, empty when complete.
    #[serde(default)]
    pub missing: String,
}

impl GoalVerdict {
    /// Reads the judge's answer: a JSON object, alone or inside other text.
    /// An answer that cannot be read is a zero score, never a completion,
    /// so a confused judge keeps the agent working rather than stopping it.
    pub fn parse(answer: &str) -> Self {
        let answer = answer.trim();
        let object = serde_json::from_str::<Value>(answer)
            .ok()
            .filter(Value::is_object)
            .or_else(|| embedded_object(answer));
        let Some(Value::Object(fields)) = object else {
            tracing::warn!(answer, "the goal judge's verdict could not be read");
            return Self {
                score: 0.0,
                complete: false,
                missing: "Judge verdict could not be parsed.".into(),
            };
        };
        let score = match fields.get("score") {
            Some(Value::Number(n)) => n.as_f64().unwrap_or(0.0),
            Some(Value::String(s)) => s.trim().parse().unwrap_or(0.0),
            Some(Value::Bool(b)) => f64::from(u8::from(*b)),
            _ => 0.0,
        };
        let score = if score.is_nan() {
            0.0
        } else {
            score.clamp(0.0, 1.0)
        };
        let complete = match fields.get("complete") {
            Some(Value::Bool(b)) => *b,
            None => score >= 1.0,
            Some(Value::Null) => false,
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Number(n)) => n.as_f64().is_some_and(|x| x != 0.0),
            Some(Value::Array(a)) => !a.is_empty(),
            Some(Value::Object(o)) => !o.is_empty(),
        };
        // Any empty or false value means nothing is missing.
        let missing = match fields.get("missing") {
            None | Some(Value::Null) | Some(Value::Bool(false)) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(a)) if a.is_empty() => String::new(),
            Some(Value::Object(o)) if o.is_empty() => String::new(),
            Some(Value::Number(n)) if n.as_f64() == Some(0.0) => String::new(),
            Some(other) => other.to_string(),
        };
        Self {
            score,
            complete,
            missing,
        }
    }
}

/// The span from the first `{` to the last `}`, when it is a JSON object.
fn embedded_object(text: &str) -> Option<Value> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    if end <= start {
        return None;
    }
    serde_json::from_str::<Value>(&text[start..=end])
        .ok()
        .filter(Value::is_object)
}
