//! The agent options shared by `run`, `resume` and the interactive session
//! (`--model`, `--tools`, `--confirm`, ...) and how they combine with the
//! environment and the settings file: a flag wins over its environment
//! variable, which wins over `settings.json`, which wins over the defaults.

use crate::error::usage;
use crate::policy::ConfirmMode;
use crate::settings::{Settings, cipher_from_env};
use openhands_wire::agent::AgentSpec;
use openhands_wire::secret::SecretString;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Default iteration limit of one run (the reference's).
pub const DEFAULT_MAX_ITERATIONS: u32 = 500;

/// Which condenser keeps long histories within the model's context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CondenserChoice {
    /// Summarize the middle of long histories with the agent's model.
    Llm,
    /// Never condense.
    None,
}

/// Agent options of `run`, `resume` and the interactive session.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AgentArgs {
    /// Model in LiteLLM form (`openai/gpt-5`, `anthropic/claude-sonnet-4-5`, ...).
    #[arg(short = 'm', long, env = "LLM_MODEL", value_name = "MODEL")]
    pub model: Option<String>,
    /// API key of the provider.
    #[arg(long, env = "LLM_API_KEY", hide_env_values = true, value_name = "KEY")]
    pub api_key: Option<String>,
    /// Base URL of the provider or of an OpenAI-compatible server.
    #[arg(long, env = "LLM_BASE_URL", value_name = "URL")]
    pub base_url: Option<String>,
    /// Stream tokens as they arrive (default: the settings' `stream`, else on
    /// in the interactive session and off for `run`).
    #[arg(long, overrides_with = "no_stream")]
    pub stream: bool,
    /// Do not stream tokens.
    #[arg(long, overrides_with = "stream")]
    pub no_stream: bool,
    /// Built-in tools, comma-separated: terminal, file_editor, task_tracker,
    /// grep, glob, apply_patch (default: terminal,file_editor,task_tracker).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub tools: Option<Vec<String>>,
    /// MCP servers file (`{"mcpServers": {NAME: {"command": ...} | {"url": ...}}}`):
    /// their tools are offered to the agent.
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,
    /// Use the skills of the settings file (`agent_context.skills`; the default).
    #[arg(long, overrides_with = "no_skills")]
    pub skills: bool,
    /// Run without any skill.
    #[arg(long, overrides_with = "skills")]
    pub no_skills: bool,
    /// Ask before actions run: never, risky (HIGH or unrated risk) or always.
    #[arg(long, value_enum, value_name = "MODE")]
    pub confirm: Option<ConfirmMode>,
    /// Approve every action without asking (`--confirm never`).
    #[arg(long, visible_alias = "yolo", conflicts_with_all = ["confirm", "llm_approve"])]
    pub always_approve: bool,
    /// Ask only before actions the model rates HIGH risk (`--confirm risky`:
    /// the model's own risk label is the security analyzer).
    #[arg(long, conflicts_with = "confirm")]
    pub llm_approve: bool,
    /// Iteration limit of each run (default 500).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..), value_name = "N")]
    pub max_iterations: Option<u32>,
    /// Condenser for long histories: llm (summarize) or none.
    #[arg(long, value_enum, value_name = "KIND")]
    pub condenser: Option<CondenserChoice>,
    /// Run the agent's processes in a bubblewrap sandbox: only the
    /// workspace is writable, the conversations and settings folders are
    /// hidden, processes and memory are limited.
    #[arg(long)]
    pub sandbox: bool,
    /// With --sandbox: no network for the agent's processes.
    #[arg(long, requires = "sandbox")]
    pub no_network: bool,
    /// Which of `model`, `api_key`, `base_url` came from their variable
    /// (`LLM_MODEL`, ...) rather than a flag (set by
    /// [`AgentArgs::note_sources`] after parsing).
    #[arg(skip)]
    pub from_env: FromEnv,
}

/// Which LLM options were taken from the environment rather than flags.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FromEnv {
    /// `LLM_MODEL`.
    pub model: bool,
    /// `LLM_API_KEY`.
    pub api_key: bool,
    /// `LLM_BASE_URL`.
    pub base_url: bool,
}

impl AgentArgs {
    /// Records where the parsed values came from; `matches` are those of
    /// the command that holds these options.
    pub fn note_sources(&mut self, matches: &clap::ArgMatches) {
        let env = |id: &str| {
            matches!(
                matches.value_source(id),
                Some(clap::parser::ValueSource::EnvVariable)
            )
        };
        self.from_env = FromEnv {
            model: env("model"),
            api_key: env("api_key"),
            base_url: env("base_url"),
        };
    }

