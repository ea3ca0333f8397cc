//! The interactive session's state and what keys, pastes and conversation
//! events do to it. Drawing is in `render`; the loop that feeds it is in
//! the module root.

use super::editor::Editor;
use super::history::History;
use super::slash::{self, Slash};
use super::transcript::{Entry, Transcript};
use crate::describe::{PendingAction, pending_actions};
use crate::policy::ConfirmMode;
use crate::session::Session;
use crate::store::StoredConversation;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use openhands_sdk::LocalConversation;
use openhands_sdk::conversation::ConversationError;
use openhands_sdk::conversation::EventCallback;
use openhands_wire::event::{Event, EventBody};
use openhands_wire::state::ExecutionStatus;
use ratatui::text::Line;
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;
use uuid::Uuid;

/// What reaches the session from the conversation and background tasks.
#[derive(Debug)]
pub enum AppEvent {
    /// An event of a conversation.
    Conversation(Uuid, Box<Event>),
    /// A run ended.
    RunEnded(Uuid, Result<ExecutionStatus, ConversationError>),
    /// `/condense` finished: whether anything was condensed.
    Condensed(Uuid, Result<bool, ConversationError>),
}

/// The conversation picker of `--resume` and `/resume`.
#[derive(Debug)]
pub struct Picker {
    /// Saved conversations, newest first.
    pub items: Vec<StoredConversation>,
    /// Highlighted row.
    pub selected: usize,
}

/// What covers the prompt.
#[derive(Debug)]
pub enum Overlay {
    /// Nothing: the prompt has the keys.
    None,
    /// Actions wait for y/n/always.
    Confirm(Vec<PendingAction>),
    /// Choosing a conversation to reopen.
    Picker(Picker),
}

/// How the user answered a confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// Run the actions.
    Yes,
    /// Reject them; the agent hears why and goes on.
    No,
    /// Run them and stop asking.
    Always,
    /// Reject them and stop the run (the agent waits for a message).
    Stop,
}

/// The wrapped transcript entries of the last draw.
#[derive(Debug)]
pub struct ViewCache {
    /// Transcript version, width and fold state the lines belong to.
    pub key: (u64, u16, bool),
    /// Wrapped lines.
    pub lines: Vec<Line<'static>>,
}

impl Default for ViewCache {
    fn default() -> Self {
        Self {
            // No transcript has this version, so the first draw fills the cache.
            key: (u64::MAX, 0, false),
            lines: Vec::new(),
        }
    }
}

/// The interactive session.
pub struct App {
    /// How conversations are made.
    pub session: Session,
    /// The open conversation (none until the first message).
    pub conv: Option<LocalConversation>,
    tx: UnboundedSender<AppEvent>,
    /// What is shown.
    pub transcript: Transcript,
    /// The prompt.
    pub editor: Editor,
    history: History,
    /// What covers the prompt.
    pub overlay: Overlay,
    /// The conversation's execution status.
    pub status: ExecutionStatus,
    /// Whether a run is in progress.
    pub running: bool,
    /// Whether a pause was asked for and the run has not stopped yet.
    pub pausing: bool,
    /// Whether the next Ctrl-C exits.
    pub exit_armed: bool,
    /// Whether long outputs are unfolded.
    pub expanded: bool,
    /// Rows scrolled up from the bottom of the transcript.
    pub scroll: usize,
    /// Rows of the transcript view at the last draw (page size).
    pub page: usize,
    /// Current confirmation mode.
    pub confirm: ConfirmMode,
    /// Whether the session should end.
    pub quit: bool,
    /// Whether the screen should be cleared and redrawn.
    pub clear_requested: bool,
    /// Animation frame of the spinner.
    pub spinner: usize,
    /// A background task in progress (e.g. condensing).
    pub busy: Option<String>,
    /// Wrapped transcript of the last draw.
    pub view: ViewCache,
    /// Tokens (prompt + completion) and cost so far, refreshed when the
    /// conversation reports new statistics.
    pub usage: (u64, f64),
}

