//! Slash commands of the interactive session.

/// A parsed slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slash {
    /// `/help`
    Help,
    /// `/new`
    New,
    /// `/resume [ID]`
    Resume(Option<String>),
    /// `/model [NAME]`
    Model(Option<String>),
    /// `/tools`
    Tools,
    /// `/confirm [never|risky|always]`
    Confirm(Option<String>),
    /// `/condense`
    Condense,
    /// `/cost`
    Cost,
    /// `/exit`
    Exit,
}

/// Every command with its one-line help.
pub const COMMANDS: [(&str, &str); 9] = [
    ("/help", "keys and commands"),
    ("/new", "start a new conversation"),
    (
        "/resume",
        "reopen a saved conversation (picker, or /resume ID)",
    ),
    ("/model", "show the model, or /model NAME to switch"),
    ("/tools", "the agent's tools"),
    (
        "/confirm",
        "ask before actions: /confirm never|risky|always (no argument cycles)",
    ),
    ("/condense", "summarize the history now"),
    ("/cost", "tokens and cost so far"),
    ("/exit", "leave (the conversation is saved)"),
];

/// Why a `/` line is not a command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SlashError {
    /// A command without arguments given one.
    #[error("{name} takes no argument (got '{arg}')")]
    NoArgument {
        /// The command.
        name: String,
        /// What followed it.
        arg: String,
    },
    /// No such command.
    #[error("unknown command {0}; /help lists the commands")]
    Unknown(String),
}

/// Parses a line starting with `/`.
pub fn parse(input: &str) -> Result<Slash, SlashError> {
    let mut parts = input.trim().splitn(2, char::is_whitespace);
    let name = parts.next().unwrap_or("").to_ascii_lowercase();
    let arg = parts
        .next()
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_string);
    let no_arg = |cmd: Slash| match &arg {
        None => Ok(cmd),
        Some(a) => Err(SlashError::NoArgument {
            name: name.clone(),
            arg: a.clone(),
        }),
    };
    match name.as_str() {
        "/help" | "/?" => no_arg(Slash::Help),
        "/new" | "/clear" => no_arg(Slash::New),
        "/resume" => Ok(Slash::Resume(arg)),
        "/model" => Ok(Slash::Model(arg)),
        "/tools" => no_arg(Slash::Tools),
        "/confirm" => Ok(Slash::Confirm(arg)),
        "/condense" | "/compact" => no_arg(Slash::Condense),
        "/cost" | "/status" => no_arg(Slash::Cost),
        "/exit" | "/quit" => no_arg(Slash::Exit),
        _ => Err(SlashError::Unknown(name.clone())),
    }
}

/// Commands starting with `prefix` (the input so far, `/` included).
pub fn completions(prefix: &str) -> Vec<(&'static str, &'static str)> {
    let prefix = prefix.trim_end().to_ascii_lowercase();
    COMMANDS
        .iter()
        .copied()
        .filter(|(c, _)| c.starts_with(&prefix))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_and_arguments() {
        assert_eq!(parse("/help"), Ok(Slash::Help));
        assert_eq!(
            parse(" /model  openai/gpt-5 "),
            Ok(Slash::Model(Some("openai/gpt-5".into())))
        );
        assert_eq!(parse("/confirm"), Ok(Slash::Confirm(None)));
        assert_eq!(parse("/resume abc"), Ok(Slash::Resume(Some("abc".into()))));
        assert!(
            parse("/cost now")
                .unwrap_err()
                .to_string()
                .contains("takes no argument")
        );
        assert!(
            parse("/bogus")
                .unwrap_err()
                .to_string()
                .contains("unknown command /bogus")
        );
        assert_eq!(completions("/c").len(), 3);
        assert_eq!(
            completions("/ex"),
            vec![("/exit", "leave (the conversation is saved)")]
        );
    }
}
