//! The conversation as the session shows it: user and agent messages,
//! thinking, actions with their commands and diffs, observations (folded
//! when long), errors and rejections, plus the text being streamed.

use crate::describe::{DetailLine, LineKind, action_details, risk_label};
use openhands_wire::content::Content;
use openhands_wire::event::{Event, EventBody, SecurityRisk, SourceType};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use serde_json::Value;

/// Lines of an observation shown while folded.
const FOLDED_OUTPUT_LINES: usize = 8;
/// Detail lines of an action shown while folded.
const FOLDED_DETAIL_LINES: usize = 12;
/// Lines of thinking shown while folded.
const FOLDED_THINKING_LINES: usize = 4;

/// One block of the transcript.
#[derive(Debug, Clone)]
pub enum Entry {
    /// A message the user sent.
    User(String),
    /// The agent's words (a message or its `finish` text).
    Agent(String),
    /// The model's reasoning.
    Thinking(String),
    /// A tool call.
    Action {
        /// Tool name.
        tool: String,
        /// The model's summary.
        summary: Option<String>,
        /// What it runs or changes.
        details: Vec<DetailLine>,
        /// The model's risk label.
        risk: SecurityRisk,
    },
    /// What a tool reported.
    Output {
        /// The text.
        text: String,
        /// Exit code of a command.
        exit_code: Option<i64>,
        /// Whether the tool reported an error.
        is_error: bool,
        /// A diff of a file edit.
        diff: Vec<DetailLine>,
    },
    /// An error.
    Error(String),
    /// A rejected action.
    Rejected {
        /// Tool name.
        tool: String,
        /// The reason the agent was given.
        reason: String,
    },
    /// Pause, interrupt, condensation.
    Marker(String),
    /// A note of the session itself (help, costs, hints).
    Info(String),
}

/// The transcript and the text being streamed.
#[derive(Debug, Default)]
pub struct Transcript {
    entries: Vec<Entry>,
    live_text: String,
    live_reasoning: String,
    version: u64,
}

