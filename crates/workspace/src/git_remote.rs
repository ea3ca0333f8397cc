//! Fetching a repository from outside at one ref: the project's one recipe
//! for sources it does not own (plugins, public skills, marketplaces).
//!
//! Every command runs hardened the same way: git never prompts, reads no
//! system or global configuration and no credential helper, allows
//! `file://` remotes only when asked, and error text never shows URL
//! credentials or the caller's secrets.

use crate::exec::{EnvPolicy, ProcessSpec, RunEnd, RunLimits, run_to_completion};
use std::path::Path;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Most output kept from one command.
const MAX_OUTPUT: usize = 1024 * 1024;

/// The step of [`RemoteFetch::checkout`] that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchStep {
    /// Making the local clone or pointing it at the remote.
    Prepare,
    /// Fetching the ref from the remote.
    Fetch,
    /// Resolving what was fetched to a commit or checking it out.
    Checkout,
}

/// Why fetching a remote source failed; messages hold no secrets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// git could not be run, or the local directory could not be made.
    #[error("Git failed: {0}")]
    Start(String),
    /// A git command failed in `step`; `stderr` is what git said.
    #[error("{stderr}")]
    Failed {
        /// Where it failed.
        step: FetchStep,
        /// git's complaint, credentials and secrets masked.
        stderr: String,
    },
    /// A command ran out of time.
    #[error("Git operation timed out.")]
    TimedOut,
}

/// What [`RemoteFetch::checkout`] checked out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The commit now checked out (lowercase hex).
    pub commit: String,
    /// Whether the ref was a tag (pinned like a commit id).
    pub tag: bool,
}

/// Runs the hardened git commands that fetch remote sources.
#[derive(Debug, Clone)]
pub struct RemoteFetch {
    timeout: Duration,
    env: EnvPolicy,
    allow_file: bool,
    secrets: Vec<String>,
}

impl RemoteFetch {
    /// A fetcher whose commands may each take `timeout`, under `env`;
    /// `file://` remotes are refused.
    pub fn new(timeout: Duration, env: EnvPolicy) -> Self {
        Self {
            timeout,
            env,
            allow_file: false,
            secrets: Vec::new(),
        }
    }

    /// Whether `file://` remotes (and local paths) may be fetched.
    pub fn allow_file(mut self, allow: bool) -> Self {
        self.allow_file = allow;
        self
    }

    /// Values masked in every message (tokens filled into the URL or ref).
    pub fn hiding(mut self, secrets: impl IntoIterator<Item = String>) -> Self {
        self.secrets = secrets.into_iter().filter(|s| !s.is_empty()).collect();
        self
    }

    /// Masks URL credentials and the secret values in `message`.
    pub fn sanitize(&self, message: &str) -> String {
        mask(message, &self.secrets)
    }

    /// stdout of a successful hardened `git args` in `cwd`.
    pub async fn run(
        &self,
        args: &[&str],
        cwd: &Path,
        step: FetchStep,
    ) -> Result<String, FetchError> {
        let mut env = self.env.child_env();
        for (name, value) in [
            ("GIT_TERMINAL_PROMPT", "0"),
            ("GIT_CONFIG_NOSYSTEM", "1"),
            ("GIT_CONFIG_GLOBAL", "/dev/null"),
            ("GIT_ASKPASS", "true"),
            ("SSH_ASKPASS", "true"),
        ] {
            env.set(name, value)
                .map_err(|e| FetchError::Start(e.to_string()))?;
        }
        let file = format!(
            "protocol.file.allow={}",
            if self.allow_file { "always" } else { "never" }
        );
        let spec = ProcessSpec::new("git", env)
            .args(["-c", "credential.helper=", "-c", "core.askPass=", "-c"])
            .args([file.as_str()])
            .args(args)
            .cwd(cwd);
        let limits = RunLimits {
            timeout: self.timeout,
            linger_after_exit: Some(Duration::from_secs(2)),
            ..RunLimits::default()
        };
        let out = run_to_completion(&spec, &limits, &CancellationToken::new(), MAX_OUTPUT)
            .await
            .map_err(|e| FetchError::Start(e.to_string()))?;
        match out.end {
            RunEnd::Exited(0) => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
            RunEnd::Exited(_) => Err(FetchError::Failed {
                step,
                stderr: self.sanitize(String::from_utf8_lossy(&out.stderr).trim()),
            }),
            RunEnd::TimedOut | RunEnd::Cancelled(_) => Err(FetchError::TimedOut),
        }
    }

