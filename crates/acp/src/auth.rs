//! Choosing an `authenticate` method among the `authMethods` a server
//! offers in `initialize`, as the reference does: file-backed logins first
//! when their credential file is present (`chat-gpt`: a ChatGPT `auth.json`
//! under `CODEX_HOME` or `~/.codex`; `vertex-ai`: the file
//! `GOOGLE_APPLICATION_CREDENTIALS` names; `oauth-personal`:
//! `~/.gemini/oauth_creds.json`), then API keys (`api-key`: `CODEX_API_KEY`
//! or `OPENAI_API_KEY`; `gemini-api-key`: `GEMINI_API_KEY`). When none
//! fits, the server may still be signed in out of band (a seeded credential
//! file, its provider's key variable); otherwise the reason is kept so a
//! refused session can say what is missing.

use crate::config::FileSecretSpec;
use crate::providers::Provider;
use openhands_workspace::exec::ChildEnv;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// API-key methods and the variable that must be present for them.
const API_KEY_METHODS: [(&str, &str); 1] = [("gemini-api-key", "GEMINI_API_KEY")];
/// Variables the Codex adapter's `api-key` method reads, in order.
const CODEX_KEY_VARS: [&str; 2] = ["CODEX_API_KEY", "OPENAI_API_KEY"];

fn ids(methods: &[Value]) -> Vec<&str> {
    methods
        .iter()
        .filter_map(|m| m.get("id").and_then(Value::as_str))
        .collect()
}

fn set(env: &ChildEnv, name: &str) -> bool {
    env.get(name).is_some_and(|v| !v.is_empty())
}

/// Where Codex keeps its login: `$CODEX_HOME/auth.json`, else
/// `<home>/.codex/auth.json`.
pub fn codex_auth_file(env: &ChildEnv, home: Option<&Path>) -> Option<PathBuf> {
    match env.get("CODEX_HOME").filter(|h| !h.is_empty()) {
        Some(h) => Some(Path::new(h).join("auth.json")),
        None => home.map(|h| h.join(".codex").join("auth.json")),
    }
}

/// Whether `text` is a ChatGPT-mode Codex `auth.json` (a refresh token).
pub fn is_valid_codex_auth(text: &str) -> bool {
    let Ok(Value::Object(v)) = serde_json::from_str::<Value>(text) else {
        return false;
    };
    if !matches!(v.get("auth_mode"), None | Some(Value::Null))
        && v.get("auth_mode").and_then(Value::as_str) != Some("chatgpt")
    {
        return false;
    }
    v.get("tokens")
        .and_then(|t| t.get("refresh_token"))
        .and_then(Value::as_str)
        .is_some_and(|t| !t.is_empty())
}

fn codex_login_present(env: &ChildEnv, home: Option<&Path>) -> bool {
    codex_auth_file(env, home)
        .and_then(|p| std::fs::read_to_string(p).ok())
        .is_some_and(|t| is_valid_codex_auth(&t))
}

/// The method to authenticate with, or `None` when no credential for any
/// offered method is present. `home`: the server's home directory.
pub fn select_method(methods: &[Value], env: &ChildEnv, home: Option<&Path>) -> Option<String> {
    let ids = ids(methods);
    let offered = |id: &str| ids.contains(&id);
    if offered("chat-gpt") && codex_login_present(env, home) {
        return Some("chat-gpt".into());
    }
    if offered("vertex-ai")
        && env
            .get("GOOGLE_APPLICATION_CREDENTIALS")
            .is_some_and(|p| !p.is_empty() && Path::new(p).is_file())
    {
        return Some("vertex-ai".into());
    }
    if offered("oauth-personal")
        && home.is_some_and(|h| h.join(".gemini").join("oauth_creds.json").is_file())
    {
        return Some("oauth-personal".into());
    }
    if offered("api-key") && CODEX_KEY_VARS.iter().any(|v| set(env, v)) {
        return Some("api-key".into());
    }
    API_KEY_METHODS
        .iter()
        .find(|(id, var)| offered(id) && env.get(var).is_some())
        .map(|(id, _)| id.to_string())
}