impl App {
    /// A session with no conversation open yet.
    pub fn new(session: Session, tx: UnboundedSender<AppEvent>, history: History) -> Self {
        let confirm = session.config.confirm;
        Self {
            session,
            conv: None,
            tx,
            transcript: Transcript::default(),
            editor: Editor::default(),
            history,
            overlay: Overlay::None,
            status: ExecutionStatus::Idle,
            running: false,
            pausing: false,
            exit_armed: false,
            expanded: false,
            scroll: 0,
            page: 10,
            confirm,
            quit: false,
            clear_requested: false,
            spinner: 0,
            busy: None,
            view: ViewCache::default(),
            usage: (0, 0.0),
        }
    }

    /// The model in use.
    pub fn model(&self) -> &str {
        // Conversations are opened with the session's agent, and /model
        // changes both.
        &self.session.config.spec.llm.model
    }

    /// Whether something animates (the spinner).
    pub fn animating(&self) -> bool {
        self.running || self.busy.is_some()
    }

    /// The greeting at the top of a new session.
    pub fn welcome(&mut self) {
        self.transcript.info(format!(
            "OpenHands {} — {} in {}\nEnter sends · Shift+Enter or Alt+Enter adds a line · \
             /help lists commands · Ctrl-C pauses (twice exits) · Esc interrupts",
            env!("CARGO_PKG_VERSION"),
            self.model(),
            self.session.workspace.display()
        ));
    }

    fn callbacks(&self, id: Uuid) -> Vec<EventCallback> {
        let tx = self.tx.clone();
        vec![Arc::new(move |e: &Event| {
            let _ = tx.send(AppEvent::Conversation(id, Box::new(e.clone())));
        })]
    }

    fn current_id(&self) -> Option<Uuid> {
        self.conv.as_ref().map(LocalConversation::id)
    }

    fn ensure_conversation(&mut self) -> anyhow::Result<LocalConversation> {
        if let Some(c) = &self.conv {
            return Ok(c.clone());
        }
        let id = Uuid::new_v4();
        let conv = self.session.start(Some(id), self.callbacks(id))?;
        self.conv = Some(conv.clone());
        Ok(conv)
    }

    fn error(&mut self, text: impl Into<String>) {
        self.transcript.push(Entry::Error(text.into()));
    }

    fn close_current(&mut self) {
        if let Some(c) = self.conv.take() {
            if self.running {
                let _ = c.interrupt();
            }
            tokio::spawn(async move { c.close().await });
        }
        self.running = false;
        self.pausing = false;
        self.busy = None;
        self.status = ExecutionStatus::Idle;
        self.overlay = Overlay::None;
        self.usage = (0, 0.0);
    }

    /// Reopens a saved conversation and shows its history.
    pub fn open(&mut self, id: Uuid) {
        self.close_current();
        let conv = match self.session.resume(id, self.callbacks(id)) {
            Ok(c) => c,
            Err(e) => {
                self.error(format!("{e:#}"));
                return;
            }
        };
        self.transcript.clear();
        self.transcript.info(format!(
            "reopened conversation {} in {}",
            id.simple(),
            conv.working_dir().display()
        ));
        conv.with_events(|events| {
            for e in events {
                self.transcript.push_event(e);
            }
        });
        let state = conv.state();
        self.status = state.execution_status;
        self.confirm = ConfirmMode::from_policy(&state.confirmation_policy);
        self.scroll = 0;
        self.conv = Some(conv.clone());
        self.refresh_usage();
        match self.status {
            ExecutionStatus::WaitingForConfirmation => {
                let pending = conv.with_events(pending_actions);
                if !pending.is_empty() {
                    self.overlay = Overlay::Confirm(pending);
                }
            }
            ExecutionStatus::Paused | ExecutionStatus::Idle
                if !conv.with_events(pending_actions).is_empty() =>
            {
                self.transcript
                    .info("the last run stopped early — press Enter to continue it");
            }
            ExecutionStatus::Paused => self
                .transcript
                .info("paused — press Enter to continue, or type a message"),
            _ => {}
        }
    }

    /// Opens the picker of saved conversations (other than the open one).
    pub fn open_picker(&mut self) {
        let current = self.current_id();
        let items: Vec<StoredConversation> = crate::store::list(&self.session.root)
            .into_iter()
            .filter(|c| Some(c.id) != current)
            .collect();
        if items.is_empty() {
            self.transcript.info(format!(
                "no saved conversations in {}",
                self.session.root.display()
            ));
            return;
        }
        self.overlay = Overlay::Picker(Picker { items, selected: 0 });
    }

