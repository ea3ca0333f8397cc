//! The Kubernetes engine (`OH_CONTROL_SANDBOX=kubernetes`) **tested
//! against a served API contract, not a live cluster**: a local stand-in
//! API server (`openhands_testkit::kube_api`) answers the exact calls
//! agent-sandbox clients make and records them, a small controller marks
//! sandboxes ready with `status.serviceFQDN` = `127.0.0.1`, and a stand-in
//! agent server on the configured port accepts only the session keys the
//! API server's Secrets hold. Checked: the golden manifests of what the
//! engine creates (Secret, Sandbox, SandboxClaim), that the key lives only
//! in the Secret, readiness and the endpoint, `locate` for running, gone,
//! not-ready and finished sandboxes, release, list, the warm-pool claim
//! path (a real agent server started dormant stands for the pool's pod and
//! gets the sandbox's own key by `POST /api/init`), and API errors
//! (401/403/404/409) and controller failures as clear errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::RemoteHost;
use axum::http::{HeaderMap, StatusCode};
use base64::Engine as _;
use openhands_control::agent_client::{AgentClient, Endpoint};
use openhands_control::config::KubernetesSettings;
use openhands_control::engines::kubernetes::KubernetesEngine;
use openhands_control::engines::{Engine, Located, ProvisionRequest, RuntimeSpec};
use openhands_control::store::sandboxes::Sandbox;
use openhands_testkit::kube_api::{Controller, FakeKubeApi};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

const NS: &str = "sandboxes";
const TOKEN: &str = "test-token";
/// The path of the namespace's `Sandbox` collection.
const SANDBOXES: &str = "/apis/agents.x-k8s.io/v1beta1/namespaces/sandboxes/sandboxes";

/// Decoded `data` entry of a Secret.
fn secret_data(secret: &Value, key: &str) -> Option<String> {
    let b = secret
        .pointer(&format!("/data/{}", key.replace('/', "~1")))?
        .as_str()?;
    String::from_utf8(base64::engine::general_purpose::STANDARD.decode(b).ok()?).ok()
}

/// The session keys the API server's Secrets hold (the servers'
/// configurations).
fn keys_of(api: &FakeKubeApi) -> Vec<String> {
    let mut keys = Vec::new();
    for name in api.names("secrets", NS) {
        let s = api.object("secrets", NS, &name).unwrap();
        if let Some(cfg) = secret_data(&s, "server.json") {
            let cfg: Value = serde_json::from_str(&cfg).unwrap();
            for k in cfg["session_api_keys"].as_array().unwrap() {
                keys.push(k.as_str().unwrap().to_string());
            }
        }
    }
    keys
}

/// A stand-in agent server answering the control plane's readiness call
/// for the keys the API server's Secrets hold; its port.
async fn agent_server(api: FakeKubeApi) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new().fallback(move |headers: HeaderMap| {
        let api = api.clone();
        async move {
            let key = headers
                .get("x-session-api-key")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string();
            if keys_of(&api).contains(&key) {
                (StatusCode::OK, axum::Json(json!(0)))
            } else {
                (
                    StatusCode::UNAUTHORIZED,
                    axum::Json(json!({"detail": "bad key"})),
                )
            }
        }
    });
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    port
}

/// The init key of the test's warm pool.
const POOL_INIT_KEY: &str = "pool-init-key-1";

struct Env {
    api: FakeKubeApi,
    engine: KubernetesEngine,
    /// With a warm pool: the pool's one pod, a real agent server started
    /// dormant with the pool's init key.
    pod: Option<RemoteHost>,
    _dir: tempfile::TempDir,
}

