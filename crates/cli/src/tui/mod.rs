//! The interactive session (`openhands` with no subcommand on a terminal):
//! a full-screen view of the conversation as it happens, a prompt, and a
//! status line. See `app` for what keys do and `render` for the screen.

mod app;
mod editor;
mod history;
mod render;
mod slash;
mod terminal;
mod transcript;
mod wrap;

use crate::error::usage;
use crate::options::AgentArgs;
use crate::session::Session;
use crate::settings::Settings;
use crate::store::Start;
use app::{App, AppEvent};
use futures::StreamExt;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use tokio::sync::mpsc;

/// What the interactive session starts with.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Folder the agent works in (new conversations).
    pub workspace: PathBuf,
    /// Where conversations are stored.
    pub root: PathBuf,
    /// Agent options.
    pub agent: AgentArgs,
    /// Which conversation to open.
    pub start: Start,
    /// A task sent as soon as the session is up (`-t`, `-f`, `openhands "TASK"`).
    pub seed: Option<String>,
}

/// Runs the interactive session until the user leaves.
pub async fn interactive(args: Launch) -> anyhow::Result<ExitCode> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(usage(
            "the interactive session needs a terminal; in scripts use `openhands --headless -t \
             \"TASK\"` or `openhands run \"TASK\"` (see `openhands --help`)",
        ));
    }
    let workspace = std::fs::canonicalize(&args.workspace).map_err(|_| {
        usage(format!(
            "workspace folder {} does not exist",
            args.workspace.display()
        ))
    })?;
    let settings = Settings::load(&crate::paths::settings_file())?;
    let config = crate::options::resolve(&args.agent, &settings, &workspace, true)?;
    let session = Session {
        config,
        workspace,
        root: args.root,
    };
    crate::mcp_auth::ensure_authorized(
        &session.config.spec.mcp_config,
        session.config.mcp_oauth_states.as_ref(),
    )
    .await?;
    let (mut term, guard) = terminal::enter()?;
    let (tx, rx) = mpsc::unbounded_channel();
    let history = history::History::load(Some(crate::paths::history_file()));
    let mut app = App::new(session, tx, history);
    app.welcome();
    match args.start {
        Start::New => {}
        Start::Open(id) => app.open(id),
        Start::Pick => app.open_picker(),
    }
    if let Some(task) = args.seed {
        app.send_task(task);
    }
    let result = event_loop(&mut term, &mut app, rx).await;
    let saved = app.shutdown().await;
    drop(term);
    drop(guard);
    result?;
    if let Some(id) = saved {
        println!(
            "Conversation {} is saved. Continue it with: openhands --resume {}",
            id,
            &id.simple().to_string()[..8]
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn event_loop(
    term: &mut terminal::Term,
    app: &mut App,
    mut rx: mpsc::UnboundedReceiver<AppEvent>,
) -> anyhow::Result<()> {
    use crossterm::event::Event as Input;
    use tokio::signal::unix::{SignalKind, signal};
    let mut input = crossterm::event::EventStream::new();
    let mut tick = tokio::time::interval(Duration::from_millis(120));
    let mut terminate = signal(SignalKind::terminate())?;
    let mut hangup = signal(SignalKind::hangup())?;
    let no_color = crate::output::no_color();
    loop {
        if app.clear_requested {
            app.clear_requested = false;
            terminal::redraw_all(term)?;
        }
        term.draw(|f| {
            render::draw(f, app);
            if no_color {
                render::strip_colors(f.buffer_mut());
            }
        })?;
        if app.quit {
            return Ok(());
        }
        tokio::select! {
            ev = input.next() => match ev {
                Some(Ok(Input::Key(k))) => app.on_key(k),
                Some(Ok(Input::Paste(text))) => app.on_paste(&text),
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e.into()),
                None => app.quit = true,
            },
            Some(ev) = rx.recv() => {
                app.on_event(ev);
                while let Ok(ev) = rx.try_recv() {
                    app.on_event(ev);
                }
            }
            _ = tick.tick(), if app.animating() => app.spinner = app.spinner.wrapping_add(1),
            _ = terminate.recv() => app.quit = true,
            _ = hangup.recv() => app.quit = true,
        }
    }
}
