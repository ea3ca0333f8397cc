//! Helpers of the end-to-end tests: the `openhands` binary in a
//! pseudo-terminal whose screen is read with a VT100 parser, and the
//! scripted LLM server.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long any expected screen content may take to appear (the machine
/// may be loaded; nothing is timed, this only bounds a failing test).
pub const PATIENCE: Duration = Duration::from_secs(90);

/// A tokio runtime for the scripted LLM server.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// An isolated user: home (settings, history), conversations and a workspace.
pub struct Sandbox {
    pub home: tempfile::TempDir,
    pub conversations: tempfile::TempDir,
    pub workspace: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        Self {
            home: tempfile::tempdir().unwrap(),
            conversations: tempfile::tempdir().unwrap(),
            workspace: tempfile::tempdir().unwrap(),
        }
    }

    /// Environment for the binary: this sandbox and the scripted LLM at
    /// `base_url` (when given).
    pub fn env(&self, base_url: Option<&str>) -> Vec<(String, String)> {
        let mut env = vec![
            ("HOME".to_string(), self.home.path().display().to_string()),
            (
                "OPENHANDS_CONVERSATIONS_DIR".to_string(),
                self.conversations.path().display().to_string(),
            ),
            ("TERM".to_string(), "xterm-256color".to_string()),
        ];
        if let Some(url) = base_url {
            env.push(("LLM_MODEL".into(), "openai/mock-model".into()));
            env.push(("LLM_API_KEY".into(), "mock-key".into()));
            env.push(("LLM_BASE_URL".into(), url.to_string()));
        }
        env
    }

    /// The stored conversation folders.
    pub fn conversation_dirs(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.conversations.path())
            .map(|rd| rd.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default()
    }

    /// Every stored event of every conversation, as JSON.
    pub fn stored_events(&self) -> Vec<serde_json::Value> {
        let mut out = Vec::new();
        for dir in self.conversation_dirs() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("events"))
                .map(|rd| {
                    rd.map(|e| e.unwrap().path())
                        .filter(|p| p.extension().is_some_and(|e| e == "json"))
                        .collect()
                })
                .unwrap_or_default();
            files.sort();
            for f in files {
                out.push(serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap());
            }
        }
        out
    }
}

/// The `openhands` binary on a 40×120 pseudo-terminal.
pub struct Tui {
    parser: Arc<Mutex<vt100::Parser>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn Child + Send + Sync>,
    /// Set once the reader thread has read the terminal to its end.
    drained: Arc<std::sync::atomic::AtomicBool>,
    _master: Box<dyn MasterPty + Send>,
}

impl Tui {
    /// Starts `openhands ARGS` in `cwd` with `env` added to this process's
    /// environment (logging variables removed).
    pub fn start(args: &[&str], env: &[(String, String)], cwd: &Path) -> Self {
        Self::start_sized(40, 120, args, env, cwd)
    }

    /// Like [`Tui::start`] on a terminal of `rows` × `cols`.
    pub fn start_sized(
        rows: u16,
        cols: u16,
        args: &[&str],
        env: &[(String, String)],
        cwd: &Path,
    ) -> Self {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_openhands"));
        cmd.args(args);
        cmd.cwd(cwd);
        for var in [
            "LOG_LEVEL",
            "RUST_LOG",
            "OH_PERSISTENCE_DIR",
            "OH_SECRET_KEY",
            "LLM_MODEL",
            "LLM_API_KEY",
            "LLM_BASE_URL",
            "NO_COLOR",
        ] {
            cmd.env_remove(var);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = pty.slave.spawn_command(cmd).unwrap();
        drop(pty.slave);
        let parser = Arc::new(Mutex::new(vt100::Parser::new(
            std::num::NonZero::new(40).unwrap(),
            std::num::NonZero::new(120).unwrap(),
            0,
        )));
        let mut reader = pty.master.try_clone_reader().unwrap();
        let sink = parser.clone();
        let drained = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader_done = drained.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => sink.lock().unwrap().process(&buf[..n]),
                }
            }
            reader_done.store(true, std::sync::atomic::Ordering::Release);
        });
        let writer = pty.master.take_writer().unwrap();
        Self {
            parser,
            writer,
            child,
            drained,
            _master: pty.master,
        }
    }

    /// The screen's text.
    pub fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    /// How many cells of the screen have a foreground or background colour.
    pub fn colored_cells(&self) -> usize {
        let parser = self.parser.lock().unwrap();
        let screen = parser.screen();
        let (rows, cols) = screen.size();
        let mut n = 0;
        for r in 0..rows.get() {
            for c in 0..cols.get() {
                if let Some(cell) = screen.cell(r, c)
                    && (cell.fgcolor() != vt100::Color::Default
                        || cell.bgcolor() != vt100::Color::Default)
                {
                    n += 1;
                }
            }
        }
        n
    }

    /// Waits until `pred` holds for the screen; fails with the screen.
    pub fn wait_until(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {what}; the screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(40));
        }
    }

    /// Waits until the screen shows `needle`.
    pub fn wait_for(&self, needle: &str) -> String {
        self.wait_until(&format!("{needle:?}"), |s| s.contains(needle))
    }

    /// Sends raw bytes (keys as the terminal encodes them).
    pub fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).unwrap();
        self.writer.flush().unwrap();
    }

    /// Types text.
    pub fn type_text(&mut self, text: &str) {
        self.send(text.as_bytes());
    }

    /// Types a line and presses Enter.
    pub fn submit(&mut self, text: &str) {
        self.type_text(text);
        // The prompt shows the text before Enter goes, so Enter is not read
        // together with it as a paste-like burst.
        let shown: String = text
            .chars()
            .rev()
            .take(20)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        self.wait_for(shown.lines().last().unwrap_or(""));
        self.send(b"\r");
    }

    /// Waits for the process to end; its exit code.
    pub fn wait_exit(&mut self) -> u32 {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // The screen is parsed by the reader thread: let it reach the
                // end of what the session wrote before it exited (bounded: a
                // process the session left behind may hold the terminal).
                let drain_deadline = Instant::now() + Duration::from_secs(2);
                while !self.drained.load(std::sync::atomic::Ordering::Acquire)
                    && Instant::now() < drain_deadline
                {
                    std::thread::sleep(Duration::from_millis(10));
                }
                return status.exit_code();
            }
            if Instant::now() > deadline {
                panic!("the session did not exit; the screen:\n{}", self.screen());
            }
            std::thread::sleep(Duration::from_millis(40));
        }
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The text of every message of a recorded Chat Completions request.
pub fn request_text(body: &serde_json::Value) -> String {
    body["messages"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .map(|m| match &m["content"] {
                    serde_json::Value::String(s) => s.clone(),
                    serde_json::Value::Array(parts) => parts
                        .iter()
                        .filter_map(|p| p["text"].as_str())
                        .collect::<Vec<_>>()
                        .join("\n"),
                    _ => String::new(),
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The `openhands` binary as a plain child (no terminal, stdin empty) in
/// the sandbox's workspace, with the scripted LLM at `base_url`.
pub fn command(sb: &Sandbox, base_url: Option<&str>) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_openhands"));
    for var in [
        "LOG_LEVEL",
        "RUST_LOG",
        "OH_PERSISTENCE_DIR",
        "OH_SECRET_KEY",
        "LLM_MODEL",
        "LLM_API_KEY",
        "LLM_BASE_URL",
        "NO_COLOR",
    ] {
        cmd.env_remove(var);
    }
    cmd.envs(sb.env(base_url))
        .current_dir(sb.workspace.path())
        .stdin(std::process::Stdio::null());
    cmd
}
