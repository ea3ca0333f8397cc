//! How `run`/`resume` print events: a readable live view, or JSON lines.

use openhands_sdk::visualizer::{Style, render_event};
use openhands_wire::event::Event;
use std::io::{IsTerminal, Write};

/// Whether `NO_COLOR` asks for output without colours (set and not empty,
/// as no-color.org defines it); the plain output and the interactive
/// session both honour it.
pub fn no_color() -> bool {
    openhands_workspace::exec::env::host_var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// Output mode.
#[derive(Debug, Clone, Copy)]
pub enum Mode {
    /// Human-readable view.
    Pretty {
        /// ANSI colours.
        color: bool,
    },
    /// One JSON event per line (streaming deltas excluded).
    Json,
}

impl Mode {
    /// Picks the mode from the `--json` flag and whether stdout is a terminal.
    pub fn from_flags(json: bool) -> Self {
        if json {
            Mode::Json
        } else {
            Mode::Pretty {
                color: std::io::stdout().is_terminal() && !no_color(),
            }
        }
    }

    /// Prints one event.
    pub fn print(self, event: &Event, stream_tokens: bool) {
        let mut out = std::io::stdout().lock();
        match self {
            Mode::Json => {
                if event.is_transient() {
                    return;
                }
                if let Ok(line) = serde_json::to_string(event) {
                    let _ = writeln!(out, "{line}");
                }
            }
            Mode::Pretty { color } => {
                if let openhands_wire::event::EventBody::StreamingDelta(d) = &event.body {
                    if stream_tokens && let Some(c) = &d.content {
                        let _ = write!(out, "{c}");
                        let _ = out.flush();
                    }
                    return;
                }
                let style = Style {
                    color,
                    ..Style::default()
                };
                if let Some(text) = render_event(event, &style) {
                    let _ = writeln!(out, "{text}");
                }
            }
        }
    }
}