/// Text made safe to draw: terminal escape sequences and control
/// characters removed (they would move the cursor or change colours of the
/// session's own screen), tabs expanded, carriage returns dropped.
pub fn clean_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                // CSI: parameters, then one final byte in @..~
                Some('[') => {
                    for n in chars.by_ref() {
                        if ('@'..='~').contains(&n) {
                            break;
                        }
                    }
                }
                // OSC: up to BEL or ESC \
                Some(']') => {
                    while let Some(n) = chars.next() {
                        if n == '\x07' {
                            break;
                        }
                        if n == '\x1b' {
                            chars.next();
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\n' => out.push('\n'),
            '\t' => out.push_str("    "),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

fn content_text(observation: &Value) -> String {
    observation
        .get("content")
        .and_then(|c| serde_json::from_value::<Vec<Content>>(c.clone()).ok())
        .map(|c| Content::join_text(&c))
        .unwrap_or_default()
}

/// A compact unified diff (one line of context) of a file edit.
fn edit_diff(observation: &Value) -> Vec<DetailLine> {
    let (Some(old), Some(new)) = (
        observation.get("old_content").and_then(Value::as_str),
        observation.get("new_content").and_then(Value::as_str),
    ) else {
        return Vec::new();
    };
    let diff = similar::TextDiff::from_lines(old, new);
    let mut out = Vec::new();
    for group in diff.grouped_ops(1) {
        if !out.is_empty() {
            out.push(DetailLine {
                kind: LineKind::Dim,
                text: "…".into(),
            });
        }
        for op in group {
            for change in diff.iter_changes(&op) {
                let (kind, sign) = match change.tag() {
                    similar::ChangeTag::Delete => (LineKind::Removed, "- "),
                    similar::ChangeTag::Insert => (LineKind::Added, "+ "),
                    similar::ChangeTag::Equal => (LineKind::Dim, "  "),
                };
                let line_no = change
                    .new_index()
                    .or(change.old_index())
                    .map(|i| i + 1)
                    .unwrap_or(0);
                out.push(DetailLine {
                    kind,
                    text: format!(
                        "{line_no:>4} {sign}{}",
                        change.value().trim_end_matches('\n')
                    ),
                });
            }
        }
    }
    out
}

impl Transcript {
    /// Changes whenever the entries do (not the streamed text), for
    /// render caching.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The entries.
    #[cfg(test)]
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.live_text.clear();
        self.live_reasoning.clear();
        self.version += 1;
    }

    /// Adds an entry.
    pub fn push(&mut self, entry: Entry) {
        self.entries.push(entry);
        self.version += 1;
    }

    /// Adds a note of the session.
    pub fn info(&mut self, text: impl Into<String>) {
        self.push(Entry::Info(text.into()));
    }

    /// Adds what `event` shows, if anything.
    pub fn push_event(&mut self, event: &Event) {
        match &event.body {
            EventBody::StreamingDelta(d) => {
                if let Some(c) = &d.content {
                    self.live_text.push_str(c);
                }
                if let Some(r) = &d.reasoning_content {
                    self.live_reasoning.push_str(r);
                }
            }
            EventBody::Message(m) => {
                let text = m.llm_message.text();
                if event.source == SourceType::Agent {
                    self.end_stream();
                    if let Some(r) = m.llm_message.reasoning_content.as_deref()
                        && !r.trim().is_empty()
                    {
                        self.push(Entry::Thinking(r.trim().to_string()));
                    }
                    self.push(Entry::Agent(text));
                } else if event.source == SourceType::User {
                    self.push(Entry::User(text));
                }
            }
            EventBody::Action(a) => {
                self.end_stream();
                let reasoning = a.reasoning_content.as_deref().unwrap_or("").trim();
                if !reasoning.is_empty() {
                    self.push(Entry::Thinking(reasoning.to_string()));
                }
                let thought: String = a.thought.iter().map(|t| t.text.as_str()).collect();
                if !thought.trim().is_empty() {
                    self.push(Entry::Agent(thought.trim().to_string()));
                }
                let action = a.action.clone().unwrap_or(Value::Null);
                if a.tool_name == "finish" {
                    if let Some(m) = action.get("message").and_then(Value::as_str) {
                        self.push(Entry::Agent(m.to_string()));
                    }
                    return;
                }
                self.push(Entry::Action {
                    tool: a.tool_name.clone(),
                    summary: a.summary.clone(),
                    details: action_details(&a.tool_name, &action),
                    risk: a.security_risk,
                });
            }
            EventBody::Observation(o) => {
                if matches!(o.tool_name.as_str(), "finish" | "think") {
                    return;
                }
                let diff = edit_diff(&o.observation);
                if !diff.is_empty()
                    && let Some(Entry::Action { tool, details, .. }) = self.entries.last_mut()
                    && tool == "file_editor"
                {
                    // The diff of what happened replaces the preview of the request.
                    details.truncate(1);
                }
                let text = if diff.is_empty() {
                    content_text(&o.observation)
                } else {
                    String::new()
                };
                self.push(Entry::Output {
                    text,
                    exit_code: o.observation.get("exit_code").and_then(Value::as_i64),
                    is_error: o.observation.get("is_error") == Some(&Value::Bool(true)),
                    diff,
                });
            }
            EventBody::AgentError(e) => {
                self.push(Entry::Error(format!("{}: {}", e.tool_name, e.error)));
            }
            EventBody::UserReject(r) => self.push(Entry::Rejected {
                tool: r.tool_name.clone(),
                reason: r.rejection_reason.clone(),
            }),
            EventBody::ConversationError(e) => {
                self.end_stream();
                self.push(Entry::Error(format!("{}: {}", e.code, e.detail)));
            }
            EventBody::ServerError(_) => self.push(Entry::Error("server error".into())),
            EventBody::Pause => self.push(Entry::Marker("⏸ paused".into())),
            EventBody::Interrupt => {
                self.end_stream();
                self.push(Entry::Marker("⏹ interrupted".into()));
            }
            EventBody::Condensation(c) => self.push(Entry::Marker(format!(
                "≡ history condensed: {} events summarized",
                c.forgotten_event_ids.len()
            ))),
            _ => {}
        }
    }

    fn end_stream(&mut self) {
        if !self.live_text.is_empty() || !self.live_reasoning.is_empty() {
            self.live_text.clear();
            self.live_reasoning.clear();
            self.version += 1;
        }
    }

    /// The transcript as lines (before wrapping), the streamed text
    /// included; `expanded` unfolds long outputs, details and thinking.
    #[cfg(test)]
    pub fn lines(&self, expanded: bool) -> Vec<Line<'static>> {
        let mut out = self.entry_lines(expanded);
        out.extend(self.live_lines(expanded));
        out
    }

    /// The entries as lines (before wrapping).
    pub fn entry_lines(&self, expanded: bool) -> Vec<Line<'static>> {
        let mut out: Vec<Line<'static>> = Vec::new();
        for entry in &self.entries {
            if !out.is_empty() && !matches!(entry, Entry::Output { .. }) {
                out.push(Line::default());
            }
            render_entry(entry, expanded, &mut out);
        }
        out
    }

    /// The text being streamed as lines (before wrapping).
    pub fn live_lines(&self, expanded: bool) -> Vec<Line<'static>> {
        let mut out: Vec<Line<'static>> = Vec::new();
        if !self.live_reasoning.is_empty() {
            out.push(Line::default());
            render_entry(
                &Entry::Thinking(self.live_reasoning.clone()),
                expanded,
                &mut out,
            );
        }
        if !self.live_text.is_empty() {
            out.push(Line::default());
            let mut text = self.live_text.clone();
            text.push('▍');
            render_entry(&Entry::Agent(text), true, &mut out);
        }
        out
    }
}

