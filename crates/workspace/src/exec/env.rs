//! The environment policy: what every process started for the agent gets
//! as its environment.
//!
//! The rules are the reference's `sanitized_env` and `build_terminal_env`:
//! the server's credentials are removed (`SESSION_API_KEY`, `OH_SECRET_KEY`,
//! `LMNR_PROJECT_API_KEY`, the OpenTelemetry header variables and every
//! `OH_SESSION_API_KEYS_*`), `AI_AGENT` defaults to `openhands`, and
//! `LD_LIBRARY_PATH` is restored from `LD_LIBRARY_PATH_ORIG` (set by
//! bundlers that rewrite it). Client-provided variables are validated and
//! the result is sanitized again, so they cannot re-inject a credential.
//!
//! A [`ChildEnv`] is the finished environment; [`ChildEnv::apply`] clears a
//! command's inherited environment and sets exactly these variables.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;

/// Variables the reference never passes to a process it starts for the agent.
pub const STRIPPED_NAMES: &[&str] = &[
    "SESSION_API_KEY",
    "OH_SECRET_KEY",
    "LMNR_PROJECT_API_KEY",
    "OTEL_HEADERS",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
];

/// Prefixes of variables never passed on (indexed session keys).
pub const STRIPPED_PREFIXES: &[&str] = &["OH_SESSION_API_KEYS_"];

/// Variable set to [`AI_AGENT_VALUE`] when unset or blank.
pub const AI_AGENT: &str = "AI_AGENT";
/// Default value of [`AI_AGENT`].
pub const AI_AGENT_VALUE: &str = "openhands";

const LD_LIBRARY_PATH: &str = "LD_LIBRARY_PATH";
const LD_LIBRARY_PATH_ORIG: &str = "LD_LIBRARY_PATH_ORIG";

/// Why an environment could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    /// A variable name that a shell cannot use.
    #[error(
        "invalid environment variable name {0:?}: names consist of ASCII letters, digits and `_` and do not start with a digit"
    )]
    InvalidName(String),
    /// A variable the environment policy removes (a credential).
    #[error("the environment variable {0} is withheld from the agent by the environment policy")]
    Withheld(String),
}

/// Whether `name` matches `^[A-Za-z_][A-Za-z0-9_]*$`.
pub fn is_valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Which variables are withheld from processes started for the agent.
///
/// [`EnvPolicy::default`] is exactly the reference's rules; callers may
/// withhold more names or prefixes, never fewer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct EnvPolicy {
    extra_names: BTreeSet<String>,
    extra_prefixes: BTreeSet<String>,
}

impl EnvPolicy {
    /// The reference's rules.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also withholds the variable `name`.
    pub fn strip_name(mut self, name: impl Into<String>) -> Self {
        self.extra_names.insert(name.into());
        self
    }

    /// Also withholds every variable whose name starts with `prefix`.
    pub fn strip_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.extra_prefixes.insert(prefix.into());
        self
    }

    /// Whether the variable `name` is withheld.
    pub fn strips(&self, name: &str) -> bool {
        STRIPPED_NAMES.contains(&name)
            || STRIPPED_PREFIXES.iter().any(|p| name.starts_with(p))
            || self.extra_names.contains(name)
            || self.extra_prefixes.iter().any(|p| name.starts_with(p))
    }

    /// The reference's `sanitized_env(env)`: withheld variables removed,
    /// `AI_AGENT` defaulted, `LD_LIBRARY_PATH` restored from
    /// `LD_LIBRARY_PATH_ORIG` (removed when that is empty).
    pub fn sanitize(&self, mut env: BTreeMap<String, String>) -> BTreeMap<String, String> {
        env.retain(|name, _| !self.strips(name));
        if env.get(AI_AGENT).is_none_or(|v| v.trim().is_empty()) {
            env.insert(AI_AGENT.into(), AI_AGENT_VALUE.into());
        }
        if let Some(orig) = env.get(LD_LIBRARY_PATH_ORIG).cloned() {
            if orig.is_empty() {
                env.remove(LD_LIBRARY_PATH);
            } else {
                env.insert(LD_LIBRARY_PATH.into(), orig);
            }
        }
        env
    }

    /// The environment for a process started for the agent: this process's
    /// environment, sanitized. Variables whose name or value is not UTF-8
    /// are left out.
    pub fn child_env(&self) -> ChildEnv {
        self.child_env_from(process_env())
    }

    /// [`EnvPolicy::child_env`] plus client-provided `extra` variables (the
    /// reference's `build_terminal_env`): names are validated, and the
    /// result is sanitized again, so an extra variable cannot re-inject a
    /// withheld one.
    pub fn child_env_with<I, K, V>(&self, extra: I) -> Result<ChildEnv, EnvError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.child_env_from_with(process_env(), extra)
    }

    /// [`EnvPolicy::child_env`] with `base` in place of this process's
    /// environment.
    pub fn child_env_from(&self, base: BTreeMap<String, String>) -> ChildEnv {
        ChildEnv {
            vars: self.sanitize(base),
            policy: self.clone(),
        }
    }

    /// [`EnvPolicy::child_env_with`] with `base` in place of this process's
    /// environment.
    pub fn child_env_from_with<I, K, V>(
        &self,
        base: BTreeMap<String, String>,
        extra: I,
    ) -> Result<ChildEnv, EnvError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let mut vars = self.sanitize(base);
        let mut any = false;
        for (name, value) in extra {
            let name = name.into();
            if !is_valid_name(&name) {
                return Err(EnvError::InvalidName(name));
            }
            vars.insert(name, value.into());
            any = true;
        }
        if any {
            vars = self.sanitize(vars);
        }
        Ok(ChildEnv {
            vars,
            policy: self.clone(),
        })
    }
}

