//! The Kubernetes engine (`OH_CONTROL_SANDBOX=kubernetes`): a sandbox is a
//! `Sandbox` of kubernetes-sigs/agent-sandbox (`agents.x-k8s.io/v1beta1`)
//! running the sandbox image, or — with a warm pool configured — a
//! `SandboxClaim` (`extensions.agents.x-k8s.io/v1beta1`) that adopts an
//! already-running pod of that `SandboxWarmPool`. The client and the
//! resources are `openhands_workspace::kubernetes`, shared with the SDK's
//! `AgentSandboxWorkspace`.
//!
//! * **Endpoint:** the sandbox's headless Service (`spec.service: true`),
//!   `http://<status.serviceFQDN>:<port>` — the control plane runs in the
//!   cluster (or reaches its service network).
//! * **Session key:** in a Kubernetes `Secret` of the sandbox (the agent
//!   server's configuration file, mounted read-only, mode 0400), never in
//!   clear in the `Sandbox`, its labels or environment values. A warm
//!   pool's pods are started before any claim, so they cannot hold a
//!   sandbox's key: their template starts the agent server dormant
//!   (`OH_DEFERRED_INIT=true`) with a shared *init* key as its secret key,
//!   from the `Secret` `OH_CONTROL_K8S_WARMPOOL_SECRET` names (key
//!   `init_api_key`). Once a claim is bound, the engine delivers that
//!   sandbox's own session key and a fresh secret key by `POST /api/init`
//!   (authorized by the init key); from then on the pod accepts only its
//!   own key, so no two tenants' sandboxes share one. A pod somebody else
//!   initialized first is refused and its claim released.
//! * **Confinement:** the pod's container has the docker engine's
//!   capabilities and security options (all capabilities dropped but
//!   `SETFCAP`, no privilege escalation, no seccomp filter) and the
//!   conversations run in the project's bubblewrap sandbox inside it.
//! * **State:** `locate` reads the object's `Ready` condition: gone objects
//!   and finished pods are `gone`, a pod that is not ready is being
//!   replaced (its processes are lost), a ready one is checked with its
//!   key. Pausing is refused: agent-sandbox suspends by deleting the pod.
//!
//! Tested against a served API contract (the exact calls, answered by a
//! local server), not a live cluster.

use super::{
    Engine, EngineError, Located, ProvisionRequest, Provisioned, PullPolicy, RuntimeRefusal,
    RuntimeSpec,
};
use crate::agent_client::{AgentClient, AgentError, Endpoint};
use crate::hosts::ProvisionError;
use crate::hosts::docker::{LABEL, container_name};
use crate::secrets::new_credential;
use crate::store::sandboxes::Sandbox;
use base64::Engine as _;
use openhands_workspace::kubernetes::agent_sandbox::{
    self as resources, ClaimRequest, Readiness, SANDBOX, SANDBOX_CLAIM, SECRET,
};
use openhands_workspace::kubernetes::{KubeClient, KubeError, KubeSource};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tokio::sync::OnceCell;

pub use crate::config::KubernetesSettings;

/// Name of the Kubernetes engine.
pub const KUBERNETES: &str = "kubernetes";
/// The agent's working directory in the pod.
pub const WORKSPACE: &str = "/workspace";
/// Where the agent server keeps its data in the pod.
const DATA: &str = "/root/openhands";
/// Where the configuration secret is mounted.
const CONFIG_DIR: &str = "/run/secrets/openhands";
/// The configuration file's key in the secret.
const CONFIG_KEY: &str = "server.json";
/// The key of a warm pool's init key (its dormant pods' secret key) in
/// its secret.
pub const POOL_INIT_KEY: &str = "init_api_key";
/// The value of agent-sandbox's `created-by` label on our objects.
const CREATED_BY: &str = "openhands-control";

/// The Kubernetes engine.
#[derive(Debug)]
pub struct KubernetesEngine {
    settings: KubernetesSettings,
    client: AgentClient,
    timeout: Duration,
    start_timeout: Duration,
    kube: OnceCell<(KubeClient, String)>,
}

fn unavailable(e: impl std::fmt::Display) -> ProvisionError {
    ProvisionError::Engine(format!("kubernetes sandboxes are unavailable: {e}"))
}