    /// Makes `dir` a shallow clone of `url` at `git_ref` (the remote's
    /// `HEAD` without one), checked out detached, and says which commit.
    ///
    /// `dir` is made when missing and reused when it already holds a clone
    /// (its remote is pointed at `url`). A full commit id already present is
    /// checked out without asking the remote; a name is tried as a tag first,
    /// then as any ref the remote has.
    pub async fn checkout(
        &self,
        url: &str,
        git_ref: Option<&str>,
        dir: &Path,
    ) -> Result<Fetched, FetchError> {
        use FetchStep::{Checkout, Fetch, Prepare};
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(|e| FetchError::Start(format!("{}: {e}", dir.display())))?;
        if dir.join(".git").exists() {
            self.run(&["remote", "set-url", "origin", url], dir, Prepare)
                .await?;
        } else {
            self.run(&["init", "--quiet"], dir, Prepare).await?;
            self.run(&["remote", "add", "origin", url], dir, Prepare)
                .await?;
        }
        let commit_id = git_ref.filter(|r| is_commit_id(r));
        if let Some(id) = commit_id
            && self
                .run(
                    &["cat-file", "-e", &format!("{id}^{{commit}}")],
                    dir,
                    Checkout,
                )
                .await
                .is_ok()
        {
            return self.detach(id, false, dir).await;
        }
        if let Some(name) = git_ref.filter(|_| commit_id.is_none()) {
            let refspec = format!("+refs/tags/{name}:refs/tags/{name}");
            let args = [
                "fetch",
                "--quiet",
                "--depth",
                "1",
                "origin",
                refspec.as_str(),
            ];
            if self.run(&args, dir, Fetch).await.is_ok() {
                return self.detach(&format!("refs/tags/{name}"), true, dir).await;
            }
        }
        let wanted = git_ref.unwrap_or("HEAD");
        self.run(
            &["fetch", "--quiet", "--depth", "1", "origin", wanted],
            dir,
            Fetch,
        )
        .await?;
        self.detach("FETCH_HEAD", false, dir).await
    }

    async fn detach(&self, rev: &str, tag: bool, dir: &Path) -> Result<Fetched, FetchError> {
        let commit = self
            .run(
                &["rev-parse", "--verify", &format!("{rev}^{{commit}}")],
                dir,
                FetchStep::Checkout,
            )
            .await?
            .trim()
            .to_lowercase();
        self.run(
            &["checkout", "--quiet", "--detach", &commit],
            dir,
            FetchStep::Checkout,
        )
        .await?;
        Ok(Fetched { commit, tag })
    }
}

/// Whether `git_ref` is a full commit id (40 hex digits).
pub fn is_commit_id(git_ref: &str) -> bool {
    git_ref.len() == 40 && git_ref.chars().all(|c| c.is_ascii_hexdigit())
}

/// Masks URL credentials and the (non-empty) `secrets` in `message`.
pub fn mask(message: &str, secrets: &[String]) -> String {
    let mut out = message
        .split(' ')
        .map(redact_url)
        .collect::<Vec<_>>()
        .join(" ");
    for s in secrets.iter().filter(|s| !s.is_empty()) {
        out = out.replace(s.as_str(), "****");
    }
    out
}

/// Masks `user:password@` in a URL.
pub fn redact_url(source: &str) -> String {
    if let Some((scheme, rest)) = source.split_once("://")
        && let Some((creds, host)) = rest.split_once('@')
        && !creds.contains('/')
    {
        return format!("{scheme}://****@{host}");
    }
    source.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_and_secrets_are_masked() {
        let f = RemoteFetch::new(Duration::from_secs(1), EnvPolicy::default())
            .hiding(["tok123".to_string(), String::new()]);
        assert_eq!(
            f.sanitize("fatal: https://u:pw@host/r.git ref tok123 missing"),
            "fatal: https://****@host/r.git ref **** missing"
        );
        assert_eq!(redact_url("git@host:r.git"), "git@host:r.git");
    }

    #[test]
    fn commit_ids_are_forty_hex_digits() {
        assert!(is_commit_id(&"a".repeat(40)));
        assert!(!is_commit_id("main"));
        assert!(!is_commit_id(&"g".repeat(40)));
    }
}