/// This process's environment (UTF-8 entries only).
///
/// With [`host_var`] and [`host_var_os`], the one place outside configuration
/// modules where the product reads its own environment (the house rule
/// `disallowed-methods` in `clippy.toml` keeps `std::env::var*` here).
#[allow(
    clippy::disallowed_methods,
    reason = "exec::env owns reading the process environment"
)]
pub fn process_env() -> BTreeMap<String, String> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

/// One variable of this process's environment; `None` when unset or not
/// UTF-8.
#[allow(
    clippy::disallowed_methods,
    reason = "exec::env owns reading the process environment"
)]
pub fn host_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// One variable of this process's environment, as the OS gave it.
#[allow(
    clippy::disallowed_methods,
    reason = "exec::env owns reading the process environment"
)]
pub fn host_var_os(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name)
}

/// A finished environment for one child process, built by an
/// [`EnvPolicy`]. Changing it keeps the policy: a withheld variable cannot
/// be set.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ChildEnv {
    vars: BTreeMap<String, String>,
    policy: EnvPolicy,
}

impl std::fmt::Debug for ChildEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Values may be private to the user: names only.
        f.debug_struct("ChildEnv")
            .field("names", &self.vars.keys().collect::<Vec<_>>())
            .field("policy", &self.policy)
            .finish()
    }
}

impl ChildEnv {
    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// All variables, sorted by name.
    pub fn vars(&self) -> &BTreeMap<String, String> {
        &self.vars
    }

    /// The policy that built this environment.
    pub fn policy(&self) -> &EnvPolicy {
        &self.policy
    }

    /// Sets `name` (validated; a withheld name is refused).
    pub fn set(&mut self, name: &str, value: impl Into<String>) -> Result<(), EnvError> {
        if !is_valid_name(name) {
            return Err(EnvError::InvalidName(name.to_string()));
        }
        if self.policy.strips(name) {
            return Err(EnvError::Withheld(name.to_string()));
        }
        self.vars.insert(name.to_string(), value.into());
        if name == AI_AGENT || name == LD_LIBRARY_PATH_ORIG {
            self.vars = self.policy.sanitize(std::mem::take(&mut self.vars));
        }
        Ok(())
    }

    /// Sets `name` unless it is already set.
    pub fn set_default(&mut self, name: &str, value: impl Into<String>) -> Result<(), EnvError> {
        if self.vars.contains_key(name) {
            return Ok(());
        }
        self.set(name, value)
    }

    /// Removes `name`.
    pub fn remove(&mut self, name: &str) {
        self.vars.remove(name);
        if name == AI_AGENT {
            self.vars = self.policy.sanitize(std::mem::take(&mut self.vars));
        }
    }

    /// Clears the environment `target` would inherit and sets exactly
    /// these variables.
    pub fn apply(&self, target: &mut impl EnvTarget) {
        target.clear_env();
        for (name, value) in &self.vars {
            target.set_env(OsStr::new(name), OsStr::new(value));
        }
    }
}

/// A command whose environment a [`ChildEnv`] can replace.
pub trait EnvTarget {
    /// Removes every inherited and explicitly set variable.
    fn clear_env(&mut self);
    /// Sets one variable.
    fn set_env(&mut self, name: &OsStr, value: &OsStr);
}

impl EnvTarget for tokio::process::Command {
    fn clear_env(&mut self) {
        self.env_clear();
    }
    fn set_env(&mut self, name: &OsStr, value: &OsStr) {
        self.env(name, value);
    }
}

impl EnvTarget for std::process::Command {
    fn clear_env(&mut self) {
        self.env_clear();
    }
    fn set_env(&mut self, name: &OsStr, value: &OsStr) {
        self.env(name, value);
    }
}

#[cfg(test)]
#[path = "env_tests.rs"]
mod tests;