async fn env(controller: Controller, pool: bool) -> Env {
    let api = FakeKubeApi::start(controller).await.unwrap();
    let pod = pool.then(|| RemoteHost::start_dormant(POOL_INIT_KEY));
    let port = match &pod {
        Some(pod) => pod.url.rsplit(':').next().unwrap().parse().unwrap(),
        None => agent_server(api.clone()).await,
    };
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("config");
    std::fs::write(&kubeconfig, api.kubeconfig(TOKEN, NS)).unwrap();
    let settings = KubernetesSettings {
        namespace: None,
        image: "registry.example/openhands/agent-server:1".into(),
        cpu_request: (!pool).then_some(0.5),
        cpu_limit: (!pool).then_some(2.0),
        memory_request_mb: (!pool).then_some(512),
        memory_limit_mb: (!pool).then_some(2048),
        warmpool: pool.then(|| "openhands-pool".to_string()),
        warmpool_secret: pool.then(|| "openhands-pool-key".to_string()),
        kubeconfig: Some(kubeconfig),
        context: None,
        server_port: port,
    };
    let engine = KubernetesEngine::new(
        settings,
        AgentClient::new(Duration::from_secs(5)),
        Duration::from_secs(5),
        Duration::from_secs(10),
    );
    Env {
        api,
        engine,
        pod,
        _dir: dir,
    }
}

fn request(id: &str) -> ProvisionRequest {
    ProvisionRequest {
        sandbox_id: id.into(),
        key: format!("ohs_key_of_{id}"),
        runtime: RuntimeSpec::default(),
    }
}

fn row(id: &str, engine_id: &str) -> Sandbox {
    Sandbox {
        id: id.into(),
        placement: "kubernetes".into(),
        engine: Some("kubernetes".into()),
        engine_id: Some(engine_id.into()),
        owner_instance: "i".into(),
        working_dir: "/workspace".into(),
        created_at: 0,
        ..crate::common::rows::sandbox("t")
    }
}

/// `obj` without what the server or the moment adds, the agent server's
/// (random) port replaced by 8000.
fn normalized(mut obj: Value, port: u16) -> Value {
    if let Some(m) = obj["metadata"].as_object_mut() {
        for k in ["uid", "resourceVersion", "namespace"] {
            m.remove(k);
        }
        if let Some(a) = m.get_mut("annotations").and_then(Value::as_object_mut) {
            for v in a.values_mut() {
                *v = json!("<time>");
            }
        }
    }
    obj.as_object_mut().unwrap().remove("status");
    let text = obj.to_string().replace(&port.to_string(), "8000");
    serde_json::from_str(&text).unwrap()
}

/// Compares with the golden file (`UPDATE_GOLDEN=1` rewrites it).
fn golden(name: &str, actual: &Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/kubernetes")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_string_pretty(actual).unwrap() + "\n").unwrap();
    }
    let expected: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        actual,
        &expected,
        "{name} differs from the golden manifest:\n{}",
        serde_json::to_string_pretty(actual).unwrap()
    );
}