/// What an engine id names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Object {
    /// A `Sandbox` of ours (and its `Secret`).
    Sandbox(String),
    /// A `SandboxClaim` on the warm pool.
    Claim(String),
}

impl Object {
    fn parse(engine_id: &str) -> Option<Self> {
        match engine_id.split_once('/')? {
            ("sandbox", n) => Some(Self::Sandbox(n.to_string())),
            ("claim", n) => Some(Self::Claim(n.to_string())),
            _ => None,
        }
    }

    fn id(&self) -> String {
        match self {
            Self::Sandbox(n) => format!("sandbox/{n}"),
            Self::Claim(n) => format!("claim/{n}"),
        }
    }
}

/// The agent server's configuration (the secret's file).
pub fn server_config(key: &str, secret: &str) -> Value {
    json!({
        "session_api_keys": [key],
        "secret_key": secret,
        "conversations_path": format!("{DATA}/conversations"),
        "workspace_path": WORKSPACE,
        "bash_events_dir": format!("{DATA}/bash_events"),
        "enable_vscode": false,
        "preload_tools": false,
        "enable_browser": false,
        "sandbox": "namespaces",
    })
}

/// The environment variable's key in the sandbox's secret.
fn env_key(name: &str) -> String {
    format!("env.{name}")
}

/// The `Secret` of a sandbox: its agent server's configuration and the
/// values of a runtime's environment.
pub fn secret_manifest(
    name: &str,
    sandbox_id: &str,
    config: &Value,
    env: &[(String, String)],
) -> Value {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let mut data = serde_json::Map::new();
    data.insert(CONFIG_KEY.into(), json!(b64(&config.to_string())));
    for (k, v) in env {
        data.insert(env_key(k), json!(b64(v)));
    }
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": { "name": name, "labels": { LABEL: sandbox_id } },
        "type": "Opaque",
        "data": data,
    })
}

fn millicores(cores: f64) -> String {
    format!("{}m", (cores * 1000.0).round() as i64)
}

/// The `Sandbox` of a sandbox: one pod of the image running the agent
/// server on the settings' port with its configuration from the secret
/// `name`, resources from the settings, the docker engine's security
/// options, a headless Service, and what a runtime `spec` asks.
pub fn sandbox_manifest(
    settings: &KubernetesSettings,
    name: &str,
    sandbox_id: &str,
    spec: &RuntimeSpec,
) -> Value {
    let port = settings.server_port;
    let mut requests = serde_json::Map::new();
    let mut limits = serde_json::Map::new();
    if let Some(c) = settings.cpu_request {
        requests.insert("cpu".into(), json!(millicores(c)));
    }
    if let Some(m) = settings.memory_request_mb {
        requests.insert("memory".into(), json!(format!("{m}Mi")));
    }
    if let Some(c) = settings.cpu_limit {
        limits.insert("cpu".into(), json!(millicores(c)));
    }
    if let Some(m) = settings.memory_limit_mb {
        limits.insert("memory".into(), json!(format!("{m}Mi")));
    }
    let mut env = vec![
        json!({"name": "OPENHANDS_AGENT_SERVER_CONFIG_PATH", "value": format!("{CONFIG_DIR}/{CONFIG_KEY}")}),
        json!({"name": "OH_PERSISTENCE_DIR", "value": format!("{DATA}/persistence")}),
        json!({"name": "HOME", "value": "/root"}),
        json!({"name": "LOG_LEVEL", "value": "info"}),
    ];
    for (k, _) in &spec.environment {
        env.push(json!({
            "name": k,
            "valueFrom": { "secretKeyRef": { "name": name, "key": env_key(k) } },
        }));
    }
    let mut security = json!({
        "allowPrivilegeEscalation": false,
        "capabilities": { "drop": ["ALL"], "add": ["SETFCAP"] },
        "seccompProfile": { "type": "Unconfined" },
    });
    if let Some((uid, gid)) = spec.user {
        security["runAsUser"] = json!(uid);
        security["runAsGroup"] = json!(gid);
    }
    let pull = match spec.pull {
        PullPolicy::Always => "Always",
        PullPolicy::IfNotPresent => "IfNotPresent",
        PullPolicy::Never => "Never",
    };
    let mut pod_spec = json!({
        "automountServiceAccountToken": false,
        "enableServiceLinks": false,
        "containers": [{
            "name": "agent-server",
            "image": spec.image.clone().unwrap_or_else(|| settings.image.clone()),
            "imagePullPolicy": pull,
            "command": [
                openhands_workspace::docker::image::SERVER_PATH,
                "--host", "0.0.0.0",
                "--port", port.to_string(),
            ],
            "workingDir": WORKSPACE,
            "ports": [{ "name": "http", "containerPort": port, "protocol": "TCP" }],
            "env": env,
            "resources": { "requests": requests, "limits": limits },
            "readinessProbe": {
                "httpGet": { "path": "/ready", "port": port },
                "periodSeconds": 2,
            },
            "securityContext": security,
            "volumeMounts": [
                { "name": "server-config", "mountPath": CONFIG_DIR, "readOnly": true },
                { "name": "workspace", "mountPath": WORKSPACE },
            ],
        }],
        "volumes": [
            { "name": "server-config", "secret": { "secretName": name, "defaultMode": 0o400 } },
            { "name": "workspace", "emptyDir": {} },
        ],
    });
    if let Some(rc) = &spec.runtime_class {
        pod_spec["runtimeClassName"] = json!(rc);
    }
    json!({
        "apiVersion": SANDBOX.api_version(),
        "kind": SANDBOX.kind,
        "metadata": {
            "name": name,
            "labels": { LABEL: sandbox_id, resources::CREATED_BY_LABEL: CREATED_BY },
        },
        "spec": {
            "service": true,
            "operatingMode": "Running",
            "podTemplate": {
                "metadata": { "labels": { LABEL: sandbox_id } },
                "spec": pod_spec,
            },
        },
    })
}

