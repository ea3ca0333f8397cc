//! [`AgentSandboxWorkspace`]: a workspace in a pod of
//! kubernetes-sigs/agent-sandbox, with the reference's options.
//!
//! As the reference does: a `SandboxClaim` on the warm pool `warmpool` is
//! created (generated name `sandbox-claim-<8 hex>`) and awaited until it
//! is bound and ready (failing at once on a missing pool or template, or a
//! terminal reason); the agent server in the pod is then reached through
//! `kubectl port-forward pod/<pod> <local>:<server_port>` (`connection:
//! port_forward`, retried with back-off while the pod's network settles)
//! or at the caller's `host` (`direct`), its `/health` awaited, and driven
//! as a [`RemoteWorkspace`]. `pause` sets the sandbox's `operatingMode` to
//! `Suspended` (the controller deletes the pod, a persistent volume
//! keeps the files), `resume` back to `Running` and reconnects. Closing
//! (or dropping) deletes the claim, which deletes the sandbox and its pod.

use crate::Workspace;
use crate::exec::{EnvPolicy, GroupChild, ProcessSpec};
use crate::kubernetes::agent_sandbox::{
    self as resources, ClaimRequest, SANDBOX, SANDBOX_CLAIM, validate_labels,
};
use crate::kubernetes::{KubeClient, KubeSource};
use crate::remote::RemoteWorkspace;
use crate::types::WorkspaceError;
use openhands_client::http::{HttpOptions, http_client};
use openhands_client::{AgentServerClient, TlsOptions};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};

/// Timeout of one agent-server request of the workspace.
const AGENT_TIMEOUT: Duration = Duration::from_secs(60);
/// Timeout of one Kubernetes API request.
const API_TIMEOUT: Duration = Duration::from_secs(30);
/// Port-forward attempts before giving up (as the reference).
const FORWARD_ATTEMPTS: u32 = 8;

/// How the agent server in the pod is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connection {
    /// `kubectl port-forward` to the pod on a local port (the default).
    PortForward,
    /// The caller's URL (a router, a Gateway, the in-cluster DNS name).
    Direct(String),
}

/// The settings of an [`AgentSandboxWorkspace`] (the reference's fields;
/// `kubeconfig`, `api_key`, `kubectl` and `tls` are this implementation's).
#[derive(Debug, Clone)]
pub struct AgentSandboxWorkspaceOptions {
    /// The `SandboxWarmPool` to claim the pod from.
    pub warmpool: String,
    /// Namespace of the warm pool and the claim.
    pub namespace: String,
    /// Working directory inside the pod.
    pub working_dir: String,
    /// Port the agent server listens on in the pod.
    pub server_port: u16,
    /// How the agent server is reached.
    pub connection: Connection,
    /// Local port of the port-forward (`None`: a free one).
    pub host_port: Option<u16>,
    /// The kubeconfig context (`None`: the current one).
    pub kube_context: Option<String>,
    /// The kubeconfig file (`None`: `KUBECONFIG`, `~/.kube/config`, or
    /// the pod's service account).
    pub kubeconfig: Option<PathBuf>,
    /// Longest wait for the claim to be ready.
    pub sandbox_ready_timeout: Duration,
    /// Longest wait for the agent server's `/health`.
    pub health_check_timeout: Duration,
    /// The controller deletes the claim this long after creation.
    pub shutdown_after_seconds: Option<u64>,
    /// Labels of the claim object.
    pub labels: BTreeMap<String, String>,
    /// Labels stamped onto the pod.
    pub pod_labels: BTreeMap<String, String>,
    /// Annotations stamped onto the pod.
    pub pod_annotations: BTreeMap<String, String>,
    /// Log the port-forward's output (at debug level).
    pub detach_logs: bool,
    /// The agent server's session key (if the pool's template sets one).
    pub api_key: Option<String>,
    /// The `kubectl` program.
    pub kubectl: PathBuf,
    /// Trusted certificates of the agent server (direct `https://`).
    pub tls: TlsOptions,
}