    fn start_run(&mut self) {
        let Some(conv) = self.conv.clone() else {
            return;
        };
        self.running = true;
        self.pausing = false;
        self.status = ExecutionStatus::Running;
        let tx = self.tx.clone();
        let id = conv.id();
        tokio::spawn(async move {
            let result = conv.run().await;
            let _ = tx.send(AppEvent::RunEnded(id, result));
        });
    }

    // ----- events ------------------------------------------------------------

    /// Applies a conversation or task event.
    pub fn on_event(&mut self, event: AppEvent) {
        let current = self.current_id();
        match event {
            AppEvent::Conversation(id, e) if Some(id) == current => {
                if let EventBody::StateUpdate(u) = &e.body {
                    if u.key == "execution_status"
                        && let Ok(s) = serde_json::from_value::<ExecutionStatus>(u.value.clone())
                    {
                        self.status = s;
                    }
                    if u.key == "stats" {
                        self.refresh_usage();
                    }
                }
                self.transcript.push_event(&e);
            }
            AppEvent::RunEnded(id, result) if Some(id) == current => {
                self.running = false;
                self.pausing = false;
                self.refresh_usage();
                match result {
                    // An interrupt from this thread may have changed the
                    // status after the run saw the cancellation: the
                    // conversation's status is the one that holds now.
                    Ok(status) => {
                        let now = self.conv.as_ref().map_or(status, LocalConversation::status);
                        self.run_ended(now);
                    }
                    Err(e) => self.error(e.to_string()),
                }
            }
            AppEvent::Condensed(id, result) if Some(id) == current => {
                self.busy = None;
                match result {
                    Ok(true) => {}
                    Ok(false) => self
                        .transcript
                        .info("nothing to condense: the history is still short"),
                    Err(e) => self.error(format!("cannot condense: {e}")),
                }
            }
            _ => {}
        }
    }

    fn run_ended(&mut self, status: ExecutionStatus) {
        self.status = status;
        match status {
            ExecutionStatus::WaitingForConfirmation => {
                let pending = self
                    .conv
                    .as_ref()
                    .map(|c| c.with_events(pending_actions))
                    .unwrap_or_default();
                if pending.is_empty() {
                    self.start_run();
                } else {
                    self.overlay = Overlay::Confirm(pending);
                }
            }
            ExecutionStatus::Paused => self
                .transcript
                .info("paused — press Enter to continue, or type a message"),
            ExecutionStatus::Stuck => {
                self.error("the agent is stuck repeating itself; tell it how to proceed")
            }
            _ => {}
        }
    }

    // ----- keys ----------------------------------------------------------------

    /// Applies a pasted text.
    pub fn on_paste(&mut self, text: &str) {
        if matches!(self.overlay, Overlay::None) {
            self.exit_armed = false;
            self.editor.insert_str(text);
        }
    }

