//! The settings file: the reference's `settings.json` (in `OH_PERSISTENCE_DIR`
//! or `~/.openhands`), whose `agent_settings` hold the LLM, tools, MCP
//! servers and condenser and whose `conversation_settings` hold the
//! iteration limit and confirmation mode.
//!
//! The document and its file are the SDK's ([`openhands_sdk::settings`],
//! shared with the agent server): reads and locked, crash-safe
//! read-modify-writes go through its [`SettingsFile`], the key is the
//! server's (`OH_SECRET_KEY` plus `OH_PREVIOUS_SECRET_KEYS`, parsed by the
//! server's configuration), and every write re-seals the secrets a
//! previous key opens with the current one. This module reads the fields
//! the command needs from the JSON object; fields it does not know are
//! kept as they are. Settings it cannot honour yet (public
//! skill loading without a local copy, unknown agent kinds, ...)
//! are reported by [`Settings::unsupported`] so that callers refuse them
//! instead of ignoring them. The critic (`agent_settings.verification`) is
//! built as the reference's `build_critic` does.

use crate::error::usage;
use crate::policy::ConfirmMode;
use openhands_sdk::profiles::llm_json;
use openhands_sdk::secrets::{Cipher, looks_encrypted};
use openhands_sdk::settings::{SettingsFile, defaults, secrets};
use openhands_wire::LlmConfig;
use openhands_wire::tool::ToolSpec;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

use defaults::{
    AGENT_SCHEMA_VERSION, CONVERSATION_SCHEMA_VERSION,
    DOCUMENT_SCHEMA_VERSION as PERSISTED_SCHEMA_VERSION,
};

/// The settings as stored (a JSON object) and where they live.
#[derive(Debug, Clone)]
pub struct Settings {
    path: PathBuf,
    raw: Map<String, Value>,
}

/// The condenser the settings ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CondenserSettings {
    /// `false` when disabled or `no_op`; `None` when the file does not say.
    pub enabled: Option<bool>,
    /// `max_size`, when set.
    pub max_size: Option<u64>,
    /// `keep_first`, when set.
    pub keep_first: Option<u64>,
    /// `max_tokens`, when set.
    pub max_tokens: Option<u64>,
}

/// A setting `openhands config` shows and sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// `agent_settings.llm.model`
    Model,
    /// `agent_settings.llm.api_key`
    ApiKey,
    /// `agent_settings.llm.base_url`
    BaseUrl,
    /// `agent_settings.llm.stream`
    Stream,
    /// `agent_settings.tools`
    Tools,
    /// `conversation_settings.confirmation_mode` + `security_analyzer`
    Confirm,
    /// `conversation_settings.max_iterations`
    MaxIterations,
    /// `agent_settings.condenser.enabled` / `condenser_kind`
    Condenser,
    /// `agent_settings.condenser.max_size`
    CondenserMaxSize,
}

impl Setting {
    /// Every key, in display order.
    pub const ALL: [Setting; 9] = [
        Setting::Model,
        Setting::ApiKey,
        Setting::BaseUrl,
        Setting::Stream,
        Setting::Tools,
        Setting::Confirm,
        Setting::MaxIterations,
        Setting::Condenser,
        Setting::CondenserMaxSize,
    ];

    /// The short name users type.
    pub fn name(self) -> &'static str {
        match self {
            Setting::Model => "model",
            Setting::ApiKey => "api_key",
            Setting::BaseUrl => "base_url",
            Setting::Stream => "stream",
            Setting::Tools => "tools",
            Setting::Confirm => "confirm",
            Setting::MaxIterations => "max_iterations",
            Setting::Condenser => "condenser",
            Setting::CondenserMaxSize => "condenser_max_size",
        }
    }

    /// Where the value lives in the file.
    pub fn location(self) -> &'static str {
        match self {
            Setting::Model => "agent_settings.llm.model",
            Setting::ApiKey => "agent_settings.llm.api_key",
            Setting::BaseUrl => "agent_settings.llm.base_url",
            Setting::Stream => "agent_settings.llm.stream",
            Setting::Tools => "agent_settings.tools",
            Setting::Confirm => {
                "conversation_settings.confirmation_mode + conversation_settings.security_analyzer"
            }
            Setting::MaxIterations => "conversation_settings.max_iterations",
            Setting::Condenser => "agent_settings.condenser.enabled",
            Setting::CondenserMaxSize => "agent_settings.condenser.max_size",
        }
    }

    /// The key for a name: the short name or its location in the file.
    pub fn parse(name: &str) -> Option<Setting> {
        let name = name.trim();
        Setting::ALL.into_iter().find(|k| {
            k.name().eq_ignore_ascii_case(name)
                || k.name().replace('_', "-").eq_ignore_ascii_case(name)
                || (k.location().eq_ignore_ascii_case(name) && !k.location().contains(' '))
                || k.location()
                    .strip_prefix("agent_settings.")
                    .is_some_and(|l| l.eq_ignore_ascii_case(name))
        })
    }

    /// The names, for messages.
    pub fn names() -> String {
        Setting::ALL.map(Setting::name).join(", ")
    }
}

