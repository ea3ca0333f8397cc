//! Taking over the terminal for the session and giving it back: raw mode,
//! the alternate screen, bracketed paste, and keyboard enhancement (so that
//! Shift+Enter is told apart from Enter where the terminal supports it;
//! elsewhere Alt+Enter and Ctrl-J add a line). The terminal is restored on
//! drop and on panic.

use crossterm::event::{
    DisableBracketedPaste, EnableBracketedPaste, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use std::io::Stdout;
use std::sync::Once;

/// The session's terminal.
pub type Term = Terminal<CrosstermBackend<Stdout>>;

/// Restores the terminal when dropped.
#[derive(Debug)]
pub struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

/// Puts the terminal back as it was (safe to call more than once).
pub fn restore() {
    let mut out = std::io::stdout();
    let _ = execute!(
        out,
        PopKeyboardEnhancementFlags,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = disable_raw_mode();
}

fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}

/// Takes over the terminal.
pub fn enter() -> std::io::Result<(Term, Guard)> {
    install_panic_hook();
    enable_raw_mode()?;
    let guard = Guard;
    let mut out = std::io::stdout();
    execute!(out, EnterAlternateScreen, EnableBracketedPaste)?;
    // Terminals without the keyboard protocol ignore this sequence.
    let _ = execute!(
        out,
        PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
    );
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    redraw_all(&mut terminal)?;
    Ok((terminal, guard))
}

/// Clears the screen so that the next draw paints every cell (without
/// asking the terminal for its cursor position, which `Terminal::clear` does).
pub fn redraw_all(terminal: &mut Term) -> std::io::Result<()> {
    let size = terminal.size()?;
    terminal.resize(ratatui::layout::Rect::new(0, 0, size.width, size.height))
}
