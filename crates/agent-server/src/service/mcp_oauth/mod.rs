//! OAuth install probes of MCP servers (`/api/mcp/oauth/*`), as the
//! reference runs them: `start` begins authorizing a candidate server in
//! the background (discovery, dynamic client registration, an
//! authorization URL with PKCE, a loopback callback listener) and answers
//! the URL for the user to open; the browser's redirect reaches the
//! listener directly, or its URL is submitted (`submit_callback`) and
//! forwarded to it; the code is exchanged, the server connected, its tools
//! listed, and the acquired state answered (encrypted) as `oauth_state`
//! for the client to store under the server's `auth.state`. Jobs live 15
//! minutes, in memory.

pub mod sealed;

use super::mcp::{McpTestRequest, probe_with};
use openhands_mcp::oauth::{Authorization, MemoryStates, OAuthError};
use openhands_sdk::secrets::Cipher;
use openhands_workspace::exec::ExecPolicy;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How long a job is kept.
const JOB_TTL: Duration = Duration::from_secs(15 * 60);
/// How long the user has to consent.
const CONSENT_TIMEOUT: Duration = Duration::from_secs(300);
/// Limit of forwarding a callback URL to the listener.
const CALLBACK_FORWARD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a callback submission waits for the probe to finish.
const CALLBACK_WAIT: Duration = Duration::from_secs(5);

/// Why a job request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthJobError {
    /// `start` for a server without `auth.strategy: "oauth2"`.
    #[error("MCP OAuth start requires auth.strategy='oauth2'")]
    NotOAuth,
    /// No such job (or it expired).
    #[error("MCP OAuth job not found")]
    NotFound,
    /// The submitted callback URL is not a loopback `http` URL.
    #[error("Invalid OAuth callback URL")]
    InvalidCallback,
    /// The callback URL names another port or path than the listener's.
    #[error("Unexpected OAuth callback URL")]
    UnexpectedCallback,
    /// The job has no listener yet.
    #[error("OAuth callback is not ready")]
    CallbackNotReady,
}

#[derive(Debug, Clone, Default)]
struct Progress {
    status: &'static str,
    authorization_url: Option<String>,
    callback_url: Option<String>,
    /// `MCPTestSuccess` / `MCPTestFailure`.
    result: Option<Value>,
}

#[derive(Debug)]
struct Job {
    id: String,
    created: Instant,
    progress: watch::Sender<Progress>,
}

impl Job {
    fn update(&self, f: impl FnOnce(&mut Progress)) {
        self.progress.send_modify(f);
    }

    fn finish(&self, result: Value) {
        self.update(|p| {
            p.status = if result["ok"] == true {
                "succeeded"
            } else {
                "failed"
            };
            p.result = Some(result);
        });
    }

    /// Waits until `cond` holds or `limit` passes.
    async fn wait(&self, limit: Duration, cond: impl Fn(&Progress) -> bool) {
        let mut rx = self.progress.subscribe();
        let _ = tokio::time::timeout(limit, rx.wait_for(|p| cond(p))).await;
    }

    /// The reference's `MCPOAuthStatusResponse` (no `null` members).
    fn status(&self) -> Value {
        let p = self.progress.borrow().clone();
        let mut out = Map::new();
        let ok = p.result.as_ref().is_none_or(|r| r["ok"] == true);
        out.insert("ok".into(), json!(ok));
        out.insert("status".into(), json!(p.status));
        out.insert("job_id".into(), json!(self.id));
        if let Some(u) = &p.authorization_url {
            out.insert("authorization_url".into(), json!(u));
        }
        out.insert("callback_ready".into(), json!(p.callback_url.is_some()));
        if let Some(Value::Object(r)) = &p.result {
            let keys: &[&str] = if ok {
                &["tools", "tool_result", "oauth_state"]
            } else {
                &["error", "error_kind"]
            };
            for k in keys {
                if let Some(v) = r.get(*k).filter(|v| !v.is_null()) {
                    out.insert((*k).into(), v.clone());
                }
            }
        }
        Value::Object(out)
    }
}

/// The probe jobs of this server.
#[derive(Debug, Clone, Default)]
pub struct OAuthJobs(Arc<Mutex<HashMap<String, Arc<Job>>>>);

fn failure(error: impl std::fmt::Display, kind: &str) -> Value {
    json!({"ok": false, "error": error.to_string(), "error_kind": kind})
}

impl OAuthJobs {
    fn get(&self, id: &str) -> Result<Arc<Job>, OAuthJobError> {
        let mut jobs = self.0.lock();
        jobs.retain(|_, j| j.created.elapsed() <= JOB_TTL);
        jobs.get(id).cloned().ok_or(OAuthJobError::NotFound)
    }