impl AgentSandboxWorkspaceOptions {
    /// The reference's defaults for a claim on `warmpool`.
    pub fn new(warmpool: impl Into<String>) -> Self {
        Self {
            warmpool: warmpool.into(),
            namespace: "default".into(),
            working_dir: "/workspace".into(),
            server_port: 8000,
            connection: Connection::PortForward,
            host_port: None,
            kube_context: None,
            kubeconfig: None,
            sandbox_ready_timeout: Duration::from_secs(180),
            health_check_timeout: Duration::from_secs(120),
            shutdown_after_seconds: None,
            labels: BTreeMap::new(),
            pod_labels: BTreeMap::new(),
            pod_annotations: BTreeMap::new(),
            detach_logs: true,
            api_key: None,
            kubectl: PathBuf::from("kubectl"),
            tls: TlsOptions::default(),
        }
    }
}

/// A workspace in an agent-sandbox pod claimed from a warm pool.
pub struct AgentSandboxWorkspace {
    opts: AgentSandboxWorkspaceOptions,
    kube: KubeClient,
    claim: String,
    sandbox: String,
    remote: RemoteWorkspace,
    forward: Option<GroupChild>,
    closed: bool,
}

impl std::fmt::Debug for AgentSandboxWorkspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentSandboxWorkspace")
            .field("namespace", &self.opts.namespace)
            .field("claim", &self.claim)
            .field("sandbox", &self.sandbox)
            .field("host", &self.remote.host())
            .finish_non_exhaustive()
    }
}

/// A free local TCP port.
fn free_port() -> Result<u16, WorkspaceError> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

fn claim_name() -> Result<String, WorkspaceError> {
    let mut b = [0u8; 4];
    getrandom::fill(&mut b).map_err(|e| WorkspaceError::Invalid(e.to_string()))?;
    Ok(format!(
        "sandbox-claim-{}",
        b.iter().map(|x| format!("{x:02x}")).collect::<String>()
    ))
}

impl AgentSandboxWorkspace {
    /// Claims a pod from the warm pool, connects to its agent server and
    /// waits until it is healthy. On failure the claim is deleted.
    pub async fn start(opts: AgentSandboxWorkspaceOptions) -> Result<Self, WorkspaceError> {
        if opts.warmpool.trim().is_empty() {
            return Err(WorkspaceError::Invalid(
                "warmpool name cannot be empty".into(),
            ));
        }
        if matches!(&opts.connection, Connection::Direct(h) if h.trim().is_empty()) {
            return Err(WorkspaceError::Invalid(
                "connection 'direct' requires 'host' to be set to the agent-server URL".into(),
            ));
        }
        validate_labels(&opts.labels)?;
        validate_labels(&opts.pod_labels)?;
        if opts.shutdown_after_seconds == Some(0) {
            return Err(WorkspaceError::Invalid(
                "shutdown_after_seconds must be positive".into(),
            ));
        }
        let conn = KubeSource {
            kubeconfig: opts.kubeconfig.clone(),
            context: opts.kube_context.clone(),
        }
        .resolve()
        .await?;
        let kube = KubeClient::new(&conn, API_TIMEOUT)?;
        let claim = claim_name()?;
        let request = ClaimRequest {
            name: claim.clone(),
            warmpool: opts.warmpool.clone(),
            labels: opts.labels.clone(),
            pod_labels: opts.pod_labels.clone(),
            pod_annotations: opts.pod_annotations.clone(),
            shutdown_after: opts.shutdown_after_seconds.map(Duration::from_secs),
            created_by: "openhands-sdk".into(),
        };
        kube.create(
            &SANDBOX_CLAIM,
            &opts.namespace,
            &request.manifest(std::time::SystemTime::now()),
        )
        .await?;
        tracing::info!(claim = %claim, warmpool = %opts.warmpool, "claimed a sandbox");
        let connected = async {
            let sandbox = resources::wait_claim_ready(
                &kube,
                &opts.namespace,
                &claim,
                opts.sandbox_ready_timeout,
            )
            .await?;
            let (remote, forward) = connect(&opts, &kube, &sandbox, opts.host_port).await?;
            Ok::<_, WorkspaceError>((sandbox, remote, forward))
        }
        .await;
        match connected {
            Ok((sandbox, remote, forward)) => Ok(Self {
                opts,
                kube,
                claim,
                sandbox,
                remote,
                forward,
                closed: false,
            }),
            Err(e) => {
                if let Err(d) = kube.delete(&SANDBOX_CLAIM, &opts.namespace, &claim).await {
                    tracing::warn!(claim = %claim, "deleting the claim after a failed start: {d}");
                }
                Err(e)
            }
        }
    }