    /// The confirmation mode the flags ask for (`--confirm`,
    /// `--always-approve`, `--llm-approve`), if any.
    pub fn confirm_flag(&self) -> Option<ConfirmMode> {
        if self.always_approve {
            Some(ConfirmMode::Never)
        } else if self.llm_approve {
            Some(ConfirmMode::Risky)
        } else {
            self.confirm
        }
    }
}

/// Everything needed to start or resume conversations.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// The agent (its LLM included).
    pub spec: AgentSpec,
    /// When to ask before actions run.
    pub confirm: ConfirmMode,
    /// Whether `confirm` was asked for (flag or settings) rather than the
    /// default; a resumed conversation keeps its own mode otherwise.
    pub confirm_explicit: bool,
    /// Iteration limit of each run.
    pub max_iterations: u32,
    /// Whether `max_iterations` was asked for (flag or settings); a resumed
    /// conversation keeps its own limit otherwise.
    pub max_iterations_explicit: bool,
    /// Run the agent's processes in a sandbox with these settings
    /// (`--sandbox`).
    pub sandbox: Option<openhands_workspace::exec::SandboxConfig>,
    /// Secrets of the settings (`agent_context.secrets`), given to each
    /// conversation's secret registry.
    pub secrets: Vec<(String, openhands_sdk::secrets::SecretSource)>,
    /// Where the OAuth tokens of the MCP servers are kept (when one of
    /// them uses OAuth).
    pub mcp_oauth_states: Option<std::sync::Arc<openhands_sdk::mcp_oauth::FileOAuthStates>>,
}