fn detail_style(kind: LineKind) -> Style {
    match kind {
        LineKind::Plain => Style::default(),
        LineKind::Command => Style::default().add_modifier(Modifier::BOLD),
        LineKind::Added => Style::default().fg(Color::Green),
        LineKind::Removed => Style::default().fg(Color::Red),
        LineKind::Dim => Style::default().fg(Color::DarkGray),
    }
}

fn fold_hint(hidden: usize) -> Line<'static> {
    Line::from(
        format!("    … +{hidden} lines (ctrl+o to expand)")
            .fg(Color::DarkGray)
            .italic(),
    )
}

fn prefixed(
    first: Span<'static>,
    rest_indent: &str,
    text: &str,
    style: Style,
) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let head = if i == 0 {
            first.clone()
        } else {
            Span::raw(rest_indent.to_string())
        };
        out.push(Line::from(vec![
            head,
            Span::styled(line.to_string(), style),
        ]));
    }
    if out.is_empty() {
        out.push(Line::from(vec![first]));
    }
    out
}

fn render_entry(entry: &Entry, expanded: bool, out: &mut Vec<Line<'static>>) {
    match entry {
        Entry::User(text) => out.extend(prefixed(
            "› ".cyan().bold(),
            "  ",
            text,
            Style::default().add_modifier(Modifier::BOLD),
        )),
        Entry::Agent(text) => out.extend(prefixed("● ".green(), "  ", text, Style::default())),
        Entry::Thinking(text) => {
            let style = Style::default()
                .fg(Color::Magenta)
                .add_modifier(Modifier::ITALIC | Modifier::DIM);
            let lines = prefixed("✻ ".magenta(), "  ", text, style);
            let total = lines.len();
            if expanded || total <= FOLDED_THINKING_LINES {
                out.extend(lines);
            } else {
                out.extend(lines.into_iter().take(FOLDED_THINKING_LINES));
                out.push(fold_hint(total - FOLDED_THINKING_LINES));
            }
        }
        Entry::Action {
            tool,
            summary,
            details,
            risk,
        } => {
            let mut head = vec!["⏺ ".yellow(), clean_text(tool).yellow().bold()];
            if let Some(s) = summary.as_deref().filter(|s| !s.trim().is_empty()) {
                head.push(Span::raw("  "));
                head.push(clean_text(s).replace('\n', " ").fg(Color::Gray));
            }
            if matches!(risk, SecurityRisk::High | SecurityRisk::Medium) {
                head.push(format!("  [risk {}]", risk_label(*risk)).red());
            }
            out.push(Line::from(head));
            let limit = if expanded {
                usize::MAX
            } else {
                FOLDED_DETAIL_LINES
            };
            for d in details.iter().take(limit) {
                out.push(Line::from(vec![
                    Span::raw("  "),
                    Span::styled(clean_text(&d.text), detail_style(d.kind)),
                ]));
            }
            if details.len() > limit {
                out.push(fold_hint(details.len() - limit));
            }
        }
        Entry::Output {
            text,
            exit_code,
            is_error,
            diff,
        } => {
            let mut lines: Vec<Line<'static>> = if diff.is_empty() {
                let style = if *is_error {
                    Style::default().fg(Color::Red)
                } else {
                    Style::default().fg(Color::Gray)
                };
                clean_text(text)
                    .trim_end()
                    .lines()
                    .map(|l| Line::from(Span::styled(l.to_string(), style)))
                    .collect()
            } else {
                diff.iter()
                    .map(|d| Line::from(Span::styled(clean_text(&d.text), detail_style(d.kind))))
                    .collect()
            };
            if let Some(code) = exit_code.filter(|c| *c != 0) {
                lines.push(Line::from(format!("exit code {code}").red()));
            }
            if lines.is_empty() {
                lines.push(Line::from("(no output)".fg(Color::DarkGray)));
            }
            let total = lines.len();
            let keep = if expanded || total <= FOLDED_OUTPUT_LINES {
                total
            } else {
                FOLDED_OUTPUT_LINES - 2
            };
            for (i, mut line) in lines.into_iter().take(keep).enumerate() {
                let head = if i == 0 { "  ⎿ " } else { "    " };
                line.spans.insert(0, head.fg(Color::DarkGray));
                out.push(line);
            }
            if keep < total {
                out.push(fold_hint(total - keep));
            }
        }
        Entry::Error(text) => out.extend(prefixed(
            "✗ ".red().bold(),
            "  ",
            text,
            Style::default().fg(Color::Red),
        )),
        Entry::Rejected { tool, reason } => out.push(Line::from(vec![
            "✗ ".red().bold(),
            format!("rejected {}", clean_text(tool)).red(),
            format!(" — {}", clean_text(reason).replace('\n', " ")).fg(Color::Gray),
        ])),
        Entry::Marker(text) => out.push(Line::from(text.clone().yellow())),
        Entry::Info(text) => out.extend(prefixed(
            "· ".fg(Color::DarkGray),
            "  ",
            text,
            Style::default().fg(Color::Gray),
        )),
    }
}

#[cfg(test)]
#[path = "transcript_tests.rs"]
mod tests;
