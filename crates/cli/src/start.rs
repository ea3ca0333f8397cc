//! What `openhands` without a subcommand starts, with the reference CLI's
//! flags: the interactive session, seeded with a task (`openhands "TASK"`,
//! `-t/--task`, `-f/--file`) or not, on a new conversation or a saved one
//! (`--resume [ID]`, `--resume --last`); or, with `--headless` (or a task
//! and no terminal), one run without the interactive view.

use crate::error::usage;
use crate::options::AgentArgs;
use crate::store::{Start, resume_target};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Options of `openhands` without a subcommand.
#[derive(Debug, Clone, clap::Args)]
pub struct SessionArgs {
    /// The task to start with (the same as `-t TASK`).
    #[arg(value_name = "TASK", conflicts_with_all = ["task", "file"])]
    pub prompt: Option<String>,
    /// The task to start with: the session sends it and runs at once.
    #[arg(short = 't', long, value_name = "TASK", conflicts_with = "file")]
    pub task: Option<String>,
    /// A file whose contents start the session (sent as the first message,
    /// with its path).
    #[arg(short = 'f', long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Run the task without the interactive view, approving every action
    /// (needs a task), print the events and exit with the run's status.
    #[arg(long, conflicts_with_all = ["confirm", "llm_approve"])]
    pub headless: bool,
    /// With --headless: print events as JSON lines.
    #[arg(long, requires = "headless")]
    pub json: bool,
    /// Reopen a saved conversation: by id (or a unique prefix), the newest
    /// with --last, or choose from a list when no id is given.
    #[arg(short = 'r', long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    pub resume: Option<String>,
    /// With --resume: the most recently changed conversation.
    #[arg(long, requires = "resume")]
    pub last: bool,
    /// Folder the agent works in (default: the current folder).
    #[arg(short = 'w', long, default_value = ".")]
    pub workspace: PathBuf,
    /// Where conversations are stored (default `~/.openhands/conversations`).
    #[arg(long, env = "OPENHANDS_CONVERSATIONS_DIR")]
    pub persistence_dir: Option<PathBuf>,
    /// Agent options.
    #[command(flatten)]
    pub agent: AgentArgs,
}

/// The first message of `--file`: the file's path and contents.
fn file_message(path: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| usage(format!("cannot read the task file {}: {e}", path.display())))?;
    Ok(format!(
        "The task is in the file {path}; its contents follow.\n\n<file path=\"{path}\">\n{text}\n</file>\n",
        path = path.display()
    ))
}

/// The task the flags seed the session with, if any; an empty one is an
/// error.
pub fn seed(args: &SessionArgs) -> anyhow::Result<Option<String>> {
    let text = match (&args.prompt, &args.task, &args.file) {
        (_, _, Some(file)) => file_message(file)?,
        (Some(t), _, _) | (None, Some(t), _) => t.clone(),
        (None, None, None) => return Ok(None),
    };
    if text.trim().is_empty() {
        return Err(usage("the task is empty: say what the agent should do"));
    }
    Ok(Some(text))
}

/// Runs `openhands` without a subcommand.
pub async fn start(args: SessionArgs) -> anyhow::Result<ExitCode> {
    let seed = seed(&args)?;
    if args.headless && seed.is_none() && args.resume.is_none() {
        return Err(usage(
            "--headless needs a task: `openhands --headless -t TASK`, `-f FILE`, or a task as \
             the argument",
        ));
    }
    let terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let headless = args.headless || (!terminal && seed.is_some());
    let root = crate::paths::conversations_dir(args.persistence_dir.clone());
    let target = resume_target(&root, args.resume.as_deref(), args.last)?;
    if headless {
        let resume = match target {
            Start::New => None,
            Start::Open(id) => Some(id),
            Start::Pick => {
                return Err(usage(
                    "without the interactive view there is no list to choose from: pass \
                     --resume ID or --resume --last",
                ));
            }
        };
        if resume.is_none() && seed.is_none() {
            return Err(usage("--headless needs a task to start a conversation"));
        }
        return crate::run::headless(crate::run::Headless {
            workspace: (resume.is_none() || args.workspace != Path::new("."))
                .then(|| args.workspace.clone()),
            root,
            agent: args.agent,
            json: args.json,
            output_last_message: None,
            resume,
            task: seed,
            approve_all: args.headless,
        })
        .await;
    }
    crate::tui::interactive(crate::tui::Launch {
        workspace: args.workspace,
        root,
        agent: args.agent,
        start: target,
        seed,
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::as_usage;

    fn args(prompt: Option<&str>, task: Option<&str>, file: Option<PathBuf>) -> SessionArgs {
        SessionArgs {
            prompt: prompt.map(str::to_string),
            task: task.map(str::to_string),
            file,
            headless: false,
            json: false,
            resume: None,
            last: false,
            workspace: PathBuf::from("."),
            persistence_dir: None,
            agent: AgentArgs::default(),
        }
    }

    #[test]
    fn the_seed_comes_from_the_argument_the_task_or_the_file() {
        assert_eq!(seed(&args(None, None, None)).unwrap(), None);
        assert_eq!(
            seed(&args(Some("fix it"), None, None)).unwrap().as_deref(),
            Some("fix it")
        );
        assert_eq!(
            seed(&args(None, Some("task"), None)).unwrap().as_deref(),
            Some("task")
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("todo.md");
        std::fs::write(&file, "make the tests pass").unwrap();
        let text = seed(&args(None, None, Some(file.clone())))
            .unwrap()
            .unwrap();
        assert!(text.contains("make the tests pass"), "{text}");
        assert!(text.contains(&file.display().to_string()), "{text}");
        let e = seed(&args(None, None, Some(dir.path().join("none.md")))).unwrap_err();
        assert!(
            as_usage(&e)
                .unwrap()
                .0
                .contains("cannot read the task file"),
            "{e}"
        );
        let e = seed(&args(Some("  "), None, None)).unwrap_err();
        assert!(as_usage(&e).unwrap().0.contains("the task is empty"));
    }
}
