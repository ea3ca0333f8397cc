//! Drawing the session: the transcript (or the conversation picker), the
//! confirmation panel or command hints, the prompt and the status line.

use super::app::{App, Overlay, Picker};
use super::slash;
use super::transcript::clean_text;
use super::wrap::wrap_lines;
use crate::describe::{LineKind, PendingAction, risk_label};
use openhands_wire::event::SecurityRisk;
use openhands_wire::state::ExecutionStatus;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, List, ListItem, ListState, Paragraph};

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// Most rows the prompt grows to.
const MAX_INPUT_ROWS: usize = 10;

/// Takes every colour out of a drawn frame (for `NO_COLOR`); bold,
/// reversed and the other attributes stay, so selections and the cursor
/// remain visible.
pub fn strip_colors(buffer: &mut ratatui::buffer::Buffer) {
    for cell in buffer.content.iter_mut() {
        cell.fg = Color::Reset;
        cell.bg = Color::Reset;
    }
}

/// Draws the whole screen.
pub fn draw(f: &mut Frame, app: &mut App) {
    let area = f.area();
    let inner_width = area.width.saturating_sub(4).max(4) as usize;
    let (rows, cursor) = app.editor.layout(inner_width);
    let input_rows = rows.len().clamp(1, MAX_INPUT_ROWS);
    let panel = panel_lines(app, area.width.saturating_sub(2) as usize);
    let panel_height = if panel.is_empty() {
        0
    } else {
        (panel.len() as u16 + 2).min(area.height / 2)
    };
    let [main, panel_area, input_area, status_area] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(panel_height),
        Constraint::Length(input_rows as u16 + 2),
        Constraint::Length(1),
    ])
    .areas(area);
    match &app.overlay {
        Overlay::Picker(p) => draw_picker(f, p, main),
        _ => draw_transcript(f, app, main),
    }
    if panel_height > 0 {
        let (title, color) = match app.overlay {
            Overlay::Confirm(_) => (" confirm ", Color::Yellow),
            _ => (" commands ", Color::DarkGray),
        };
        let mut block = Block::bordered()
            .border_type(BorderType::Rounded)
            .border_style(Style::default().fg(color))
            .title(title);
        if matches!(app.overlay, Overlay::Confirm(_)) {
            block = block.title_bottom(confirm_keys());
        }
        f.render_widget(Paragraph::new(panel).block(block), panel_area);
    }
    draw_input(f, app, input_area, &rows, cursor, input_rows);
    draw_status(f, app, status_area);
}

fn draw_transcript(f: &mut Frame, app: &mut App, area: Rect) {
    let width = area.width.max(1) as usize;
    let key = (app.transcript.version(), area.width, app.expanded);
    if app.view.key != key {
        let lines = app.transcript.entry_lines(app.expanded);
        app.view.lines = wrap_lines(&lines, width);
        app.view.key = key;
    }
    // The streamed text changes with every token: only it is wrapped anew.
    let live = wrap_lines(&app.transcript.live_lines(app.expanded), width);
    let height = area.height as usize;
    app.page = height;
    let total = app.view.lines.len() + live.len();
    let max_scroll = total.saturating_sub(height);
    app.scroll = app.scroll.min(max_scroll);
    let end = total - app.scroll;
    let start = end.saturating_sub(height);
    let visible: Vec<Line<'static>> = app
        .view
        .lines
        .iter()
        .chain(live.iter())
        .skip(start)
        .take(end - start)
        .cloned()
        .collect();
    f.render_widget(Paragraph::new(visible), area);
    if app.scroll > 0 {
        let hint = format!(" ↓ {} more lines (PageDown, Esc) ", app.scroll);
        let w = (hint.chars().count() as u16).min(area.width);
        let r = Rect::new(area.x + area.width - w, area.y + area.height - 1, w, 1);
        f.render_widget(Paragraph::new(hint.black().on_yellow()), r);
    }
}

fn draw_picker(f: &mut Frame, p: &Picker, area: Rect) {
    f.render_widget(Clear, area);
    let items: Vec<ListItem> = p
        .items
        .iter()
        .map(|c| {
            let id = c.id.simple().to_string();
            ListItem::new(vec![
                Line::from(vec![
                    id[..8].to_string().cyan(),
                    Span::raw("  "),
                    clean_text(&c.title).bold(),
                ]),
                Line::from(
                    format!(
                        "          {} · {} · {} events · {}",
                        crate::store::age(c.updated),
                        c.status,
                        c.events,
                        c.workspace
                    )
                    .fg(Color::DarkGray),
                ),
            ])
        })
        .collect();
    let list = List::new(items)
        .block(
            Block::bordered()
                .border_type(BorderType::Rounded)
                .title(" Resume a conversation — ↑/↓ choose · Enter open · Esc cancel "),
        )
        .highlight_style(Style::default().add_modifier(Modifier::REVERSED))
        .highlight_symbol("› ");
    let mut state = ListState::default().with_selected(Some(p.selected));
    f.render_stateful_widget(list, area, &mut state);
}