    /// The agent server's workspace (commands, files, git).
    pub fn workspace(&self) -> &RemoteWorkspace {
        &self.remote
    }

    /// The agent server's URL (the local port-forward, or `host`).
    pub fn host(&self) -> &str {
        self.remote.host()
    }

    /// The claim's name.
    pub fn claim_name(&self) -> &str {
        &self.claim
    }

    /// The adopted `Sandbox`'s name.
    pub fn sandbox_id(&self) -> &str {
        &self.sandbox
    }

    /// Suspends the sandbox (`operatingMode: Suspended`): the port-forward
    /// stops and the controller deletes the pod.
    pub async fn pause(&mut self) -> Result<(), WorkspaceError> {
        self.stop_forward().await;
        resources::set_operating_mode(&self.kube, &self.opts.namespace, &self.sandbox, "Suspended")
            .await?;
        Ok(())
    }

    /// Resumes a suspended sandbox (`operatingMode: Running`), waits until
    /// it is ready and reconnects (a new local port for a port-forward).
    pub async fn resume(&mut self) -> Result<(), WorkspaceError> {
        resources::set_operating_mode(&self.kube, &self.opts.namespace, &self.sandbox, "Running")
            .await?;
        resources::wait_sandbox_ready(
            &self.kube,
            &self.opts.namespace,
            &self.sandbox,
            self.opts.sandbox_ready_timeout,
        )
        .await?;
        self.stop_forward().await;
        let (remote, forward) = connect(&self.opts, &self.kube, &self.sandbox, None).await?;
        self.remote = remote;
        self.forward = forward;
        Ok(())
    }

    async fn stop_forward(&mut self) {
        if let Some(mut f) = self.forward.take() {
            f.terminate(Duration::from_secs(5)).await;
        }
    }

    /// Stops the port-forward and deletes the claim (its sandbox and pod
    /// go with it). A claim already gone is no error.
    pub async fn close(mut self) -> Result<(), WorkspaceError> {
        self.closed = true;
        self.stop_forward().await;
        self.kube
            .delete(&SANDBOX_CLAIM, &self.opts.namespace, &self.claim)
            .await?;
        Ok(())
    }
}

/// Dropped without [`AgentSandboxWorkspace::close`]: the port-forward is
/// killed (its process group) and the claim deleted in the background
/// when a tokio runtime is at hand.
impl Drop for AgentSandboxWorkspace {
    fn drop(&mut self) {
        if self.closed {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(claim = %self.claim, "an AgentSandboxWorkspace was dropped outside a tokio runtime; its claim is left");
            return;
        };
        let (kube, ns, claim) = (
            self.kube.clone(),
            self.opts.namespace.clone(),
            self.claim.clone(),
        );
        handle.spawn(async move {
            if let Err(e) = kube.delete(&SANDBOX_CLAIM, &ns, &claim).await {
                tracing::warn!(%claim, "deleting the claim on drop failed: {e}");
            }
        });
    }
}

/// The remote workspace of the pod (what the SDK's `Conversation` picks a
/// remote conversation from).
impl From<&AgentSandboxWorkspace> for Workspace {
    fn from(w: &AgentSandboxWorkspace) -> Self {
        Workspace::Remote(w.remote.clone())
    }
}