fn nonempty(v: &Option<String>) -> Option<String> {
    v.as_ref()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Combines flags, environment and settings into a [`SessionConfig`], or
/// explains in one line what the user must fix. `interactive` picks the
/// streaming default.
pub fn resolve(
    args: &AgentArgs,
    settings: &Settings,
    _workspace: &Path,
    interactive: bool,
) -> anyhow::Result<SessionConfig> {
    let settings_name = settings.path().display().to_string();
    let tools = match &args.tools {
        Some(names) => {
            crate::tool_names::specs_for(names, "--tools").map_err(anyhow::Error::new)?
        }
        None => match settings.tools()? {
            Some(t) => t,
            None => openhands_tools::presets::get_default_tools(false),
        },
    };
    let mcp_config = crate::mcp::configured(settings, args.mcp_config.as_deref())?;
    if let Some(problem) = settings.unsupported().into_iter().next() {
        return Err(usage(format!("{settings_name}: {problem}")));
    }
    let use_skills = !args.no_skills;
    if use_skills
        && settings.skill_loading().contains(&"load_public_skills")
        && openhands_workspace::exec::env::host_var_os(
            openhands_sdk::skills::context::PUBLIC_SKILLS_PATH_ENV,
        )
        .is_none_or(|v| v.is_empty())
    {
        return Err(usage(format!(
            "{settings_name}: agent_settings.agent_context.load_public_skills is true, but public \
             skills are read from a local copy only: set {} to a checkout of the public skills \
             repository, set it to false, or pass --no-skills",
            openhands_sdk::skills::context::PUBLIC_SKILLS_PATH_ENV
        )));
    }

    let cipher = cipher_from_env()?;
    let acp = settings.is_acp();
    let mut spec = if acp {
        for (set, flag) in [
            (args.tools.is_some(), "--tools"),
            (args.condenser.is_some(), "--condenser"),
        ] {
            if set {
                return Err(usage(format!(
                    "{flag}: the ACP agent of {settings_name} (agent_settings.agent_kind \"acp\") \
                     brings its own tools and context handling"
                )));
            }
        }
        check_acp_llm_flags(args, &settings_name)?;
        if let Some(m) = args.confirm_flag().filter(|m| *m != ConfirmMode::Never) {
            return Err(usage(format!(
                "--confirm {}: the ACP agent of {settings_name} asks for permission itself",
                m.as_str()
            )));
        }
        crate::acp_agent::spec(settings)?
    } else {
        openhands_spec(args, settings, tools, cipher.as_ref(), interactive)?
    };
    let mcp_oauth_states = if crate::mcp_auth::uses_oauth(&mcp_config) {
        Some(crate::mcp_auth::store()?)
    } else {
        None
    };
    if acp {
        crate::acp_agent::check_mcp(&mcp_config, &settings_name)?;
    }
    spec.mcp_config = mcp_config;
    let secrets;
    let mut ctx = settings
        .agent_context()
        .unwrap_or_else(|| Value::Object(Default::default()));
    {
        if let Some(obj) = ctx.as_object_mut() {
            // Repository skills (AGENTS.md, .agents/skills, ...) are loaded
            // unless the settings turn them off; --no-skills turns every
            // source off.
            if use_skills {
                obj.entry("load_project_skills")
                    .or_insert(Value::Bool(true));
            } else {
                for key in [
                    "load_project_skills",
                    "load_user_skills",
                    "load_public_skills",
                ] {
                    obj.remove(key);
                }
            }
            let disabled: Vec<String> = obj
                .get("disabled_skills")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            match obj.get_mut("skills").and_then(Value::as_array_mut) {
                Some(skills) if use_skills => skills.retain(|s| {
                    s.get("name")
                        .and_then(Value::as_str)
                        .is_none_or(|n| !disabled.iter().any(|d| d == n))
                }),
                _ => {
                    obj.remove("skills");
                }
            }
        }
        secrets = crate::agent_secrets::take(&mut ctx, cipher.as_ref(), &settings_name)?;
        spec.agent_context = Some(ctx).filter(|c| c.as_object().is_some_and(|m| !m.is_empty()));
    }
    if !acp {
        if let Some(p) = settings.persona()? {
            spec.persona = Some(p);
        }
        if let Some(n) = settings.tool_concurrency_limit()? {
            spec.tool_concurrency_limit = n;
        }
        if let Some(v) = settings.verification()? {
            let llm_key = spec.llm.api_key.as_ref().map(|k| k.expose().to_string());
            spec.critic =
                openhands_sdk::critic::settings::critic_from_verification(v, llm_key.as_deref());
            if let Some(c) = &spec.critic {
                openhands_sdk::critic::Critic::from_json(c).map_err(|e| {
                    usage(format!("{settings_name}: agent_settings.verification: {e}"))
                })?;
            }
        }
    }
    let confirm = match args.confirm_flag() {
        Some(m) => Some(m),
        None if acp => None,
        None => settings.confirm()?,
    };
    let max_iterations = match args.max_iterations {
        Some(n) => Some(n),
        None => settings.max_iterations()?,
    };
    let sandbox = if args.sandbox {
        openhands_workspace::exec::sandbox::probe()
            .map_err(|e| usage(format!("--sandbox: {e}")))?;
        Some(openhands_workspace::exec::SandboxConfig {
            network: !args.no_network,
            ..Default::default()
        })
    } else {
        None
    };
    Ok(SessionConfig {
        sandbox,
        mcp_oauth_states,
        secrets,
        spec,
        confirm: confirm.unwrap_or(ConfirmMode::Never),
        confirm_explicit: confirm.is_some(),
        max_iterations: max_iterations.unwrap_or(DEFAULT_MAX_ITERATIONS),
        max_iterations_explicit: max_iterations.is_some(),
    })
}

/// An ACP agent brings its own model: `--model`, `--api-key` and
/// `--base-url` are refused, and their variables (`LLM_MODEL`, ...) set in
/// the environment draw a one-line warning that they are not used.
fn check_acp_llm_flags(args: &AgentArgs, settings_name: &str) -> anyhow::Result<()> {
    let what = format!(
        "the ACP agent of {settings_name} (agent_settings.agent_kind \"acp\") uses its own model"
    );
    let options = [
        (&args.model, args.from_env.model, "--model", "LLM_MODEL"),
        (
            &args.api_key,
            args.from_env.api_key,
            "--api-key",
            "LLM_API_KEY",
        ),
        (
            &args.base_url,
            args.from_env.base_url,
            "--base-url",
            "LLM_BASE_URL",
        ),
    ];
    for (value, from_env, flag, _) in options {
        if nonempty(value).is_some() && !from_env {
            return Err(usage(format!(
                "{flag}: {what}; set it in the ACP server's own configuration"
            )));
        }
    }
    let unused: Vec<&str> = options
        .iter()
        .filter(|(value, from_env, _, _)| *from_env && nonempty(value).is_some())
        .map(|(_, _, _, var)| *var)
        .collect();
    if !unused.is_empty() {
        let verb = if unused.len() == 1 { "is" } else { "are" };
        eprintln!(
            "warning: {} {verb} set but not used: {what}",
            unused.join(", ")
        );
    }
    Ok(())
}

/// The OpenHands agent of the flags and settings: the LLM (model, key,
/// base URL, streaming), the tools and the condenser.
fn openhands_spec(
    args: &AgentArgs,
    settings: &Settings,
    tools: Vec<openhands_wire::tool::ToolSpec>,
    cipher: Option<&openhands_sdk::secrets::Cipher>,
    interactive: bool,
) -> anyhow::Result<AgentSpec> {
    let settings_name = settings.path().display().to_string();
    let Some(model) = nonempty(&args.model).or(settings.model()?) else {
        return Err(usage(
            "no model configured: set LLM_MODEL (e.g. `export LLM_MODEL=openai/gpt-5`), pass \
             --model, or save one with `openhands config set model openai/gpt-5`",
        ));
    };
    let mut llm = settings.llm_config(&model)?;
    let api_key = match nonempty(&args.api_key) {
        Some(k) => Some(k),
        None => settings.api_key(cipher)?,
    };
    let base_url = match nonempty(&args.base_url) {
        Some(u) => Some(u),
        None => settings.base_url()?,
    };
    // The provider's own variables (ANTHROPIC_API_KEY, OPENAI_API_KEY, ...)
    // are read by the LLM layer when no key is configured, as LiteLLM does.
    let provider_env =
        openhands_llm::provider_env::defaults(&openhands_wire::LlmConfig::new(&model));
    let has_key = api_key.is_some() || provider_env.api_key.is_some();
    if !has_key && llm.provider() == "bedrock" {
        // Bedrock signs with the AWS credentials (settings, variables or
        // profile files) when there is no API key.
        openhands_llm::bedrock::auth::resolve(&llm, &openhands_llm::provider_env::var)
            .map_err(|e| usage(format!("{model}: {e}")))?;
    } else if !has_key && base_url.is_none() && !model.starts_with("ollama") {
        let provider_vars =
            openhands_llm::provider_env::key_var_names(&openhands_wire::LlmConfig::new(&model));
        let or_vars = if provider_vars.is_empty() {
            String::new()
        } else {
            format!(" (or {})", provider_vars.join(" or "))
        };
        return Err(usage(format!(
            "no API key for {model}: set LLM_API_KEY{or_vars}, pass --api-key, or save one with \
             `openhands config set api_key ...` (a local OpenAI-compatible server needs only \
             --base-url)"
        )));
    }
    llm.api_key = api_key.map(SecretString::new);
    llm.base_url = base_url;
    llm.stream = if args.stream {
        true
    } else if args.no_stream {
        false
    } else {
        settings.stream()?.unwrap_or(interactive)
    };
    llm.usage_id = "agent".into();

    let mut spec = openhands_tools::presets::get_default_agent(llm.clone(), true);
    spec.tools = tools;
    if let Some(route) = settings.routing_tool()? {
        spec.tools.retain(|t| {
            t.name != openhands_sdk::route_task::CLASS && t.name != openhands_sdk::route_task::NAME
        });
        spec.tools.push(route);
    }
    let condenser = settings.condenser()?;
    let condense = match args.condenser {
        Some(CondenserChoice::Llm) => true,
        Some(CondenserChoice::None) => false,
        None => condenser.enabled.unwrap_or(true),
    };
    spec.condenser = if condense {
        let mut c = openhands_tools::presets::default_condenser(&llm);
        if let Some(obj) = c.as_object_mut() {
            if let Some(n) = condenser.max_size {
                obj.insert("max_size".into(), Value::from(n));
            }
            if let Some(n) = condenser.keep_first {
                obj.insert("keep_first".into(), Value::from(n));
            }
            if let Some(n) = condenser.max_tokens {
                obj.insert("max_tokens".into(), Value::from(n));
            }
            let max = obj.get("max_size").and_then(Value::as_u64).unwrap_or(0);
            let keep = obj.get("keep_first").and_then(Value::as_u64).unwrap_or(0);
            // The reference's rule: room for a tail after keep_first.
            if (max / 2) as i64 - keep as i64 - 1 <= 0 {
                return Err(usage(format!(
                    "{settings_name}: agent_settings.condenser.keep_first ({keep}) must be \
                     less than max_size // 2 ({}) to leave room for condensation",
                    max / 2
                )));
            }
        }
        Some(c)
    } else {
        None
    };
    Ok(spec)
}

/// The names of the agent's tools (built-ins `finish` and `think` included).
pub fn tool_names(spec: &AgentSpec) -> Vec<String> {
    let mut names: Vec<String> = spec.tools.iter().map(|t| t.name.clone()).collect();
    names.extend(["finish".to_string(), "think".to_string()]);
    names
}

#[cfg(test)]
#[path = "options_tests.rs"]
mod tests;
