//! `openhands config`: show and change the settings file.

use crate::error::usage;
use crate::settings::{Setting, Settings, cipher_from_env, mask};
use std::io::Read;
use std::process::ExitCode;

/// Options of `openhands config`.
#[derive(Debug, clap::Args)]
pub struct ConfigArgs {
    /// What to do (default: show).
    #[command(subcommand)]
    pub action: Option<ConfigAction>,
}

/// `openhands config` actions.
#[derive(Debug, clap::Subcommand)]
pub enum ConfigAction {
    /// Show every setting, its value and where the value comes from.
    Show,
    /// Set a value (keys: model, api_key, base_url, stream, tools, confirm,
    /// max_iterations, condenser, condenser_max_size). `-` reads the value
    /// from standard input.
    Set {
        /// Setting name.
        key: String,
        /// New value.
        value: String,
    },
    /// Remove a value so that its default applies again.
    Unset {
        /// Setting name.
        key: String,
    },
    /// Print the path of the settings file.
    Path,
}

fn key(name: &str) -> anyhow::Result<Setting> {
    Setting::parse(name).ok_or_else(|| {
        usage(format!(
            "unknown setting '{name}': the settings are {}",
            Setting::names()
        ))
    })
}

fn default_of(key: Setting) -> &'static str {
    match key {
        Setting::Model | Setting::ApiKey | Setting::BaseUrl => "(not set)",
        Setting::Stream => "on in the interactive session, off for `run`",
        Setting::Tools => "terminal,file_editor,task_tracker",
        Setting::Confirm => "never",
        Setting::MaxIterations => "500",
        Setting::Condenser => "llm",
        Setting::CondenserMaxSize => "80",
    }
}

fn env_of(key: Setting) -> Option<&'static str> {
    match key {
        Setting::Model => Some("LLM_MODEL"),
        Setting::ApiKey => Some("LLM_API_KEY"),
        Setting::BaseUrl => Some("LLM_BASE_URL"),
        _ => None,
    }
}

fn show(settings: &Settings) -> anyhow::Result<()> {
    println!("settings file: {}", settings.path().display());
    for k in Setting::ALL {
        let from_env = env_of(k).and_then(|var| {
            openhands_workspace::exec::env::host_var(var)
                .filter(|v| !v.trim().is_empty())
                .map(|v| (var, v))
        });
        let (value, source) = match (from_env, settings.display(k)?) {
            (Some((var, v)), _) => {
                let v = if k == Setting::ApiKey { mask(&v) } else { v };
                (v, format!("environment {var}"))
            }
            (None, Some(v)) => (v, "settings file".to_string()),
            (None, None) => (default_of(k).to_string(), "default".to_string()),
        };
        println!("  {:<20} {:<40} ({source})", k.name(), value);
    }
    let problems = settings.unsupported();
    for p in problems {
        println!("  unsupported: {p}");
    }
    let servers = settings.mcp_servers();
    if !servers.is_empty() {
        println!("  mcp servers          {}", servers.join(", "));
    }
    Ok(())
}

/// Runs `openhands config`.
pub fn config(args: ConfigArgs) -> anyhow::Result<ExitCode> {
    let path = crate::paths::settings_file();
    match args.action.unwrap_or(ConfigAction::Show) {
        ConfigAction::Show => show(&Settings::load(&path)?)?,
        ConfigAction::Path => println!("{}", path.display()),
        ConfigAction::Set { key: name, value } => {
            let k = key(&name)?;
            let value = if value == "-" {
                let mut text = String::new();
                std::io::stdin().read_to_string(&mut text)?;
                text.trim().to_string()
            } else {
                value
            };
            let cipher = cipher_from_env()?;
            let settings = Settings::edit(&path, cipher.as_ref(), |s| {
                s.set_key(k, &value, cipher.as_ref())
            })?;
            let shown = settings.display(k)?.unwrap_or_default();
            println!("{} = {shown}  (saved in {})", k.name(), path.display());
        }
        ConfigAction::Unset { key: name } => {
            let k = key(&name)?;
            Settings::edit(&path, cipher_from_env()?.as_ref(), |s| {
                s.unset_key(k);
                Ok(())
            })?;
            println!(
                "{} removed; the default applies: {}",
                k.name(),
                default_of(k)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