/// Why no method could be chosen, as the reference words it.
pub fn failure_reason(
    methods: &[Value],
    env: &ChildEnv,
    home: Option<&Path>,
    provider: Option<&Provider>,
) -> String {
    let ids = ids(methods);
    let mut reasons = Vec::new();
    if ids.contains(&"chat-gpt") {
        match codex_auth_file(env, home) {
            Some(p) if p.is_file() => reasons.push(format!(
                "Codex auth file {} is not valid ChatGPT auth",
                p.display()
            )),
            Some(p) => reasons.push(format!("Codex auth file {} is missing", p.display())),
            None => reasons.push("Codex auth file is missing".into()),
        }
    }
    if ids.contains(&"api-key") && !CODEX_KEY_VARS.iter().any(|v| set(env, v)) {
        reasons.push("CODEX_API_KEY and OPENAI_API_KEY are unset".into());
    }
    if let Some(var) = provider.and_then(|p| p.api_key_env_var)
        && !set(env, var)
    {
        reasons.push(format!("{var} is unset"));
    }
    let mut terminal: Vec<&str> = methods
        .iter()
        .filter(|m| m.get("type").and_then(Value::as_str) == Some("terminal"))
        .filter_map(|m| m.get("id").and_then(Value::as_str))
        .collect();
    terminal.sort_unstable();
    if !terminal.is_empty() {
        reasons.push(format!(
            "{} needs an interactive terminal, which the headless runtime cannot provide",
            terminal.join(", ")
        ));
    }
    if reasons.is_empty() {
        "no supported credential source is available".into()
    } else {
        reasons.join("; ")
    }
}

/// What authentication does with the methods a server offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Authenticate with this method.
    Method(String),
    /// No method fits, but these credentials are in place out of band.
    Configured(Vec<String>),
    /// No method fits and no credential is configured: why.
    Missing(String),
}

/// The [`Decision`] for `methods` (reads credential files: call it off the
/// async runtime). `home`: the server's home directory.
pub fn decide(
    methods: &[Value],
    env: &ChildEnv,
    home: Option<&Path>,
    provider: Option<&Provider>,
    specs: &[FileSecretSpec],
) -> Decision {
    if let Some(method) = select_method(methods, env, home) {
        return Decision::Method(method);
    }
    let configured = preconfigured(provider, specs, env);
    if !configured.is_empty() {
        return Decision::Configured(configured);
    }
    Decision::Missing(failure_reason(methods, env, home, provider))
}