#[tokio::test]
async fn a_sandbox_is_a_secret_and_a_sandbox_reached_through_its_service() {
    let e = env(Controller::default(), false).await;
    let p = e.engine.provision(&request("sb1")).await.unwrap();
    let port = e.engine_port();
    assert_eq!(p.engine_id, "sandbox/oh-sandbox-sb1");
    assert_eq!(p.url, format!("http://127.0.0.1:{port}"));
    assert_eq!(p.key, "ohs_key_of_sb1");
    assert_eq!(p.working_dir, "/workspace");

    // What was created: the Secret first, then the Sandbox, with the token.
    let creates: Vec<_> = e
        .api
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    assert_eq!(
        creates.iter().map(|r| r.path.as_str()).collect::<Vec<_>>(),
        [
            "/api/v1/namespaces/sandboxes/secrets",
            "/apis/agents.x-k8s.io/v1beta1/namespaces/sandboxes/sandboxes",
        ]
    );
    assert!(
        e.api
            .requests()
            .iter()
            .all(|r| r.authorization.as_deref() == Some("Bearer test-token"))
    );
    let sandbox = creates[1].body.clone().unwrap();
    assert!(
        !sandbox.to_string().contains("ohs_key_of_sb1"),
        "the key is never in the Sandbox"
    );
    golden("sandbox.json", &normalized(sandbox, port));
    // The Secret holds the agent server's configuration with the key.
    let mut secret = creates[0].body.clone().unwrap();
    let cfg: Value = serde_json::from_str(&secret_data(&secret, "server.json").unwrap()).unwrap();
    assert_eq!(cfg["session_api_keys"], json!(["ohs_key_of_sb1"]));
    assert_eq!(cfg["workspace_path"], "/workspace");
    assert_eq!(cfg["sandbox"], "namespaces");
    secret["data"]["server.json"] = json!("<config>");
    golden("secret.json", &normalized(secret, port));

    // Found again with its key; listed by its label.
    let s = row("sb1", &p.engine_id);
    assert_eq!(
        e.engine.locate(&s, &p.key).await,
        Located::Running {
            url: p.url.clone(),
            engine_id: p.engine_id.clone()
        }
    );
    assert!(matches!(
        e.engine.locate(&s, "wrong").await,
        Located::Unknown(_)
    ));
    assert_eq!(e.engine.list().await.unwrap(), ["sb1"]);
    assert!(e.engine.health().await.is_ok());

    // Not ready: being replaced (its processes are lost); finished: gone.
    e.api.set_status(
        "sandboxes",
        NS,
        "oh-sandbox-sb1",
        json!({"conditions": [{"type": "Ready", "status": "False", "reason": "DependenciesNotReady", "message": "Pod is not Ready"}]}),
    );
    assert!(
        matches!(e.engine.locate(&s, &p.key).await, Located::Replacing(w) if w.contains("DependenciesNotReady"))
    );
    e.api.set_status(
        "sandboxes",
        NS,
        "oh-sandbox-sb1",
        json!({"conditions": [{"type": "Finished", "status": "True", "reason": "PodFailed", "message": "exit 1"}]}),
    );
    assert!(
        matches!(e.engine.locate(&s, &p.key).await, Located::Gone(w) if w.contains("PodFailed"))
    );

    // Released: both objects deleted; gone afterwards.
    e.engine.release(&s).await;
    assert!(e.api.object("sandboxes", NS, "oh-sandbox-sb1").is_none());
    assert!(e.api.object("secrets", NS, "oh-sandbox-sb1").is_none());
    assert!(
        matches!(e.engine.locate(&s, &p.key).await, Located::Gone(w) if w.contains("no longer exists"))
    );
    assert!(e.engine.list().await.unwrap().is_empty());
    // Pausing is refused, saying why.
    let err = e.engine.pause(&s).await.unwrap_err();
    assert!(err.detail.contains("deleting its pod"), "{err}");
}

#[tokio::test]
async fn a_runtime_spec_goes_into_the_pod_and_its_environment_into_the_secret() {
    let e = env(Controller::default(), false).await;
    let spec = RuntimeSpec {
        image: Some("custom/image:2".into()),
        environment: vec![("API_TOKEN".into(), "s3cret-value".into())],
        runtime_class: Some("gvisor".into()),
        user: Some((1000, 1000)),
        ..RuntimeSpec::default()
    };
    assert!(e.engine.check_runtime(&spec).await.is_ok());
    let mut req = request("sb2");
    req.runtime = spec;
    e.engine.provision(&req).await.unwrap();
    let sb = e.api.object("sandboxes", NS, "oh-sandbox-sb2").unwrap();
    assert!(!sb.to_string().contains("s3cret-value"));
    let pod = &sb["spec"]["podTemplate"]["spec"];
    assert_eq!(pod["runtimeClassName"], "gvisor");
    let c = &pod["containers"][0];
    assert_eq!(c["image"], "custom/image:2");
    assert_eq!(c["securityContext"]["runAsUser"], 1000);
    let env = c["env"].as_array().unwrap();
    assert!(env.contains(&json!({"name": "API_TOKEN", "valueFrom": {"secretKeyRef": {"name": "oh-sandbox-sb2", "key": "env.API_TOKEN"}}})));
    let secret = e.api.object("secrets", NS, "oh-sandbox-sb2").unwrap();
    assert_eq!(
        secret_data(&secret, "env.API_TOKEN").as_deref(),
        Some("s3cret-value")
    );
    let bad = RuntimeSpec {
        process_dir: Some("/srv".into()),
        ..RuntimeSpec::default()
    };
    assert!(
        e.engine
            .check_runtime(&bad)
            .await
            .unwrap_err()
            .to_string()
            .contains("working_dir")
    );
}