    /// Applies a key.
    pub fn on_key(&mut self, key: KeyEvent) {
        if key.kind == KeyEventKind::Release {
            return;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && matches!(key.code, KeyCode::Char('c') | KeyCode::Char('C')) {
            self.ctrl_c();
            return;
        }
        self.exit_armed = false;
        match self.overlay {
            Overlay::Confirm(_) => self.confirm_key(key),
            Overlay::Picker(_) => self.picker_key(key),
            Overlay::None => self.input_key(key),
        }
    }

    fn ctrl_c(&mut self) {
        if self.exit_armed {
            self.quit = true;
            return;
        }
        self.exit_armed = true;
        match self.overlay {
            Overlay::Confirm(_) => self.answer(Answer::Stop),
            Overlay::Picker(_) => self.overlay = Overlay::None,
            Overlay::None => {
                if self.running {
                    if let Some(c) = &self.conv
                        && let Err(e) = c.pause()
                    {
                        self.error(format!("cannot pause: {e}"));
                        return;
                    }
                    self.pausing = true;
                } else if !self.editor.is_empty() {
                    self.editor.clear();
                }
            }
        }
    }

    fn confirm_key(&mut self, key: KeyEvent) {
        let answer = match key.code {
            KeyCode::Char('y' | 'Y') | KeyCode::Enter => Answer::Yes,
            KeyCode::Char('n' | 'N') => Answer::No,
            KeyCode::Char('a' | 'A') => Answer::Always,
            KeyCode::Esc => Answer::Stop,
            _ => return,
        };
        self.answer(answer);
    }

    fn answer(&mut self, answer: Answer) {
        self.overlay = Overlay::None;
        let Some(conv) = self.conv.clone() else {
            return;
        };
        let result = match answer {
            Answer::Yes => conv.respond_to_confirmation(true, None),
            Answer::Always => conv
                .set_confirmation_policy(ConfirmMode::Never.policy())
                .and_then(|()| conv.set_security_analyzer(None))
                .and_then(|()| conv.respond_to_confirmation(true, None)),
            Answer::No | Answer::Stop => conv.respond_to_confirmation(false, None),
        };
        if let Err(e) = result {
            self.error(format!("cannot answer: {e}"));
            return;
        }
        match answer {
            Answer::Always => {
                self.confirm = ConfirmMode::Never;
                self.transcript
                    .info("confirmation is off for this conversation (/confirm turns it on)");
            }
            Answer::Stop => {
                self.status = conv.status();
                self.transcript
                    .info("rejected — the agent waits for your next message");
                return;
            }
            _ => {}
        }
        self.start_run();
    }

    fn picker_key(&mut self, key: KeyEvent) {
        let Overlay::Picker(p) = &mut self.overlay else {
            return;
        };
        let last = p.items.len().saturating_sub(1);
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => p.selected = p.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => p.selected = (p.selected + 1).min(last),
            KeyCode::PageUp => p.selected = p.selected.saturating_sub(10),
            KeyCode::PageDown => p.selected = (p.selected + 10).min(last),
            KeyCode::Home => p.selected = 0,
            KeyCode::End => p.selected = last,
            KeyCode::Esc => self.overlay = Overlay::None,
            KeyCode::Enter => {
                let id = p.items.get(p.selected).map(|c| c.id);
                self.overlay = Overlay::None;
                if let Some(id) = id {
                    self.open(id);
                }
            }
            _ => {}
        }
    }