/// Reaches the sandbox's agent server as `opts.connection` says and waits
/// for its health; the workspace and the port-forward (if any).
async fn connect(
    opts: &AgentSandboxWorkspaceOptions,
    kube: &KubeClient,
    sandbox: &str,
    preferred_port: Option<u16>,
) -> Result<(RemoteWorkspace, Option<GroupChild>), WorkspaceError> {
    let (host, forward) = match &opts.connection {
        Connection::Direct(host) => {
            let host = host.trim_end_matches('/').to_string();
            wait_health(opts, &host, None).await?;
            (host, None)
        }
        Connection::PortForward => {
            let mut last = String::new();
            let mut found = None;
            for attempt in 0..FORWARD_ATTEMPTS {
                let port = match (attempt, preferred_port) {
                    (0, Some(p)) => p,
                    _ => free_port()?,
                };
                let host = format!("http://127.0.0.1:{port}");
                let result = async {
                    let mut child = port_forward(opts, kube, sandbox, port).await?;
                    match wait_health(opts, &host, Some(&mut child)).await {
                        Ok(()) => Ok(child),
                        Err(e) => {
                            child.terminate(Duration::from_secs(2)).await;
                            Err(e)
                        }
                    }
                }
                .await;
                match result {
                    Ok(child) => {
                        found = Some((host, child));
                        break;
                    }
                    Err(e) => {
                        tracing::warn!(attempt = attempt + 1, "agent server not reachable: {e}");
                        last = e.to_string();
                        if attempt + 1 < FORWARD_ATTEMPTS {
                            tokio::time::sleep(Duration::from_secs(
                                u64::from(2 * (attempt + 1)).min(10),
                            ))
                            .await;
                        }
                    }
                }
            }
            let (host, child) = found.ok_or_else(|| {
                WorkspaceError::Transport(format!(
                    "could not reach the agent server after {FORWARD_ATTEMPTS} attempts: {last}"
                ))
            })?;
            (host, Some(child))
        }
    };
    let client = AgentServerClient::builder(&host)
        .session_api_key(opts.api_key.as_deref())
        .timeout(AGENT_TIMEOUT)
        .tls(opts.tls.clone())
        .build()
        .map_err(|e| WorkspaceError::Transport(e.to_string()))?;
    Ok((
        RemoteWorkspace::with_client(client, opts.working_dir.clone()),
        forward,
    ))
}

/// Starts `kubectl port-forward` to the sandbox's current pod (its name
/// re-read: it may change across a suspend and resume).
async fn port_forward(
    opts: &AgentSandboxWorkspaceOptions,
    kube: &KubeClient,
    sandbox: &str,
    port: u16,
) -> Result<GroupChild, WorkspaceError> {
    let obj = kube.get(&SANDBOX, &opts.namespace, sandbox).await?;
    let pod = obj
        .as_ref()
        .and_then(resources::pod_name)
        .unwrap_or_else(|| sandbox.to_string());
    let mut spec = ProcessSpec::new(opts.kubectl.as_os_str(), EnvPolicy::new().child_env())
        .arg("port-forward");
    if let Some(path) = &opts.kubeconfig {
        spec = spec.arg("--kubeconfig").arg(path.as_os_str());
    }
    if let Some(ctx) = &opts.kube_context {
        spec = spec.args(["--context", ctx.as_str()]);
    }
    spec = spec.args([
        "-n".to_string(),
        opts.namespace.clone(),
        format!("pod/{pod}"),
        format!("{port}:{}", opts.server_port),
    ]);
    let mut child = GroupChild::spawn(&spec).map_err(|e| {
        WorkspaceError::Invalid(format!(
            "starting {} port-forward: {e}",
            opts.kubectl.display()
        ))
    })?;
    // Drained (a full pipe would stall kubectl), logged when asked.
    let log = opts.detach_logs;
    for out in [
        child
            .take_stdout()
            .map(|o| Box::new(o) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
        child
            .take_stderr()
            .map(|o| Box::new(o) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
    ]
    .into_iter()
    .flatten()
    {
        tokio::spawn(async move {
            let mut lines = BufReader::new(out).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if log {
                    tracing::debug!("[PORT-FORWARD] {line}");
                }
            }
        });
    }
    Ok(child)
}

/// Waits until `{host}/health` answers 2xx (or the port-forward exits).
async fn wait_health(
    opts: &AgentSandboxWorkspaceOptions,
    host: &str,
    mut forward: Option<&mut GroupChild>,
) -> Result<(), WorkspaceError> {
    let http = http_client(
        &HttpOptions {
            tls: opts.tls.clone(),
            ..HttpOptions::with_timeout(Duration::from_secs(1))
        }
        .no_proxy(),
    )
    .map_err(|e| WorkspaceError::Transport(e.to_string()))?;
    let url = format!("{host}/health");
    let end = Instant::now() + opts.health_check_timeout;
    loop {
        if let Ok(r) = http.get(&url).send().await
            && r.status().is_success()
        {
            return Ok(());
        }
        if let Some(f) = forward.as_deref_mut()
            && let Ok(Ok(status)) = tokio::time::timeout(Duration::from_millis(1), f.wait()).await
        {
            return Err(WorkspaceError::Transport(format!(
                "kubectl port-forward exited unexpectedly ({status})"
            )));
        }
        if Instant::now() > end {
            return Err(WorkspaceError::Transport(format!(
                "the agent server at {host} did not become healthy within {:?}",
                opts.health_check_timeout
            )));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