/// The warm pool's key Secret holding `init_key`.
fn pool_secret(init_key: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "openhands-pool-key"},
           "data": {"init_api_key": base64::engine::general_purpose::STANDARD.encode(init_key)}})
}

#[tokio::test]
async fn a_warm_pool_sandbox_is_a_claim_whose_pod_gets_its_own_key() {
    let e = env(
        Controller {
            pools: vec!["openhands-pool".into()],
            ..Controller::default()
        },
        true,
    )
    .await;
    // Without the pool's key secret the engine is not healthy.
    let err = e.engine.health().await.unwrap_err();
    assert!(err.detail.contains("openhands-pool-key"), "{err}");
    e.api.insert("secrets", NS, pool_secret(POOL_INIT_KEY));
    assert!(e.engine.health().await.is_ok());
    let p = e.engine.provision(&request("sb3")).await.unwrap();
    assert_eq!(p.engine_id, "claim/oh-sandbox-sb3");
    // The sandbox's own key, not one the pool's pods share.
    assert_eq!(p.key, "ohs_key_of_sb3");
    let port = e.engine_port();
    assert_eq!(p.url, format!("http://127.0.0.1:{port}"));
    let client = AgentClient::new(Duration::from_secs(5));
    let with = |key: &str| Endpoint {
        url: p.url.clone(),
        key: key.into(),
    };
    // The pod was initialized: it accepts the sandbox's key and nothing
    // else, and the pool's init key no longer opens it.
    client.check(&with(&p.key)).await.unwrap();
    assert_eq!(
        client
            .check(&with(POOL_INIT_KEY))
            .await
            .unwrap_err()
            .status(),
        Some(401)
    );
    assert_eq!(
        client
            .initialize(&with("other"), POOL_INIT_KEY, "s")
            .await
            .unwrap_err()
            .status(),
        Some(401)
    );
    let claim = e
        .api
        .requests()
        .into_iter()
        .find(|r| r.method == "POST")
        .unwrap();
    assert_eq!(
        claim.path,
        "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/sandboxes/sandboxclaims"
    );
    golden("claim.json", &normalized(claim.body.unwrap(), port));
    // Nothing of ours but the claim: no Secret, no Sandbox created.
    assert_eq!(e.api.names("secrets", NS), ["openhands-pool-key"]);
    let s = row("sb3", &p.engine_id);
    assert!(matches!(
        e.engine.locate(&s, &p.key).await,
        Located::Running { .. }
    ));
    assert_eq!(e.engine.list().await.unwrap(), ["sb3"]);
    // A runtime asking for an image is refused: the template decides.
    let spec = RuntimeSpec {
        image: Some("x".into()),
        ..RuntimeSpec::default()
    };
    assert!(
        e.engine
            .check_runtime(&spec)
            .await
            .unwrap_err()
            .to_string()
            .contains("warm pool")
    );
    e.engine.release(&s).await;
    assert!(
        e.api
            .object("sandboxclaims", NS, "oh-sandbox-sb3")
            .is_none()
    );
    assert!(
        matches!(e.engine.locate(&s, &p.key).await, Located::Gone(w) if w.contains("SandboxClaim"))
    );
    // The pod the pool hands out next was initialized by somebody else
    // (here: the first claim's): refused by name, its claim released.
    let err = e
        .engine
        .provision(&request("sb5"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("already ready"), "{err}");
    assert!(e.api.names("sandboxclaims", NS).is_empty(), "released");
    assert!(e.pod.is_some());
}

#[tokio::test]
async fn a_warm_pool_with_a_wrong_init_key_is_refused_by_name() {
    let e = env(
        Controller {
            pools: vec!["openhands-pool".into()],
            ..Controller::default()
        },
        true,
    )
    .await;
    e.api
        .insert("secrets", NS, pool_secret("not-the-pools-key"));
    let err = e
        .engine
        .provision(&request("sb6"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("refuse the init key of the Secret openhands-pool-key"),
        "{err}"
    );
    assert!(e.api.names("sandboxclaims", NS).is_empty(), "released");
    // The pod stays dormant for a claim with the right key.
    let client = AgentClient::new(Duration::from_secs(5));
    let pod = Endpoint {
        url: e.pod.as_ref().unwrap().url.clone(),
        key: String::new(),
    };
    assert_eq!(client.init_state(&pod).await.unwrap(), "dormant");
}

#[tokio::test]
async fn an_unknown_warm_pool_fails_at_once_and_leaves_no_claim() {
    let e = env(Controller::default(), true).await;
    e.api.insert("secrets", NS, pool_secret(POOL_INIT_KEY));
    let started = std::time::Instant::now();
    let err = e
        .engine
        .provision(&request("sb4"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("SandboxWarmPool does not exist"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5), "not waited out");
    assert!(
        e.api.names("sandboxclaims", NS).is_empty(),
        "the claim is deleted"
    );
}

#[tokio::test]
async fn api_refusals_are_clear_errors_and_leave_nothing_behind() {
    let e = env(Controller::default(), false).await;
    e.api.fail("POST", SANDBOXES, 403, "Forbidden",
        "sandboxes.agents.x-k8s.io is forbidden: User \"system:serviceaccount:oh:control\" cannot create resource \"sandboxes\"");
    let err = e
        .engine
        .provision(&request("sb5"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("403 Forbidden") && err.contains("RBAC") && err.contains("cannot create"),
        "{err}"
    );
    assert!(
        e.api.object("secrets", NS, "oh-sandbox-sb5").is_none(),
        "the secret is removed again"
    );

    e.api.heal();
    e.api.fail(
        "POST",
        SANDBOXES,
        404,
        "NotFound",
        "the server could not find the requested resource",
    );
    let err = e
        .engine
        .provision(&request("sb6"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("404") && err.contains("CRD"), "{err}");

    e.api.heal();
    e.api.fail(
        "POST",
        "/secrets",
        409,
        "AlreadyExists",
        "secrets \"oh-sandbox-sb7\" already exists",
    );
    let err = e
        .engine
        .provision(&request("sb7"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("409") && err.contains("exists already"),
        "{err}"
    );

    e.api.heal();
    e.api
        .fail("GET", "/sandboxes", 401, "Unauthorized", "Unauthorized");
    let err = e.engine.health().await.unwrap_err().to_string();
    assert!(err.contains("401") && err.contains("not accepted"), "{err}");
    let s = row("sb8", "sandbox/oh-sandbox-sb8");
    assert!(matches!(e.engine.locate(&s, "k").await, Located::Unknown(w) if w.contains("401")));
}

#[tokio::test]
async fn a_sandbox_that_never_gets_ready_times_out_and_is_removed() {
    let e = env(
        Controller {
            auto_ready: false,
            ..Controller::default()
        },
        false,
    )
    .await;
    let engine = KubernetesEngine::new(
        e.engine_settings(),
        AgentClient::new(Duration::from_secs(2)),
        Duration::from_secs(2),
        Duration::from_secs(2),
    );
    let err = engine
        .provision(&request("sb9"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("not ready within"), "{err}");
    assert!(e.api.object("sandboxes", NS, "oh-sandbox-sb9").is_none());
    assert!(e.api.object("secrets", NS, "oh-sandbox-sb9").is_none());
}

impl Env {
    fn engine_port(&self) -> u16 {
        self.engine.settings().server_port
    }

    fn engine_settings(&self) -> KubernetesSettings {
        self.engine.settings().clone()
    }
}