    fn input_key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        match key.code {
            KeyCode::Enter if shift || alt => self.editor.newline(),
            KeyCode::Enter => self.submit(),
            KeyCode::Char('j') if ctrl => self.editor.newline(),
            KeyCode::Char('a') if ctrl => self.editor.home(),
            KeyCode::Char('e') if ctrl => self.editor.end(),
            KeyCode::Char('u') if ctrl => self.editor.kill_to_start(),
            KeyCode::Char('k') if ctrl => self.editor.kill_to_end(),
            KeyCode::Char('w') if ctrl => self.editor.delete_word_back(),
            KeyCode::Char('o') if ctrl => self.expanded = !self.expanded,
            KeyCode::Char('l') if ctrl => self.clear_requested = true,
            KeyCode::Char('d') if ctrl => {
                if self.editor.is_empty() {
                    self.quit = true;
                } else {
                    self.editor.delete();
                }
            }
            KeyCode::Char(c) if !ctrl && !alt => self.editor.insert_char(c),
            KeyCode::Backspace if ctrl || alt => self.editor.delete_word_back(),
            KeyCode::Backspace => self.editor.backspace(),
            KeyCode::Delete => self.editor.delete(),
            KeyCode::Left => self.editor.left(),
            KeyCode::Right => self.editor.right(),
            KeyCode::Home => self.editor.home(),
            KeyCode::End => self.editor.end(),
            KeyCode::Up => {
                if !self.editor.up()
                    && let Some(t) = self.history.prev(&self.editor.text())
                {
                    self.editor.set_text(&t);
                }
            }
            KeyCode::Down => {
                if !self.editor.down()
                    && let Some(t) = self.history.next()
                {
                    self.editor.set_text(&t);
                }
            }
            KeyCode::PageUp => self.scroll = self.scroll.saturating_add(self.page.max(2) - 1),
            KeyCode::PageDown => self.scroll = self.scroll.saturating_sub(self.page.max(2) - 1),
            KeyCode::Tab => self.complete(),
            KeyCode::Esc => {
                if self.running {
                    self.interrupt();
                } else {
                    self.scroll = 0;
                }
            }
            _ => {}
        }
    }

    fn interrupt(&mut self) {
        if let Some(c) = &self.conv
            && let Err(e) = c.interrupt()
        {
            self.error(format!("cannot interrupt: {e}"));
        }
    }

    fn complete(&mut self) {
        let text = self.editor.text();
        if !text.starts_with('/') || text.contains(char::is_whitespace) {
            return;
        }
        if let Some((cmd, _)) = slash::completions(&text).first() {
            self.editor.set_text(&format!("{cmd} "));
        }
    }

    /// Sends the prompt: a slash command, a message, or (empty, after a
    /// pause) "continue".
    pub fn submit(&mut self) {
        let text = self.editor.text();
        let trimmed = text.trim();
        if trimmed.is_empty() {
            let resumable = self.conv.is_some()
                && !self.running
                && (self.status == ExecutionStatus::Paused
                    || self
                        .conv
                        .as_ref()
                        .is_some_and(|c| !c.with_events(pending_actions).is_empty()));
            if resumable {
                self.transcript.info("continuing");
                self.start_run();
            }
            return;
        }
        self.history.push(&text);
        self.editor.clear();
        self.scroll = 0;
        if trimmed.starts_with('/') {
            match slash::parse(trimmed) {
                Ok(cmd) => self.run_slash(cmd),
                Err(e) => self.transcript.info(e.to_string()),
            }
            return;
        }
        self.send_task(text);
    }

    /// Sends a message to the open conversation (a new one when none is
    /// open) and runs the agent unless it is running already.
    pub fn send_task(&mut self, text: String) {
        let conv = match self.ensure_conversation() {
            Ok(c) => c,
            Err(e) => {
                self.error(format!("{e:#}"));
                return;
            }
        };
        if let Err(e) = conv.send_message(text) {
            self.error(format!("cannot send: {e}"));
            return;
        }
        if !self.running {
            self.start_run();
        }
    }

    // ----- slash commands ------------------------------------------------------

    fn run_slash(&mut self, cmd: Slash) {
        match cmd {
            Slash::Help => self.help(),
            Slash::Exit => self.quit = true,
            Slash::New => {
                self.close_current();
                self.transcript.clear();
                self.welcome();
            }
            Slash::Resume(None) => self.open_picker(),
            Slash::Resume(Some(id)) => match crate::store::find(&self.session.root, &id) {
                Ok(id) => self.open(id),
                Err(e) => self.error(e.to_string()),
            },
            Slash::Model(None) => self
                .transcript
                .info(format!("model: {} (/model NAME switches)", self.model())),
            Slash::Model(Some(name)) => self.switch_model(name),
            Slash::Tools => self.tools(),
            Slash::Confirm(arg) => self.set_confirm(arg),
            Slash::Condense => self.condense(),
            Slash::Cost => self.cost(),
        }
    }

    fn help(&mut self) {
        let mut text = String::from("commands:\n");
        for (c, h) in slash::COMMANDS {
            text.push_str(&format!("  {c:<10} {h}\n"));
        }
        text.push_str(
            "keys:\n  Enter send · Shift+Enter, Alt+Enter or Ctrl-J new line · Up/Down history\n  \
             Ctrl-C pause the agent (twice: exit) · Esc interrupt the agent\n  \
             PageUp/PageDown scroll · Ctrl-O unfold long outputs · Ctrl-D exit on an empty prompt\n  \
             confirmations: y run · n reject (the agent goes on) · a always run · Esc reject and stop",
        );
        self.transcript.info(text);
    }

    fn switch_model(&mut self, name: String) {
        if self.running {
            self.transcript
                .info("the model cannot change during a run; pause (Ctrl-C) first");
            return;
        }
        let mut config = self.session.config.spec.llm.clone();
        config.model = name.clone();
        let llm = match openhands_llm::Llm::new(config.clone()) {
            Ok(l) => l,
            Err(e) => {
                self.error(format!("cannot use {name}: {e}"));
                return;
            }
        };
        if let Some(c) = &self.conv
            && let Err(e) = c.switch_llm(llm)
        {
            self.error(format!("cannot switch the model: {e}"));
            return;
        }
        self.session.config.spec.llm = config;
        if let Some(cond) = self.session.config.spec.condenser.as_mut()
            && let Some(m) = cond.pointer_mut("/llm/model")
        {
            *m = serde_json::Value::String(name.clone());
        }
        self.transcript.info(format!("model: {name}"));
    }

    fn tools(&mut self) {
        let spec = match &self.conv {
            Some(c) => c.agent().spec().clone(),
            None => self.session.config.spec.clone(),
        };
        let names = crate::options::tool_names(&spec);
        self.transcript.info(format!(
            "tools: {}\nbuilt-in tools (choose with --tools or `openhands config set tools`): {}",
            names.join(", "),
            crate::tool_names::available()
        ));
    }

    fn set_confirm(&mut self, arg: Option<String>) {
        let mode = match arg {
            None => self.confirm.next(),
            Some(a) => match ConfirmMode::parse(&a) {
                Some(m) => m,
                None => {
                    self.transcript
                        .info(format!("unknown mode '{a}': use never, risky or always"));
                    return;
                }
            },
        };
        if let Some(c) = &self.conv {
            let r = c
                .set_confirmation_policy(mode.policy())
                .and_then(|()| c.set_security_analyzer(mode.security_analyzer()));
            if let Err(e) = r {
                self.error(format!("cannot change confirmation: {e}"));
                return;
            }
        }
        self.confirm = mode;
        self.session.config.confirm = mode;
        let what = match mode {
            ConfirmMode::Never => "never ask",
            ConfirmMode::Risky => "ask before HIGH-risk or unrated actions",
            ConfirmMode::Always => "ask before every action",
        };
        self.transcript
            .info(format!("confirmation: {} — {what}", mode.as_str()));
    }

    fn condense(&mut self) {
        let Some(conv) = self.conv.clone() else {
            self.transcript.info("nothing to condense yet");
            return;
        };
        if self.running {
            self.transcript
                .info("wait for the run to end (or pause it) before condensing");
            return;
        }
        self.busy = Some("condensing".into());
        let tx = self.tx.clone();
        let id = conv.id();
        tokio::spawn(async move {
            let count = |c: &LocalConversation| {
                c.with_events(|events| {
                    events
                        .iter()
                        .filter(|e| matches!(e.body, EventBody::Condensation(_)))
                        .count()
                })
            };
            let before = count(&conv);
            let result = conv.condense().await.map(|()| count(&conv) > before);
            let _ = tx.send(AppEvent::Condensed(id, result));
        });
    }

    fn cost(&mut self) {
        let Some(conv) = &self.conv else {
            self.transcript.info("no cost yet: nothing was sent");
            return;
        };
        let stats = conv.stats();
        let mut text = format!("total cost ${:.4}", stats.total_cost());
        for (usage, m) in stats.usage_to_metrics.iter() {
            let t = m.accumulated_token_usage.clone().unwrap_or_default();
            text.push_str(&format!(
                "\n  {usage} ({}): {} prompt + {} completion tokens, {} cached, ${:.4}",
                m.model_name,
                t.prompt_tokens,
                t.completion_tokens,
                t.cache_read_tokens,
                m.accumulated_cost
            ));
        }
        self.transcript.info(text);
    }

    fn refresh_usage(&mut self) {
        self.usage = match &self.conv {
            Some(c) => {
                let stats = c.stats();
                let tokens = stats
                    .combined()
                    .accumulated_token_usage
                    .map(|t| t.prompt_tokens + t.completion_tokens)
                    .unwrap_or(0);
                (tokens, stats.total_cost())
            }
            None => (0, 0.0),
        };
    }

    /// Stops the run and closes the conversation; its id when it has
    /// anything worth resuming.
    pub async fn shutdown(&mut self) -> Option<Uuid> {
        let conv = self.conv.take()?;
        if self.running {
            let _ = conv.interrupt();
        }
        conv.close().await;
        let worth = conv.with_events(|events| {
            events
                .iter()
                .any(|e| matches!(e.body, EventBody::Message(_)))
        });
        worth.then(|| conv.id())
    }
}