/// The key of secrets at rest, exactly as the agent server derives it from
/// its configuration (`OH_SECRET_KEY`, its fallbacks, and the
/// `OH_PREVIOUS_SECRET_KEYS` that still open older tokens), so that after
/// a key rotation both read the same `settings.json`.
pub fn cipher_from_env() -> anyhow::Result<Option<Cipher>> {
    let loaded = openhands_agent_server::Config::load().map_err(|e| {
        usage(format!(
            "the agent server configuration, which holds the settings key, is invalid: {e}"
        ))
    })?;
    Ok(openhands_agent_server::service::profiles::cipher_of(
        &loaded.config,
    ))
}

fn bad(path: &Path, key: &str, what: &str) -> anyhow::Error {
    usage(format!(
        "{}: `{key}` {what} (fix it with `openhands config set` or edit the file)",
        path.display()
    ))
}

impl Settings {
    /// Empty settings that would be saved at `path`.
    #[cfg(test)]
    pub fn empty(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            raw: Map::new(),
        }
    }

    /// The shared settings file of the directory holding `path`.
    fn file(path: &Path) -> SettingsFile {
        SettingsFile::new(path.parent().unwrap_or(Path::new(".")))
    }

    fn unreadable(path: &Path, e: impl std::fmt::Display) -> anyhow::Error {
        usage(format!(
            "cannot read the settings file {}: {e}; fix or remove it",
            path.display()
        ))
    }

    /// Reads the file; a missing file gives empty settings, a broken one an
    /// error that names it.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let raw = Self::file(path)
            .read()
            .map_err(|e| Self::unreadable(path, e))?
            .unwrap_or_default();
        Ok(Self {
            path: path.to_path_buf(),
            raw,
        })
    }

    /// Read-modify-write of the file at `path` under the settings lock
    /// (shared with the agent server): `f` changes the settings read now
    /// (nothing is written when it fails); secrets sealed with a previous
    /// key are re-sealed with `cipher`'s current one. Returns the settings
    /// as written.
    pub fn edit(
        path: &Path,
        cipher: Option<&Cipher>,
        f: impl FnOnce(&mut Settings) -> anyhow::Result<()>,
    ) -> anyhow::Result<Self> {
        Self::file(path)
            .try_update(|raw| {
                let mut settings = Settings {
                    path: path.to_path_buf(),
                    raw: std::mem::take(raw),
                };
                f(&mut settings)?;
                if let Some(cipher) = cipher
                    && let Some(Value::Object(agent)) = settings.raw.get_mut("agent_settings")
                {
                    secrets::reseal_all(agent, cipher);
                }
                raw.clone_from(&settings.raw);
                Ok(settings)
            })
            .map_err(|e| {
                usage(format!(
                    "cannot update the settings file {}: {e}",
                    path.display()
                ))
            })?
    }

    /// Where the settings live.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The stored JSON object.
    #[cfg(test)]
    pub fn raw(&self) -> &Map<String, Value> {
        &self.raw
    }

    fn get(&self, path: &[&str]) -> Option<&Value> {
        let (first, rest) = path.split_first()?;
        let mut cur = self.raw.get(*first)?;
        for p in rest {
            cur = cur.as_object()?.get(*p)?;
        }
        Some(cur).filter(|v| !v.is_null())
    }

    fn set(&mut self, path: &[&str], value: Value) {
        let Some((last, parents)) = path.split_last() else {
            return;
        };
        if !self.raw.contains_key("schema_version") {
            self.raw
                .insert("schema_version".into(), json!(PERSISTED_SCHEMA_VERSION));
        }
        if let Some(section) = parents.first()
            && !matches!(self.raw.get(*section), Some(Value::Object(_)))
        {
            let fresh = match *section {
                "agent_settings" => {
                    json!({"schema_version": AGENT_SCHEMA_VERSION, "agent_kind": "openhands"})
                }
                _ => json!({"schema_version": CONVERSATION_SCHEMA_VERSION}),
            };
            self.raw.insert(section.to_string(), fresh);
        }
        let mut cur = &mut self.raw;
        for p in parents {
            let e = cur
                .entry(p.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if !e.is_object() {
                *e = Value::Object(Map::new());
            }
            let Value::Object(m) = e else {
                return;
            };
            cur = m;
        }
        cur.insert(last.to_string(), value);
    }

    fn remove(&mut self, path: &[&str]) {
        let Some((last, parents)) = path.split_last() else {
            return;
        };
        let mut cur = &mut self.raw;
        for p in parents {
            cur = match cur.get_mut(*p) {
                Some(Value::Object(m)) => m,
                _ => return,
            };
        }
        cur.remove(*last);
    }

    fn str_at(&self, path: &[&str]) -> anyhow::Result<Option<String>> {
        match self.get(path) {
            None => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(bad(&self.path, &path.join("."), "must be a string")),
        }
    }

    /// `agent_settings.llm.model`.
    pub fn model(&self) -> anyhow::Result<Option<String>> {
        self.str_at(&["agent_settings", "llm", "model"])
    }

    /// `agent_settings.llm.base_url`.
    pub fn base_url(&self) -> anyhow::Result<Option<String>> {
        self.str_at(&["agent_settings", "llm", "base_url"])
    }

    /// `agent_settings.llm.api_key` in clear: decrypted with `cipher` when it
    /// is a Fernet token; an error when it cannot be.
    pub fn api_key(&self, cipher: Option<&Cipher>) -> anyhow::Result<Option<String>> {
        let Some(stored) = self.str_at(&["agent_settings", "llm", "api_key"])? else {
            return Ok(None);
        };
        if looks_encrypted(&stored) {
            return match cipher.and_then(|c| c.decrypt(&stored)) {
                Some(clear) => Ok(Some(clear)),
                None => Err(usage(format!(
                    "the API key in {} is encrypted and OH_SECRET_KEY does not open it: set \
                     OH_SECRET_KEY to the key that encrypted it, or store a new key with \
                     `openhands config set api_key ...`",
                    self.path.display()
                ))),
            };
        }
        Ok(llm_json::reveal(&stored, None))
    }

    /// The LLM configuration of the file with `model`: every stored field
    /// (temperature, reasoning effort, ...) applies; secrets are left out
    /// (see [`Settings::api_key`]).
    pub fn llm_config(&self, model: &str) -> anyhow::Result<LlmConfig> {
        let mut stored = match self.get(&["agent_settings", "llm"]) {
            None => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => {
                return Err(bad(&self.path, "agent_settings.llm", "must be an object"));
            }
        };
        for key in llm_json::SECRET_FIELDS {
            stored.remove(key);
        }
        stored.insert("model".into(), Value::String(model.to_string()));
        llm_json::parse_persisted(stored, None).map_err(|e| {
            usage(format!(
                "{}: `agent_settings.llm` is not a valid LLM configuration: {e}",
                self.path.display()
            ))
        })
    }

    /// `agent_settings.llm.stream`.
    pub fn stream(&self) -> anyhow::Result<Option<bool>> {
        match self.get(&["agent_settings", "llm", "stream"]) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(bad(
                &self.path,
                "agent_settings.llm.stream",
                "must be true or false",
            )),
        }
    }

    /// `agent_settings.tools`: `None` for the default tools.
    pub fn tools(&self) -> anyhow::Result<Option<Vec<ToolSpec>>> {
        let Some(value) = self.get(&["agent_settings", "tools"]) else {
            return Ok(None);
        };
        let specs: Vec<ToolSpec> = serde_json::from_value(value.clone()).map_err(|_| {
            bad(
                &self.path,
                "agent_settings.tools",
                "must be a list of {\"name\": ..., \"params\": {...}}",
            )
        })?;
        let names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
        let origin = format!("{} (agent_settings.tools)", self.path.display());
        let canonical =
            crate::tool_names::specs_for(&names, &origin).map_err(anyhow::Error::new)?;
        // Keep each tool's parameters under its registered name.
        Ok(Some(
            canonical
                .into_iter()
                .map(|c| {
                    let params = specs
                        .iter()
                        .find(|s| crate::tool_names::canonical(&s.name) == Some(c.name.as_str()))
                        .map(|s| s.params.clone())
                        .unwrap_or_default();
                    ToolSpec {
                        name: c.name,
                        params,
                    }
                })
                .collect(),
        ))
    }

    /// The confirmation mode of `conversation_settings`.
    pub fn confirm(&self) -> anyhow::Result<Option<ConfirmMode>> {
        let mode = match self.get(&["conversation_settings", "confirmation_mode"]) {
            None => return Ok(None),
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(bad(
                    &self.path,
                    "conversation_settings.confirmation_mode",
                    "must be true or false",
                ));
            }
        };
        // The reference's default analyzer is "llm".
        let analyzer = match self
            .raw
            .get("conversation_settings")
            .and_then(|c| c.get("security_analyzer"))
        {
            None => Some("llm".to_string()),
            Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                return Err(bad(
                    &self.path,
                    "conversation_settings.security_analyzer",
                    "must be \"llm\", \"none\" or null",
                ));
            }
        };
        Ok(Some(ConfirmMode::from_settings(mode, analyzer.as_deref())))
    }

    fn positive(&self, path: &[&str], min: u64) -> anyhow::Result<Option<u64>> {
        match self.get(path) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if n >= min => Ok(Some(n)),
                _ => Err(bad(
                    &self.path,
                    &path.join("."),
                    &format!("must be a whole number of at least {min}"),
                )),
            },
        }
    }

    /// `conversation_settings.max_iterations`.
    pub fn max_iterations(&self) -> anyhow::Result<Option<u32>> {
        Ok(self
            .positive(&["conversation_settings", "max_iterations"], 1)?
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX)))
    }

    /// `agent_settings.condenser`.
    pub fn condenser(&self) -> anyhow::Result<CondenserSettings> {
        let kind = self.str_at(&["agent_settings", "condenser", "condenser_kind"])?;
        let enabled = match self.get(&["agent_settings", "condenser", "enabled"]) {
            None => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => {
                return Err(bad(
                    &self.path,
                    "agent_settings.condenser.enabled",
                    "must be true or false",
                ));
            }
        };
        let enabled = match kind.as_deref() {
            None | Some("llm_summarizing") => enabled,
            Some("no_op") => Some(false),
            Some(other) => {
                return Err(bad(
                    &self.path,
                    "agent_settings.condenser.condenser_kind",
                    &format!("is '{other}'; use \"llm_summarizing\" or \"no_op\""),
                ));
            }
        };
        Ok(CondenserSettings {
            enabled,
            max_size: self.positive(&["agent_settings", "condenser", "max_size"], 20)?,
            keep_first: self.positive(&["agent_settings", "condenser", "keep_first"], 0)?,
            max_tokens: self.positive(&["agent_settings", "condenser", "max_tokens"], 1)?,
        })
    }

    /// `agent_settings.agent_context` (inline skills, message suffixes).
    pub fn agent_context(&self) -> Option<Value> {
        self.get(&["agent_settings", "agent_context"]).cloned()
    }

    /// Whether `agent_settings.agent_kind` is `"acp"` (an ACP agent).
    pub fn is_acp(&self) -> bool {
        self.get(&["agent_settings", "agent_kind"])
            .and_then(Value::as_str)
            == Some("acp")
    }

    /// The `agent_settings` object, when there is one.
    pub fn agent_settings(&self) -> Option<&Map<String, Value>> {
        self.get(&["agent_settings"]).and_then(Value::as_object)
    }

    /// `agent_settings.persona`.
    pub fn persona(&self) -> anyhow::Result<Option<String>> {
        self.str_at(&["agent_settings", "persona"])
    }

    /// `agent_settings.verification` (the critic and refinement settings).
    pub fn verification(&self) -> anyhow::Result<Option<&Map<String, Value>>> {
        match self.get(&["agent_settings", "verification"]) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(_) => Err(bad(
                &self.path,
                "agent_settings.verification",
                "must be an object",
            )),
        }
    }

    /// The `route_task_to_model` tool spec when
    /// `agent_settings.enable_classify_and_switch_llm_tool` is true,
    /// configured by `active_meta_profile`, `meta_profile` and
    /// `meta_profile_llms` (checked; an error names the setting).
    pub fn routing_tool(&self) -> anyhow::Result<Option<ToolSpec>> {
        match self.get(&["agent_settings", "enable_classify_and_switch_llm_tool"]) {
            None | Some(Value::Null) | Some(Value::Bool(false)) => return Ok(None),
            Some(Value::Bool(true)) => {}
            Some(_) => {
                return Err(bad(
                    &self.path,
                    "agent_settings.enable_classify_and_switch_llm_tool",
                    "must be true or false",
                ));
            }
        }
        let mut params = Map::new();
        for key in openhands_sdk::route_task::PARAMS {
            if let Some(v) = self.get(&["agent_settings", key]).filter(|v| !v.is_null()) {
                params.insert(key.to_string(), v.clone());
            }
        }
        if let Err(e) = openhands_sdk::route_task::RouteParams::from_params(&params) {
            return Err(usage(format!(
                "{}: agent_settings.{e} (fix it with `openhands config set` or edit the file)",
                self.path.display()
            )));
        }
        let mut tool = ToolSpec::named(openhands_sdk::route_task::CLASS);
        tool.params = params;
        Ok(Some(tool))
    }

    /// `agent_settings.tool_concurrency_limit`.
    pub fn tool_concurrency_limit(&self) -> anyhow::Result<Option<usize>> {
        Ok(self
            .positive(&["agent_settings", "tool_concurrency_limit"], 1)?
            .map(|n| usize::try_from(n).unwrap_or(1)))
    }

    /// `agent_settings.mcp_config` when it is set.
    pub fn mcp_config(&self) -> Option<&Value> {
        self.get(&["agent_settings", "mcp_config"])
            .filter(|v| !v.is_null())
    }

    /// Names of the MCP servers in `agent_settings.mcp_config`.
    pub fn mcp_servers(&self) -> Vec<String> {
        self.get(&["agent_settings", "mcp_config"])
            .and_then(Value::as_object)
            .map(|m| {
                // Both the flat form and the `mcpServers` wrapper occur.
                match m.get("mcpServers").and_then(Value::as_object) {
                    Some(inner) => inner.keys().cloned().collect(),
                    None => m.keys().cloned().collect(),
                }
            })
            .unwrap_or_default()
    }

    /// The agent context's switches that ask for skills to be loaded from
    /// the user's folder, the public repository or the project.
    pub fn skill_loading(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        for key in [
            "load_user_skills",
            "load_public_skills",
            "load_project_skills",
        ] {
            if self.get(&["agent_settings", "agent_context", key]) == Some(&Value::Bool(true)) {
                out.push(key);
            }
        }
        out
    }

    /// Settings in the file that ask for something this command cannot do
    /// yet (each a sentence naming the setting). MCP servers and skill
    /// loading are checked by the callers, which know the flags.
    pub fn unsupported(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(kind) = self
            .get(&["agent_settings", "agent_kind"])
            .and_then(Value::as_str)
            && !matches!(kind, "openhands" | "llm" | "acp")
        {
            out.push(format!(
                "agent_settings.agent_kind is '{kind}'; use \"openhands\" or \"acp\""
            ));
        }
        if let Some(agent) = self
            .get(&["agent_settings", "agent"])
            .and_then(Value::as_str)
            && agent != "CodeActAgent"
        {
            out.push(format!(
                "agent_settings.agent is '{agent}'; only \"CodeActAgent\" is supported"
            ));
        }
        if let Some(rt) = self
            .get(&["conversation_settings", "default_runtime"])
            .and_then(Value::as_str)
            && rt != "local"
        {
            out.push(format!(
                "conversation_settings.default_runtime is '{rt}'; the command line runs the agent locally only"
            ));
        }
        out
    }

    // ----- `openhands config` --------------------------------------------------

    /// The stored value of `key` for display (the API key masked).
    pub fn display(&self, key: Setting) -> anyhow::Result<Option<String>> {
        Ok(match key {
            Setting::Model => self.model()?,
            Setting::ApiKey => self
                .str_at(&["agent_settings", "llm", "api_key"])?
                .map(|k| mask(&k)),
            Setting::BaseUrl => self.base_url()?,
            Setting::Stream => self.stream()?.map(|b| b.to_string()),
            Setting::Tools => self.tools()?.map(|t| {
                t.iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            }),
            Setting::Confirm => self.confirm()?.map(|m| m.as_str().to_string()),
            Setting::MaxIterations => self.max_iterations()?.map(|n| n.to_string()),
            Setting::Condenser => self
                .condenser()?
                .enabled
                .map(|on| if on { "llm" } else { "none" }.to_string()),
            Setting::CondenserMaxSize => self.condenser()?.max_size.map(|n| n.to_string()),
        })
    }

    /// Sets `key` from the text a user typed, validating it.
    pub fn set_key(
        &mut self,
        key: Setting,
        text: &str,
        cipher: Option<&Cipher>,
    ) -> anyhow::Result<()> {
        let text = text.trim();
        let invalid = |what: &str| usage(format!("invalid value for {}: {what}", key.name()));
        match key {
            Setting::Model | Setting::BaseUrl => {
                if text.is_empty() {
                    return Err(invalid("empty (use `openhands config unset` to remove it)"));
                }
                let field = if key == Setting::Model {
                    "model"
                } else {
                    "base_url"
                };
                self.set(&["agent_settings", "llm", field], json!(text));
            }
            Setting::ApiKey => {
                if text.is_empty() {
                    return Err(invalid(
                        "empty (use `openhands config unset api_key` to remove it)",
                    ));
                }
                let stored = match cipher {
                    Some(c) => c.encrypt(text),
                    None => text.to_string(),
                };
                self.set(&["agent_settings", "llm", "api_key"], json!(stored));
            }
            Setting::Stream => {
                let b = parse_bool(text).ok_or_else(|| invalid("use true or false"))?;
                self.set(&["agent_settings", "llm", "stream"], json!(b));
            }
            Setting::Tools => {
                let names: Vec<String> = text.split(',').map(str::to_string).collect();
                let specs = crate::tool_names::specs_for(&names, "the tools setting")
                    .map_err(anyhow::Error::new)?;
                let list: Vec<Value> = specs
                    .iter()
                    .map(|s| json!({"name": s.name, "params": {}}))
                    .collect();
                self.set(&["agent_settings", "tools"], Value::Array(list));
            }
            Setting::Confirm => {
                let mode = ConfirmMode::parse(text)
                    .ok_or_else(|| invalid("use never, risky or always"))?;
                let (on, analyzer) = mode.to_settings();
                self.set(&["conversation_settings", "confirmation_mode"], json!(on));
                self.set(
                    &["conversation_settings", "security_analyzer"],
                    json!(analyzer),
                );
            }
            Setting::MaxIterations => {
                let n: u32 = text
                    .parse()
                    .ok()
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| invalid("use a whole number of at least 1"))?;
                self.set(&["conversation_settings", "max_iterations"], json!(n));
            }
            Setting::Condenser => {
                let on = match text.to_ascii_lowercase().as_str() {
                    "llm" | "llm_summarizing" | "on" | "true" => true,
                    "none" | "off" | "false" | "no_op" => false,
                    _ => return Err(invalid("use llm or none")),
                };
                self.set(
                    &["agent_settings", "condenser", "condenser_kind"],
                    json!("llm_summarizing"),
                );
                self.set(&["agent_settings", "condenser", "enabled"], json!(on));
            }
            Setting::CondenserMaxSize => {
                let n: u64 = text
                    .parse()
                    .ok()
                    .filter(|n| *n >= 20)
                    .ok_or_else(|| invalid("use a whole number of at least 20"))?;
                self.set(&["agent_settings", "condenser", "max_size"], json!(n));
            }
        }
        Ok(())
    }

    /// Removes `key` from the file (its default applies again).
    pub fn unset_key(&mut self, key: Setting) {
        match key {
            Setting::Model => self.remove(&["agent_settings", "llm", "model"]),
            Setting::ApiKey => self.remove(&["agent_settings", "llm", "api_key"]),
            Setting::BaseUrl => self.remove(&["agent_settings", "llm", "base_url"]),
            Setting::Stream => self.remove(&["agent_settings", "llm", "stream"]),
            Setting::Tools => self.remove(&["agent_settings", "tools"]),
            Setting::Confirm => {
                self.remove(&["conversation_settings", "confirmation_mode"]);
                self.remove(&["conversation_settings", "security_analyzer"]);
            }
            Setting::MaxIterations => self.remove(&["conversation_settings", "max_iterations"]),
            Setting::Condenser => {
                self.remove(&["agent_settings", "condenser", "enabled"]);
                self.remove(&["agent_settings", "condenser", "condenser_kind"]);
            }
            Setting::CondenserMaxSize => self.remove(&["agent_settings", "condenser", "max_size"]),
        }
    }
}

fn parse_bool(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

/// A secret shown as its first and last characters.
pub fn mask(secret: &str) -> String {
    if looks_encrypted(secret) {
        return "(encrypted)".into();
    }
    let n = secret.chars().count();
    if n <= 8 {
        return "****".into();
    }
    let head: String = secret.chars().take(3).collect();
    let tail: String = secret.chars().skip(n - 2).collect();
    format!("{head}…{tail}")
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
