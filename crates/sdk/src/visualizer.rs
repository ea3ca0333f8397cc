//! A readable live view of conversation events for terminals: actions with
//! their summary and arguments, observations (shortened), agent messages,
//! errors, status changes and costs. Plug it in as an event callback, or
//! render single events with [`render_event`].

use openhands_wire::content::Content;
use openhands_wire::event::{Event, EventBody, SourceType};
use serde_json::Value;

/// Visual style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// Use ANSI colours.
    pub color: bool,
    /// Longest observation text shown (characters).
    pub max_observation_chars: usize,
}

impl Default for Style {
    fn default() -> Self {
        Self {
            color: false,
            max_observation_chars: 1200,
        }
    }
}

fn paint(style: &Style, code: &str, text: &str) -> String {
    if style.color {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

fn shorten(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max).collect();
    format!("{head}… [{} more characters]", n - max)
}

fn action_detail(action: &Value) -> String {
    let Some(obj) = action.as_object() else {
        return String::new();
    };
    let mut parts = Vec::new();
    for (k, v) in obj {
        if k == "kind" {
            continue;
        }
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Null => continue,
            other => other.to_string(),
        };
        parts.push(format!("{k}: {}", shorten(&text, 400)));
    }
    parts.join("\n    ")
}

/// Renders one event as text, or `None` for events not worth showing
/// (streaming deltas, most state updates).
pub fn render_event(event: &Event, style: &Style) -> Option<String> {
    match &event.body {
        EventBody::SystemPrompt(sp) => Some(paint(
            style,
            "2",
            &format!("[system] prompt ready, {} tools", sp.tools.len()),
        )),
        EventBody::Message(m) => {
            let who = match event.source {
                SourceType::User => "user",
                SourceType::Agent => "agent",
                SourceType::Environment => "environment",
                SourceType::Hook => "hook",
            };
            let color = if event.source == SourceType::Agent {
                "1;32"
            } else {
                "1;34"
            };
            let mut text = m.llm_message.text();
            let images = m
                .llm_message
                .content
                .iter()
                .filter(|c| matches!(c, Content::Image(_)))
                .count();
            if images > 0 {
                text.push_str(&format!(" [{images} image(s)]"));
            }
            Some(format!(
                "{} {}",
                paint(style, color, &format!("[{who}]")),
                text
            ))
        }
        EventBody::Action(a) => {
            let mut out = paint(
                style,
                "1;33",
                &format!(
                    "[action] {}",
                    a.summary.clone().unwrap_or_else(|| a.tool_name.clone())
                ),
            );
            let thought: String = a.thought.iter().map(|t| t.text.as_str()).collect();
            if !thought.trim().is_empty() {
                out = format!(
                    "{}\n{out}",
                    paint(style, "2", &format!("  thought: {}", thought.trim()))
                );
            }
            if let Some(action) = &a.action {
                let d = action_detail(action);
                if !d.is_empty() {
                    out.push_str(&format!("\n    {d}"));
                }
            }
            Some(out)
        }
        EventBody::Observation(o) => {
            let text = o
                .observation
                .get("content")
                .and_then(|c| serde_json::from_value::<Vec<Content>>(c.clone()).ok())
                .map(|c| Content::join_text(&c))
                .unwrap_or_default();
            let mut extra = String::new();
            if let Some(code) = o.observation.get("exit_code").and_then(Value::as_i64) {
                extra = format!(" (exit code {code})");
            }
            Some(format!(
                "{}{extra}\n{}",
                paint(style, "36", &format!("[observation] {}", o.tool_name)),
                shorten(text.trim_end(), style.max_observation_chars)
            ))
        }
        EventBody::AgentError(e) => Some(paint(
            style,
            "31",
            &format!("[agent error] {}: {}", e.tool_name, e.error),
        )),
        EventBody::UserReject(r) => Some(paint(
            style,
            "31",
            &format!("[rejected] {}: {}", r.tool_name, r.rejection_reason),
        )),
        EventBody::ConversationError(e) => Some(paint(
            style,
            "1;31",
            &format!("[error] {}: {}", e.code, e.detail),
        )),
        EventBody::StateUpdate(u) if u.key == "execution_status" => Some(paint(
            style,
            "2",
            &format!("[status] {}", u.value.as_str().unwrap_or_default()),
        )),
        EventBody::StateUpdate(u) if u.key == "stats" => {
            let cost: f64 = u
                .value
                .get("usage_to_metrics")
                .and_then(Value::as_object)
                .map(|m| {
                    m.values()
                        .filter_map(|v| v.get("accumulated_cost").and_then(Value::as_f64))
                        .sum()
                })
                .unwrap_or(0.0);
            let tokens: u64 = u
                .value
                .get("usage_to_metrics")
                .and_then(Value::as_object)
                .map(|m| {
                    m.values()
                        .filter_map(|v| v.get("accumulated_token_usage"))
                        .map(|t| {
                            t.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0)
                                + t.get("completion_tokens")
                                    .and_then(Value::as_u64)
                                    .unwrap_or(0)
                        })
                        .sum()
                })
                .unwrap_or(0);
            Some(paint(
                style,
                "2",
                &format!("[cost] ${cost:.4} total, {tokens} tokens"),
            ))
        }
        EventBody::Pause => Some(paint(style, "33", "[paused]")),
        EventBody::Interrupt => Some(paint(style, "33", "[interrupted]")),
        EventBody::Condensation(c) => Some(paint(
            style,
            "2",
            &format!(
                "[condensed] {} events summarised",
                c.forgotten_event_ids.len()
            ),
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openhands_wire::event::ConversationErrorEvent;

    #[test]
    fn renders_errors_and_hides_deltas() {
        let e = Event::new(EventBody::ConversationError(ConversationErrorEvent {
            code: "X".into(),
            detail: "boom".into(),
            classification: None,
        }));
        assert_eq!(
            render_event(&e, &Style::default()).unwrap(),
            "[error] X: boom"
        );
        let d = Event::new(EventBody::StreamingDelta(Default::default()));
        assert!(render_event(&d, &Style::default()).is_none());
        assert_eq!(shorten("abcdef", 3), "abc… [3 more characters]");
    }
}