fn confirm_lines(pending: &[PendingAction], width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    out.push(Line::from(
        format!(
            "The agent wants to run {}:",
            if pending.len() == 1 {
                "this action".to_string()
            } else {
                format!("{} actions", pending.len())
            }
        )
        .bold(),
    ));
    for p in pending {
        let risk_style = match p.risk {
            SecurityRisk::High => Style::default().fg(Color::Red).bold(),
            SecurityRisk::Medium => Style::default().fg(Color::Yellow),
            _ => Style::default().fg(Color::Gray),
        };
        let mut head = vec!["⏺ ".yellow(), clean_text(&p.tool).yellow().bold()];
        if let Some(s) = &p.summary {
            head.push(Span::raw(format!("  {}", clean_text(s).replace('\n', " "))));
        }
        head.push(Span::styled(
            format!("  risk: {}", risk_label(p.risk)),
            risk_style,
        ));
        out.push(Line::from(head));
        for d in p.details.iter().take(8) {
            let style = match d.kind {
                LineKind::Command => Style::default().bold(),
                LineKind::Added => Style::default().fg(Color::Green),
                LineKind::Removed => Style::default().fg(Color::Red),
                LineKind::Dim => Style::default().fg(Color::DarkGray),
                LineKind::Plain => Style::default(),
            };
            out.push(Line::from(vec![
                Span::raw("    "),
                Span::styled(clean_text(&d.text), style),
            ]));
        }
        if p.details.len() > 8 {
            out.push(Line::from(
                format!("    … +{} lines", p.details.len() - 8).fg(Color::DarkGray),
            ));
        }
    }
    wrap_lines(&out, width.max(10))
}

/// The keys of a confirmation (the panel's bottom line, always visible).
fn confirm_keys() -> Line<'static> {
    Line::from(vec![
        " Run it? ".bold(),
        "y".green().bold(),
        " yes · ".into(),
        "n".red().bold(),
        " no (the agent is told) · ".into(),
        "a".cyan().bold(),
        " always (stop asking) · ".into(),
        "Esc".bold(),
        " reject and stop ".into(),
    ])
}

fn panel_lines(app: &App, width: usize) -> Vec<Line<'static>> {
    match &app.overlay {
        Overlay::Confirm(pending) => confirm_lines(pending, width),
        Overlay::Picker(_) => Vec::new(),
        Overlay::None => {
            let text = app.editor.text();
            if !text.starts_with('/') || text.contains(char::is_whitespace) {
                return Vec::new();
            }
            slash::completions(&text)
                .into_iter()
                .map(|(c, h)| Line::from(vec![format!("{c:<11}").cyan(), h.fg(Color::Gray)]))
                .collect()
        }
    }
}

fn draw_input(
    f: &mut Frame,
    app: &App,
    area: Rect,
    rows: &[String],
    cursor: (usize, usize),
    visible: usize,
) {
    let active = matches!(app.overlay, Overlay::None);
    let border = if !active {
        Color::DarkGray
    } else if app.running {
        Color::Gray
    } else {
        Color::Cyan
    };
    let hint = if app.running {
        " Enter queues a message · Ctrl-C pause · Esc interrupt "
    } else {
        " Enter send · Shift+Enter new line · / commands "
    };
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(Style::default().fg(border))
        .title_bottom(Line::from(hint.fg(Color::DarkGray)).right_aligned());
    let first = cursor.0.saturating_sub(visible.saturating_sub(1));
    let lines: Vec<Line> = if app.editor.is_empty() {
        let placeholder = if app.running {
            "the agent is working — type to add a message"
        } else if app.conv.is_none() {
            "Describe a task for the agent"
        } else {
            "Type a message"
        };
        vec![Line::from(vec![
            "› ".cyan().bold(),
            placeholder.fg(Color::DarkGray),
        ])]
    } else {
        rows.iter()
            .enumerate()
            .skip(first)
            .take(visible)
            .map(|(i, r)| {
                let head = if i == 0 {
                    "› ".cyan().bold()
                } else {
                    "  ".into()
                };
                Line::from(vec![head, Span::raw(r.clone())])
            })
            .collect()
    };
    f.render_widget(Paragraph::new(lines).block(block), area);
    if active {
        let x = area.x + 1 + 2 + cursor.1 as u16;
        let y = area.y + 1 + (cursor.0 - first) as u16;
        f.set_cursor_position(Position::new(
            x.min(area.right().saturating_sub(2)),
            y.min(area.bottom().saturating_sub(2)),
        ));
    }
}

fn short_number(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1_000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

fn draw_status(f: &mut Frame, app: &App, area: Rect) {
    let spin = SPINNER[app.spinner % SPINNER.len()];
    let (state, color) = if let Some(b) = &app.busy {
        (format!("{spin} {b}"), Color::Cyan)
    } else if app.pausing {
        (format!("{spin} pausing after this step"), Color::Yellow)
    } else if app.running {
        (format!("{spin} working"), Color::Cyan)
    } else {
        match app.status {
            ExecutionStatus::WaitingForConfirmation => {
                ("waiting for confirmation".into(), Color::Yellow)
            }
            ExecutionStatus::Paused => ("paused".into(), Color::Yellow),
            ExecutionStatus::Finished => ("finished".into(), Color::Green),
            ExecutionStatus::Error => ("error".into(), Color::Red),
            ExecutionStatus::Stuck => ("stuck".into(), Color::Red),
            _ => ("ready".into(), Color::Green),
        }
    };
    let mut spans = vec![
        Span::styled(format!(" {state} "), Style::default().fg(color).bold()),
        Span::raw("· "),
        app.model().to_string().fg(Color::White),
        format!(
            " · {} tokens · ${:.4} · confirm {}",
            short_number(app.usage.0),
            app.usage.1,
            app.confirm.as_str()
        )
        .fg(Color::Gray),
    ];
    if let Some(c) = &app.conv {
        spans.push(format!(" · {}", &c.id().simple().to_string()[..8]).fg(Color::DarkGray));
    }
    if app.exit_armed {
        spans.push(Span::raw("  "));
        spans.push(" press Ctrl-C again to exit ".black().on_yellow());
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}
