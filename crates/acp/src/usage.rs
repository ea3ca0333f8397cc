//! Token usage and cost of an ACP turn, read as the reference reads them:
//! tokens from the prompt response's `usage` (claude-agent-acp, codex-acp)
//! or its `_meta.quota.token_count` (gemini-cli); the context window and
//! the session's *cumulative* cost from the turn's last `usage_update`
//! session update (the cost recorded is the increase since the previous
//! one of the same session).

use serde_json::Value;

/// Tokens of one turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TurnTokens {
    /// Input (prompt) tokens.
    pub input: u64,
    /// Output (completion) tokens.
    pub output: u64,
    /// Tokens read from the cache.
    pub cache_read: u64,
    /// Tokens written to the cache.
    pub cache_write: u64,
    /// Thought (reasoning) tokens.
    pub reasoning: u64,
}

impl TurnTokens {
    /// From the prompt response's `usage` (`inputTokens`, `outputTokens`,
    /// `cachedReadTokens`, `cachedWriteTokens`, `thoughtTokens`), else its
    /// `_meta.quota.token_count` (`input_tokens`, `output_tokens`).
    pub fn from_response(usage: Option<&Value>, meta: Option<&Value>) -> Self {
        let n = |v: Option<&Value>, k: &str| {
            v.and_then(|v| v.get(k))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        if let Some(u) = usage.filter(|u| u.is_object()) {
            return Self {
                input: n(Some(u), "inputTokens"),
                output: n(Some(u), "outputTokens"),
                cache_read: n(Some(u), "cachedReadTokens"),
                cache_write: n(Some(u), "cachedWriteTokens"),
                reasoning: n(Some(u), "thoughtTokens"),
            };
        }
        let count = meta
            .and_then(|m| m.get("quota"))
            .and_then(|q| q.get("token_count"));
        Self {
            input: n(count, "input_tokens"),
            output: n(count, "output_tokens"),
            ..Self::default()
        }
    }

    /// Whether any input or output tokens were reported.
    pub fn any(&self) -> bool {
        self.input > 0 || self.output > 0
    }
}

/// A `usage_update` session update.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UsageUpdate {
    /// Tokens currently in context.
    pub used: u64,
    /// The context window.
    pub size: u64,
    /// The session's cumulative cost, when reported.
    pub cost: Option<f64>,
}

impl UsageUpdate {
    /// Reads the update (`{"sessionUpdate": "usage_update", "used", "size",
    /// "cost": {"amount", "currency"}}`); `None` for other updates.
    pub fn parse(update: &Value) -> Option<Self> {
        if update.get("sessionUpdate").and_then(Value::as_str) != Some("usage_update") {
            return None;
        }
        let n = |k: &str| update.get(k).and_then(Value::as_u64).unwrap_or(0);
        Some(Self {
            used: n("used"),
            size: n("size"),
            cost: update
                .get("cost")
                .and_then(|c| c.get("amount"))
                .and_then(Value::as_f64),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tokens_come_from_usage_or_the_gemini_quota() {
        let usage = json!({"totalTokens": 128, "inputTokens": 100, "outputTokens": 20,
            "cachedReadTokens": 5, "thoughtTokens": 3});
        assert_eq!(
            TurnTokens::from_response(Some(&usage), None),
            TurnTokens {
                input: 100,
                output: 20,
                cache_read: 5,
                cache_write: 0,
                reasoning: 3
            }
        );
        let meta = json!({"quota": {"token_count": {"input_tokens": 7, "output_tokens": 2}}});
        let t = TurnTokens::from_response(None, Some(&meta));
        assert_eq!((t.input, t.output), (7, 2));
        assert!(!TurnTokens::from_response(None, None).any());
    }

    #[test]
    fn usage_updates_carry_size_and_cumulative_cost() {
        let u = UsageUpdate::parse(&json!({"sessionUpdate": "usage_update", "used": 10,
            "size": 200000, "cost": {"amount": 0.5, "currency": "USD"}}))
        .unwrap();
        assert_eq!((u.used, u.size, u.cost), (10, 200000, Some(0.5)));
        assert_eq!(
            UsageUpdate::parse(&json!({"sessionUpdate": "usage_update", "used": 1, "size": 2}))
                .unwrap()
                .cost,
            None
        );
        assert!(UsageUpdate::parse(&json!({"sessionUpdate": "agent_message_chunk"})).is_none());
    }
}