/// Credentials already in place although no method fits: credential files
/// the specs' variables locate (a Codex file must be valid ChatGPT auth)
/// and the provider's API-key variable, named as supplied.
pub fn preconfigured(
    provider: Option<&Provider>,
    specs: &[FileSecretSpec],
    env: &ChildEnv,
) -> Vec<String> {
    let mut present = Vec::new();
    for spec in specs {
        let Some(location) = env.get(&spec.env_var).filter(|l| !l.is_empty()) else {
            continue;
        };
        let mut path = PathBuf::from(location);
        if spec.env_points_to_dir {
            path = path.join(&spec.filename);
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if spec.secret_name != "CODEX_AUTH_JSON" || is_valid_codex_auth(&text) {
            present.push(spec.secret_name.clone());
        }
    }
    if let Some(var) = provider.and_then(|p| p.api_key_env_var)
        && set(env, var)
    {
        present.push(var.to_string());
    }
    present
}

#[cfg(test)]
mod tests {
    use super::*;
    use openhands_workspace::exec::EnvPolicy;
    use serde_json::json;

    fn env(pairs: &[(&str, &str)]) -> ChildEnv {
        let mut e = EnvPolicy::default().child_env();
        for k in [
            "CODEX_HOME",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "OPENAI_API_KEY",
            "CODEX_API_KEY",
            "GEMINI_API_KEY",
        ] {
            e.remove(k);
        }
        for (k, v) in pairs {
            e.set(k, *v).unwrap();
        }
        e
    }

    fn methods(ids: &[&str]) -> Vec<Value> {
        ids.iter().map(|i| json!({"id": i, "name": i})).collect()
    }

    #[test]
    fn file_logins_win_over_api_keys() {
        let tmp = tempfile::tempdir().unwrap();
        let codex = tmp.path().join("codex");
        std::fs::create_dir_all(&codex).unwrap();
        std::fs::write(
            codex.join("auth.json"),
            r#"{"auth_mode": "chatgpt", "tokens": {"refresh_token": "r"}}"#,
        )
        .unwrap();
        let all = methods(&["chat-gpt", "api-key", "gemini-api-key"]);
        let e = env(&[
            ("CODEX_HOME", codex.to_str().unwrap()),
            ("OPENAI_API_KEY", "k"),
        ]);
        assert_eq!(select_method(&all, &e, None).as_deref(), Some("chat-gpt"));
        let e = env(&[("OPENAI_API_KEY", "k")]);
        assert_eq!(
            select_method(&all, &e, Some(tmp.path())).as_deref(),
            Some("api-key")
        );
        let e = env(&[("GEMINI_API_KEY", "")]);
        assert_eq!(
            select_method(&all, &e, Some(tmp.path())).as_deref(),
            Some("gemini-api-key"),
            "the reference only asks for the variable's presence"
        );
        let sa = tmp.path().join("sa.json");
        std::fs::write(&sa, "{}").unwrap();
        let e = env(&[
            ("GOOGLE_APPLICATION_CREDENTIALS", sa.to_str().unwrap()),
            ("GEMINI_API_KEY", "k"),
        ]);
        assert_eq!(
            select_method(&methods(&["gemini-api-key", "vertex-ai"]), &e, None).as_deref(),
            Some("vertex-ai")
        );
        let gemini_home = tmp.path().join("home");
        std::fs::create_dir_all(gemini_home.join(".gemini")).unwrap();
        std::fs::write(gemini_home.join(".gemini/oauth_creds.json"), "{}").unwrap();
        assert_eq!(
            select_method(&methods(&["oauth-personal"]), &env(&[]), Some(&gemini_home)).as_deref(),
            Some("oauth-personal")
        );
        assert_eq!(
            select_method(&methods(&["oauth-personal"]), &env(&[]), Some(tmp.path())),
            None
        );
    }

    #[test]
    fn no_fitting_method_names_what_is_missing() {
        let tmp = tempfile::tempdir().unwrap();
        let mut all = methods(&["chat-gpt", "api-key"]);
        all.push(json!({"id": "login", "name": "Login", "type": "terminal"}));
        let e = env(&[]);
        assert_eq!(select_method(&all, &e, Some(tmp.path())), None);
        let codex = crate::providers::by_key("codex");
        let reason = failure_reason(&all, &e, Some(tmp.path()), codex);
        assert!(reason.contains(".codex/auth.json is missing"), "{reason}");
        assert!(
            reason.contains("CODEX_API_KEY and OPENAI_API_KEY are unset"),
            "{reason}"
        );
        assert!(reason.contains("OPENAI_API_KEY is unset"), "{reason}");
        assert!(
            reason.contains("login needs an interactive terminal"),
            "{reason}"
        );
        std::fs::create_dir_all(tmp.path().join(".codex")).unwrap();
        std::fs::write(
            tmp.path().join(".codex/auth.json"),
            r#"{"auth_mode": "apikey"}"#,
        )
        .unwrap();
        let reason = failure_reason(&all, &e, Some(tmp.path()), None);
        assert!(reason.contains("is not valid ChatGPT auth"), "{reason}");
        assert_eq!(
            failure_reason(&methods(&["x"]), &e, None, None),
            "no supported credential source is available"
        );
    }

    #[test]
    fn preconfigured_credentials_are_files_and_provider_keys() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("config.toml"), "key = 1").unwrap();
        let specs: Vec<FileSecretSpec> = crate::providers::default_file_secrets()
            .map(FileSecretSpec::from)
            .collect();
        let e = env(&[
            ("KIMI_CODE_HOME", tmp.path().to_str().unwrap()),
            ("OPENAI_API_KEY", "k"),
        ]);
        assert_eq!(
            preconfigured(crate::providers::by_key("codex"), &specs, &e),
            ["KIMI_CODE_CONFIG_TOML", "OPENAI_API_KEY"]
        );
        assert!(preconfigured(None, &specs, &env(&[])).is_empty());
    }

    #[test]
    fn the_decision_is_a_method_then_configured_credentials_then_why_not() {
        let tmp = tempfile::tempdir().unwrap();
        let codex = crate::providers::by_key("codex");
        let specs: Vec<FileSecretSpec> = crate::providers::default_file_secrets()
            .map(FileSecretSpec::from)
            .collect();
        let offered = methods(&["chat-gpt"]);
        let keyed = env(&[("OPENAI_API_KEY", "k")]);
        assert_eq!(
            decide(
                &methods(&["api-key"]),
                &keyed,
                Some(tmp.path()),
                codex,
                &specs
            ),
            Decision::Method("api-key".into())
        );
        assert_eq!(
            decide(&offered, &keyed, Some(tmp.path()), codex, &specs),
            Decision::Configured(vec!["OPENAI_API_KEY".into()])
        );
        let Decision::Missing(reason) =
            decide(&offered, &env(&[]), Some(tmp.path()), codex, &specs)
        else {
            panic!("nothing is configured");
        };
        assert!(reason.contains("auth.json is missing"), "{reason}");
    }
}