impl KubernetesEngine {
    /// An engine with `settings`, every API call bounded by `timeout`, a
    /// sandbox given `start_timeout` to become ready.
    pub fn new(
        settings: KubernetesSettings,
        client: AgentClient,
        timeout: Duration,
        start_timeout: Duration,
    ) -> Self {
        Self {
            settings,
            client,
            timeout,
            start_timeout,
            kube: OnceCell::new(),
        }
    }

    /// The engine's settings.
    pub fn settings(&self) -> &KubernetesSettings {
        &self.settings
    }

    /// The API client and the namespace (the setting, else the context's,
    /// else `default`).
    async fn kube(&self) -> Result<&(KubeClient, String), KubeError> {
        self.kube
            .get_or_try_init(|| async {
                let conn = KubeSource {
                    kubeconfig: self.settings.kubeconfig.clone(),
                    context: self.settings.context.clone(),
                }
                .resolve()
                .await?;
                let ns = self
                    .settings
                    .namespace
                    .clone()
                    .or_else(|| conn.namespace.clone())
                    .unwrap_or_else(|| "default".into());
                Ok((KubeClient::new(&conn, self.timeout)?, ns))
            })
            .await
    }

    /// The init key of the warm pool's dormant pods (from its secret).
    async fn pool_init_key(&self) -> Result<String, KubeError> {
        let (kube, ns) = self.kube().await?;
        let name = self.settings.warmpool_secret.as_deref().unwrap_or_default();
        let secret = kube.get(&SECRET, ns, name).await?.ok_or_else(|| {
            KubeError::Invalid(format!(
                "the warm pool's key secret {ns}/{name} does not exist"
            ))
        })?;
        let data = secret
            .pointer(&format!("/data/{POOL_INIT_KEY}"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                KubeError::Invalid(format!(
                    "the secret {ns}/{name} has no {POOL_INIT_KEY:?} key"
                ))
            })?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| KubeError::Invalid(format!("the secret {ns}/{name}: {e}")))?;
        String::from_utf8(bytes)
            .map(|k| k.trim().to_string())
            .ok()
            .filter(|k| !k.is_empty())
            .ok_or_else(|| {
                KubeError::Invalid(format!("the secret {ns}/{name} holds no usable key"))
            })
    }

    /// The `Sandbox` object an engine object stands for now: `None` when
    /// it (or its claim) is gone; a claim not bound yet is an error.
    async fn sandbox_of(&self, obj: &Object) -> Result<Option<Value>, KubeError> {
        let (kube, ns) = self.kube().await?;
        let name = match obj {
            Object::Sandbox(n) => n.clone(),
            Object::Claim(c) => {
                let Some(claim) = kube.get(&SANDBOX_CLAIM, ns, c).await? else {
                    return Ok(None);
                };
                match resources::claim_readiness(&claim) {
                    Readiness::Ready(s) => s,
                    Readiness::Failed(why) => return Err(KubeError::Failed(why)),
                    _ => {
                        let bound = claim
                            .pointer("/status/sandbox/name")
                            .and_then(Value::as_str)
                            .filter(|s| !s.is_empty());
                        match bound {
                            Some(s) => s.to_string(),
                            None => {
                                return Err(KubeError::Invalid(format!(
                                    "its SandboxClaim {c} is not bound to a sandbox"
                                )));
                            }
                        }
                    }
                }
            }
        };
        kube.get(&SANDBOX, ns, &name).await
    }

    async fn release_object(&self, obj: &Object) {
        let Ok((kube, ns)) = self.kube().await else {
            return;
        };
        let deletes: Vec<(&openhands_workspace::kubernetes::ResourceType, &str)> = match obj {
            Object::Sandbox(n) => vec![(&SANDBOX, n), (&SECRET, n)],
            Object::Claim(c) => vec![(&SANDBOX_CLAIM, c)],
        };
        for (rt, name) in deletes {
            if let Err(e) = kube.delete(rt, ns, name).await {
                tracing::warn!(object = %name, "releasing a Kubernetes sandbox: {e}");
            }
        }
    }

    /// Creates the objects of a sandbox; the object and, for a claim, the
    /// init key its dormant agent server awaits its own keys with.
    async fn create(&self, req: &ProvisionRequest) -> Result<(Object, Option<String>), KubeError> {
        let (kube, ns) = self.kube().await?;
        let name = container_name(&req.sandbox_id);
        if let Some(pool) = &self.settings.warmpool {
            let init_key = self.pool_init_key().await?;
            let claim = ClaimRequest {
                name: name.clone(),
                warmpool: pool.clone(),
                labels: BTreeMap::from([(LABEL.to_string(), req.sandbox_id.clone())]),
                created_by: CREATED_BY.into(),
                ..ClaimRequest::default()
            };
            kube.create(
                &SANDBOX_CLAIM,
                ns,
                &claim.manifest(std::time::SystemTime::now()),
            )
            .await?;
            return Ok((Object::Claim(name), Some(init_key)));
        }
        let server_secret = new_credential("").map_err(|e| KubeError::Invalid(e.to_string()))?;
        let config = server_config(&req.key, &server_secret);
        kube.create(
            &SECRET,
            ns,
            &secret_manifest(&name, &req.sandbox_id, &config, &req.runtime.environment),
        )
        .await?;
        let obj = Object::Sandbox(name.clone());
        let manifest = sandbox_manifest(&self.settings, &name, &req.sandbox_id, &req.runtime);
        if let Err(e) = kube.create(&SANDBOX, ns, &manifest).await {
            self.release_object(&obj).await;
            return Err(e);
        }
        Ok((obj, None))
    }

    /// Delivers a claimed pod's own keys: `ep.key` as its session key and a
    /// fresh secret key, authorized by the pool's `init_key`; retried while
    /// the server does not answer yet, until `end`.
    async fn initialize_claimed(
        &self,
        ep: &Endpoint,
        init_key: &str,
        end: Instant,
    ) -> Result<(), InitError> {
        let secret_key = new_credential("")?;
        loop {
            let why = match self.client.initialize(ep, init_key, &secret_key).await {
                Ok(()) => return Ok(()),
                Err(AgentError::Unreachable(why)) => why,
                Err(e) => return Err(self.init_refusal(ep, e).await),
            };
            if Instant::now() >= end {
                return Err(InitError::NoAnswer {
                    url: ep.url.clone(),
                    why,
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Why a claimed pod refused its keys, saying what to fix.
    async fn init_refusal(&self, ep: &Endpoint, e: AgentError) -> InitError {
        let secret = self.settings.warmpool_secret.clone().unwrap_or_default();
        match e.status() {
            Some(404) => InitError::NotDormant { secret, source: e },
            Some(400) | Some(401) => match self.client.init_state(ep).await {
                Ok(state) if state != "dormant" => InitError::AlreadyInitialized { state },
                Ok(_) if e.status() == Some(401) => InitError::InitKeyRefused { secret, source: e },
                _ => InitError::Refused(e),
            },
            _ => InitError::Refused(e),
        }
    }
}

/// Why a claimed warm-pool pod did not take its own keys.
#[derive(Debug, thiserror::Error)]
enum InitError {
    /// No fresh secret key could be made.
    #[error(transparent)]
    Credential(#[from] crate::secrets::SecretError),
    /// The pod's agent server did not answer before the start timeout.
    #[error("its agent server at {url} did not take its keys: {why}")]
    NoAnswer {
        /// The agent server's address.
        url: String,
        /// The last connection failure.
        why: String,
    },
    /// The pool's pods started with their keys (no deferred init).
    #[error(
        "the warm pool's pods are not dormant: their template must start the agent server with OH_DEFERRED_INIT=true and its secret key from the Secret {secret} ({source})"
    )]
    NotDormant {
        /// The pool's key secret.
        secret: String,
        /// The refusal.
        source: AgentError,
    },
    /// The claimed pod already had keys the control plane did not give it.
    #[error(
        "the claimed pod was already {state} with keys the control plane did not give it; it is not used"
    )]
    AlreadyInitialized {
        /// The pod's init state.
        state: String,
    },
    /// The pods do not accept the key in the pool's secret.
    #[error("the warm pool's pods refuse the init key of the Secret {secret} ({source})")]
    InitKeyRefused {
        /// The pool's key secret.
        secret: String,
        /// The refusal.
        source: AgentError,
    },
    /// Any other refusal.
    #[error("the claimed pod refused its keys: {0}")]
    Refused(#[source] AgentError),
}

#[async_trait::async_trait]
impl Engine for KubernetesEngine {
    fn name(&self) -> &'static str {
        KUBERNETES
    }

    async fn provision(&self, req: &ProvisionRequest) -> Result<Provisioned, ProvisionError> {
        let name = container_name(&req.sandbox_id);
        // Left by an earlier start of this sandbox: replaced.
        let leftover = if self.settings.warmpool.is_some() {
            Object::Claim(name)
        } else {
            Object::Sandbox(name)
        };
        self.release_object(&leftover).await;
        let (obj, init_key) = self.create(req).await.map_err(unavailable)?;
        let end = Instant::now() + self.start_timeout;
        let ready = async {
            let (kube, ns) = self.kube().await.map_err(|e| e.to_string())?;
            let sandbox = match &obj {
                Object::Sandbox(n) => n.clone(),
                Object::Claim(c) => resources::wait_claim_ready(kube, ns, c, self.start_timeout)
                    .await
                    .map_err(|e| e.to_string())?,
            };
            let left = end.saturating_duration_since(Instant::now());
            let found = resources::wait_sandbox_ready(kube, ns, &sandbox, left)
                .await
                .map_err(|e| e.to_string())?;
            let url = resources::service_url(&found, self.settings.server_port).ok_or_else(|| {
                format!(
                    "Sandbox {ns}/{sandbox} is ready but reports no service (status.serviceFQDN); its template needs `service: true`"
                )
            })?;
            let ep = Endpoint {
                url: url.clone(),
                key: req.key.clone(),
            };
            if let Some(init_key) = &init_key {
                self.initialize_claimed(&ep, init_key, end)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            let left = end.saturating_duration_since(Instant::now());
            self.client
                .wait_ready(&ep, left)
                .await
                .map_err(|e| format!("its agent server at {url} did not answer: {e}"))?;
            Ok::<_, String>(url)
        }
        .await;
        match ready {
            Ok(url) => Ok(Provisioned {
                engine_id: obj.id(),
                url,
                key: req.key.clone(),
                working_dir: WORKSPACE.into(),
            }),
            Err(why) => {
                self.release_object(&obj).await;
                Err(ProvisionError::Start(why))
            }
        }
    }

    async fn locate(&self, s: &Sandbox, key: &str) -> Located {
        let Some(obj) = s.engine_id.as_deref().and_then(Object::parse) else {
            return Located::Unknown("it has no Kubernetes object recorded".into());
        };
        let found = match self.sandbox_of(&obj).await {
            Ok(Some(f)) => f,
            Ok(None) => {
                return Located::Gone(match obj {
                    Object::Sandbox(n) => format!("its Kubernetes Sandbox {n} no longer exists"),
                    Object::Claim(c) => format!("its Kubernetes SandboxClaim {c} no longer exists"),
                });
            }
            Err(KubeError::Failed(why)) => return Located::Gone(why),
            Err(e) => return Located::Unknown(e.to_string()),
        };
        match resources::sandbox_readiness(&found) {
            Readiness::Ready(_) => {
                let Some(url) = resources::service_url(&found, self.settings.server_port) else {
                    return Located::Unknown("its Sandbox reports no service FQDN".into());
                };
                let ep = Endpoint {
                    url: url.clone(),
                    key: key.to_string(),
                };
                match self.client.check(&ep).await {
                    Ok(()) => Located::Running {
                        url,
                        engine_id: obj.id(),
                    },
                    Err(e) => Located::Unknown(format!("its agent server does not answer: {e}")),
                }
            }
            Readiness::Waiting(why) => Located::Replacing(format!("its pod is not ready ({why})")),
            Readiness::Suspended => Located::Unknown("its Sandbox is suspended".into()),
            Readiness::Failed(why) => Located::Gone(why),
        }
    }

    async fn release(&self, s: &Sandbox) {
        let obj = match s.engine_id.as_deref().and_then(Object::parse) {
            Some(o) => o,
            None if self.settings.warmpool.is_some() => Object::Claim(container_name(&s.id)),
            None => Object::Sandbox(container_name(&s.id)),
        };
        self.release_object(&obj).await;
    }

    async fn list(&self) -> Result<Vec<String>, EngineError> {
        let err = |detail: String| EngineError {
            engine: KUBERNETES,
            detail,
        };
        let (kube, ns) = self.kube().await.map_err(|e| err(e.to_string()))?;
        let mut ids = Vec::new();
        for rt in [&SANDBOX, &SANDBOX_CLAIM] {
            let found = kube
                .list(rt, ns, LABEL)
                .await
                .map_err(|e| err(e.to_string()))?;
            ids.extend(found.iter().filter_map(|o| {
                o.pointer("/metadata/labels")
                    .and_then(|l| l.get(LABEL))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            }));
        }
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    async fn health(&self) -> Result<(), EngineError> {
        let err = |detail: String| EngineError {
            engine: KUBERNETES,
            detail,
        };
        let (kube, ns) = self.kube().await.map_err(|e| err(e.to_string()))?;
        let rt = if self.settings.warmpool.is_some() {
            self.pool_init_key().await.map_err(|e| err(e.to_string()))?;
            &SANDBOX_CLAIM
        } else {
            &SANDBOX
        };
        kube.list(rt, ns, LABEL)
            .await
            .map(drop)
            .map_err(|e| err(e.to_string()))
    }

    fn reaches(&self, _owner: &str) -> bool {
        true
    }

    async fn check_runtime(&self, spec: &RuntimeSpec) -> Result<(), RuntimeRefusal> {
        if self.settings.warmpool.is_some() {
            return match spec.first_setting() {
                None => Ok(()),
                Some(field) => Err(RuntimeRefusal::WarmPool(field)),
            };
        }
        if spec.process_dir.is_some() {
            return Err(RuntimeRefusal::Unsupported {
                field: "working_dir",
                engine: "kubernetes",
            });
        }
        for (k, _) in &spec.environment {
            let ok = !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
                && !k.starts_with(|c: char| c.is_ascii_digit());
            if !ok {
                return Err(RuntimeRefusal::EnvName(k.clone()));
            }
        }
        Ok(())
    }

    async fn pause(&self, _s: &Sandbox) -> Result<(), EngineError> {
        Err(EngineError {
            engine: KUBERNETES,
            detail: "pausing a sandbox is not supported by the kubernetes engine: agent-sandbox suspends a Sandbox by deleting its pod, which would end its processes and lose its files".into(),
        })
    }

    async fn resume(&self, _s: &Sandbox) -> Result<(), EngineError> {
        Err(EngineError {
            engine: KUBERNETES,
            detail:
                "resuming a sandbox is not supported by the kubernetes engine (it never pauses one)"
                    .into(),
        })
    }
}