    /// Starts a probe job for `req` and waits (the request's timeout, 1 to
    /// 30 s) for its authorization URL: the reference's
    /// `MCPOAuthStartResponse`.
    pub async fn start(
        &self,
        mut req: McpTestRequest,
        cipher: Option<Cipher>,
        working_dir: PathBuf,
        exec: ExecPolicy,
    ) -> Result<Value, OAuthJobError> {
        if req.oauth().is_none() {
            return Err(OAuthJobError::NotOAuth);
        }
        req.open_oauth_state(cipher.as_ref());
        let job = Arc::new(Job {
            id: uuid::Uuid::new_v4().simple().to_string(),
            created: Instant::now(),
            progress: watch::Sender::new(Progress {
                status: "pending",
                ..Progress::default()
            }),
        });
        {
            let mut jobs = self.0.lock();
            jobs.retain(|_, j| j.created.elapsed() <= JOB_TTL);
            jobs.insert(job.id.clone(), job.clone());
        }
        let wait = req
            .timeout
            .clamp(Duration::from_secs(1), Duration::from_secs(30));
        tokio::spawn(run(job.clone(), req, cipher, working_dir, exec));
        job.wait(wait, |p| {
            p.authorization_url.is_some() || p.result.is_some()
        })
        .await;
        let p = job.progress.borrow().clone();
        Ok(match (&p.authorization_url, &p.result) {
            (Some(u), _) => json!({"ok": true, "job_id": job.id, "authorization_url": u}),
            // No consent needed: the stored tokens were valid or refreshed.
            (None, Some(r)) if r["ok"] == true => json!({"ok": true, "job_id": job.id}),
            (None, Some(r)) => json!({"ok": false, "job_id": job.id,
                                      "error": r["error"], "error_kind": r["error_kind"]}),
            (None, None) => json!({"ok": false, "job_id": job.id,
                                   "error": "Timed out waiting for OAuth authorization URL",
                                   "error_kind": "timeout"}),
        })
    }

    /// The job's `MCPOAuthStatusResponse`.
    pub fn status(&self, id: &str) -> Result<Value, OAuthJobError> {
        Ok(self.get(id)?.status())
    }

    /// Forwards a callback URL copied from the browser to the job's
    /// listener (it must be the listener's loopback URL), then answers the
    /// status once the probe finished (or after a few seconds).
    pub async fn submit_callback(
        &self,
        id: &str,
        callback_url: &str,
    ) -> Result<Value, OAuthJobError> {
        let job = self.get(id)?;
        let parsed = url::Url::parse(callback_url).map_err(|_| OAuthJobError::InvalidCallback)?;
        let loopback = matches!(
            parsed.host(),
            Some(url::Host::Domain("localhost"))
                | Some(url::Host::Ipv4(std::net::Ipv4Addr::LOCALHOST))
                | Some(url::Host::Ipv6(std::net::Ipv6Addr::LOCALHOST))
        );
        if parsed.scheme() != "http" || !loopback {
            return Err(OAuthJobError::InvalidCallback);
        }
        let expected = job
            .progress
            .borrow()
            .callback_url
            .clone()
            .ok_or(OAuthJobError::CallbackNotReady)?;
        let expected = url::Url::parse(&expected).map_err(|_| OAuthJobError::CallbackNotReady)?;
        if parsed.port() != expected.port() || parsed.path() != expected.path() {
            return Err(OAuthJobError::UnexpectedCallback);
        }
        let forwarded = async {
            let client = openhands_client::http_client(
                &openhands_client::HttpOptions::with_timeout(CALLBACK_FORWARD_TIMEOUT),
            )
            .map_err(|e| e.to_string())?;
            let resp = client
                .get(parsed.clone())
                .send()
                .await
                .map_err(|e| e.to_string())?;
            Ok::<u16, String>(resp.status().as_u16())
        }
        .await;
        let error = match forwarded {
            Ok(code) if code >= 400 => Some(format!("OAuth callback returned HTTP {code}")),
            Ok(_) => None,
            Err(e) => Some(format!("OAuth callback could not be delivered: {e}")),
        };
        if let Some(error) = error {
            let mut out = job.status();
            out["ok"] = json!(false);
            out["status"] = json!("failed");
            out["error"] = json!(error);
            out["error_kind"] = json!("connection");
            return Ok(out);
        }
        job.wait(CALLBACK_WAIT, |p| p.result.is_some()).await;
        Ok(job.status())
    }
}

/// The job: the stored tokens first (no consent needed when they work),
/// else an interactive authorization; then the probe.
async fn run(
    job: Arc<Job>,
    req: McpTestRequest,
    cipher: Option<Cipher>,
    working_dir: PathBuf,
    exec: ExecPolicy,
) {
    let Some((url, oauth)) = req.oauth() else {
        job.finish(failure("not an OAuth server", "unknown"));
        return;
    };
    if oauth
        .state
        .as_ref()
        .is_some_and(|s| s.access_token().is_some())
    {
        let store = Arc::new(MemoryStates::new());
        let r = probe_with(
            req.clone(),
            working_dir.clone(),
            exec.clone(),
            store,
            cipher.as_ref(),
        )
        .await;
        if r["ok"] == true {
            job.finish(r);
            return;
        }
        tracing::info!(job = %job.id, "stored MCP OAuth tokens unusable; authorizing again");
    }
    let store = Arc::new(MemoryStates::new());
    let mut fresh = oauth.clone();
    fresh.state = None;
    let auth = match Authorization::begin(&url, &fresh, store.clone()).await {
        Ok(a) => a,
        Err(e) => {
            job.finish(failure(e, "connection"));
            return;
        }
    };
    job.update(|p| {
        p.status = "authorizing";
        p.authorization_url = Some(auth.authorization_url().to_string());
        p.callback_url = Some(auth.callback_url().to_string());
    });
    tracing::info!(job = %job.id, "MCP OAuth authorization URL ready");
    match auth.complete(CONSENT_TIMEOUT).await {
        Ok(()) => {
            let mut req = req;
            if let Some(o) = req
                .config
                .servers
                .first_mut()
                .and_then(|s| s.oauth.as_mut())
            {
                o.state = None;
            }
            job.finish(probe_with(req, working_dir, exec, store, cipher.as_ref()).await);
        }
        Err(e @ OAuthError::Timeout(_)) => job.finish(failure(e, "timeout")),
        Err(e) => job.finish(failure(e, "connection")),
    }
}
