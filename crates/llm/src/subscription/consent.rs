//! The terms notice before a ChatGPT sign-in, as the reference shows it:
//! the notice every time; in a terminal a yes/no question (no by
//! default); without a terminal the sign-in goes on only when the terms
//! were accepted before, which a marker file beside the credentials
//! (`.chatgpt_consent_acknowledged`) records.

use super::openai::AuthError;
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

/// The marker file's name (the reference's), in the credentials directory.
pub const MARKER: &str = ".chatgpt_consent_acknowledged";

/// The notice shown before every sign-in.
pub const NOTICE: &str = "Signing in with ChatGPT puts the agent's model calls on your ChatGPT plan. \
By going on you confirm that you use ChatGPT as an end user and that OpenAI's Terms of Use apply:\n\
https://openai.com/policies/terms-of-use/";

/// What the user answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Go on.
    Yes,
    /// Stop.
    No,
    /// Nobody could be asked (no terminal).
    NotAsked,
}

/// Shows the notice and asks (blocking is allowed: it runs on a blocking
/// thread).
pub type Prompt = Box<dyn FnOnce(&str) -> Answer + Send>;

/// The reference's prompt: the notice framed on standard output, then,
/// when standard input is a terminal, `[y/N]`.
pub fn terminal_prompt() -> Prompt {
    Box::new(|notice| {
        let rule = "=".repeat(70);
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "\n{rule}\n{notice}\n{rule}\n");
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return Answer::NotAsked;
        }
        let _ = write!(out, "Sign in with ChatGPT? [y/N]: ");
        let _ = out.flush();
        let mut line = String::new();
        match stdin.lock().read_line(&mut line) {
            Ok(0) | Err(_) => {
                let _ = writeln!(out);
                Answer::No
            }
            Ok(_) => match line.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => Answer::Yes,
                _ => Answer::No,
            },
        }
    })
}

/// Whether the terms were accepted before (the marker in `dir`).
pub fn acknowledged(dir: &Path) -> bool {
    dir.join(MARKER).exists()
}

async fn mark(dir: &Path) -> Result<(), AuthError> {
    let io =
        |e: std::io::Error| AuthError::Upstream(format!("{}: {e}", dir.join(MARKER).display()));
    tokio::fs::create_dir_all(dir).await.map_err(io)?;
    tokio::fs::write(dir.join(MARKER), b"").await.map_err(io)
}

/// Shows the notice through `prompt` and decides: a yes goes on (and is
/// recorded the first time), a no stops with [`AuthError::Declined`];
/// without anyone to ask, an earlier acceptance goes on and none stops
/// with [`AuthError::ConsentNeeded`].
pub async fn confirm(dir: &Path, prompt: Prompt) -> Result<(), AuthError> {
    let first = !acknowledged(dir);
    let answer = tokio::task::spawn_blocking(move || prompt(NOTICE))
        .await
        .unwrap_or(Answer::No);
    match answer {
        Answer::Yes if first => mark(dir).await,
        Answer::Yes => Ok(()),
        Answer::No => Err(AuthError::Declined),
        Answer::NotAsked if first => Err(AuthError::ConsentNeeded),
        Answer::NotAsked => {
            tracing::info!("no terminal: the ChatGPT terms were accepted before");
            Ok(())
        }
    }
}
