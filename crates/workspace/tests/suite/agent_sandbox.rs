//! `AgentSandboxWorkspace` **tested against a served API contract, not a
//! live cluster**: the stand-in Kubernetes API server of
//! `openhands_testkit::kube_api` answers the claim, sandbox and delete
//! calls (its controller binds a claim on a known warm pool to a ready
//! sandbox, reports `WarmPoolNotFound` otherwise); the agent server is ours,
//! started in process, reached directly or through a stand-in `kubectl`
//! whose `port-forward` relays a local port to it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_agent_server::{AppState, Config};
use openhands_testkit::kube_api::{Controller, FakeKubeApi};
use openhands_workspace::WorkspaceError;
use openhands_workspace::agent_sandbox::{
    AgentSandboxWorkspace, AgentSandboxWorkspaceOptions, Connection,
};
use openhands_workspace::kubernetes::KubeError;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

const KEY: &str = "pool-session-key";
const NS: &str = "agents";
const POOL: &str = "openhands-pool";

struct Env {
    api: FakeKubeApi,
    server: openhands_agent_server::ServerHandle,
    dir: tempfile::TempDir,
}

async fn env(pools: &[&str]) -> Env {
    openhands_agent_server::install_tls_provider();
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        session_api_keys: vec![KEY.into()],
        conversations_path: dir.path().join("conversations"),
        workspace_path: dir.path().join("workspace"),
        bash_events_dir: dir.path().join("bash_events"),
        ..Config::default()
    };
    std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
    let server = openhands_agent_server::spawn(
        AppState::new(config).shared(),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    let api = FakeKubeApi::start(Controller {
        pools: pools.iter().map(|p| p.to_string()).collect(),
        ..Controller::default()
    })
    .await
    .unwrap();
    std::fs::write(dir.path().join("kubeconfig"), api.kubeconfig("tok", NS)).unwrap();
    Env { api, server, dir }
}

impl Env {
    fn options(&self, connection: Connection) -> AgentSandboxWorkspaceOptions {
        let mut o = AgentSandboxWorkspaceOptions::new(POOL);
        o.namespace = NS.into();
        o.kubeconfig = Some(self.dir.path().join("kubeconfig"));
        o.connection = connection;
        o.api_key = Some(KEY.into());
        o.working_dir = self
            .dir
            .path()
            .join("workspace")
            .to_string_lossy()
            .into_owned();
        o.sandbox_ready_timeout = Duration::from_secs(10);
        o.health_check_timeout = Duration::from_secs(10);
        o
    }

    fn claims(&self) -> Vec<String> {
        self.api.names("sandboxclaims", NS)
    }
}

#[tokio::test]
async fn a_claim_is_made_driven_paused_resumed_and_deleted() {
    let e = env(&[POOL]).await;
    let mut o = e.options(Connection::Direct(e.server.url()));
    o.labels = BTreeMap::from([("team".into(), "agents".into())]);
    o.pod_labels = BTreeMap::from([("conversation".into(), "c1".into())]);
    o.pod_annotations = BTreeMap::from([("note".into(), "any text".into())]);
    o.shutdown_after_seconds = Some(3600);
    let mut ws = AgentSandboxWorkspace::start(o).await.unwrap();
    assert!(ws.claim_name().starts_with("sandbox-claim-"));
    assert_eq!(ws.claim_name().len(), "sandbox-claim-".len() + 8);
    assert!(ws.sandbox_id().starts_with("openhands-pool-"));

    let create = e
        .api
        .requests()
        .into_iter()
        .find(|r| r.method == "POST")
        .unwrap();
    assert_eq!(
        create.path,
        "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/agents/sandboxclaims"
    );
    assert_eq!(create.authorization.as_deref(), Some("Bearer tok"));
    let claim = create.body.unwrap();
    assert_eq!(claim["apiVersion"], "extensions.agents.x-k8s.io/v1beta1");
    assert_eq!(claim["kind"], "SandboxClaim");
    assert_eq!(claim["spec"]["warmPoolRef"], json!({"name": POOL}));
    assert_eq!(
        claim["metadata"]["labels"],
        json!({"team": "agents", "agents.x-k8s.io/created-by": "openhands-sdk"})
    );
    assert_eq!(
        claim["spec"]["additionalPodMetadata"],
        json!({"labels": {"conversation": "c1"}, "annotations": {"note": "any text"}})
    );
    assert_eq!(claim["spec"]["lifecycle"]["shutdownPolicy"], "Delete");
    let shutdown = claim["spec"]["lifecycle"]["shutdownTime"].as_str().unwrap();
    assert!(
        shutdown.ends_with('Z') && shutdown.len() == 20,
        "{shutdown}"
    );
    assert!(
        claim["metadata"]["annotations"]["agents.x-k8s.io/client-first-requested-at"].is_string()
    );

    let out = ws
        .workspace()
        .execute_command("echo hello-from-pod", None, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(out.exit_code, 0);
    assert_eq!(out.stdout.trim(), "hello-from-pod");

    // Pause and resume patch the adopted sandbox's operatingMode.
    let sandbox = ws.sandbox_id().to_string();
    ws.pause().await.unwrap();
    let mode =
        |e: &Env| e.api.object("sandboxes", NS, &sandbox).unwrap()["spec"]["operatingMode"].clone();
    assert_eq!(mode(&e), "Suspended");
    let patch = e
        .api
        .requests()
        .into_iter()
        .rfind(|r| r.method == "PATCH")
        .unwrap();
    assert_eq!(
        patch.path,
        format!("/apis/agents.x-k8s.io/v1beta1/namespaces/agents/sandboxes/{sandbox}")
    );
    assert_eq!(
        patch.content_type.as_deref(),
        Some("application/merge-patch+json")
    );
    assert_eq!(
        patch.body.unwrap(),
        json!({"spec": {"operatingMode": "Suspended"}})
    );
    ws.resume().await.unwrap();
    assert_eq!(mode(&e), "Running");
    let again = ws
        .workspace()
        .execute_command("echo after-resume", None, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(again.stdout.trim(), "after-resume");

    ws.close().await.unwrap();
    assert!(e.claims().is_empty(), "the claim is deleted on close");
}

/// A stand-in `kubectl`: records its arguments and relays the local port
/// of `port-forward … LOCAL:REMOTE` to 127.0.0.1:REMOTE.
const KUBECTL: &str = r#"#!/usr/bin/python3
import socket, sys, threading
open(sys.argv[0] + ".args", "a").write(" ".join(sys.argv[1:]) + "\n")
local, remote = sys.argv[-1].split(":")
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", int(local))); srv.listen(16)
print("Forwarding from 127.0.0.1:%s -> %s" % (local, remote), flush=True)
def pipe(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d: break
            b.sendall(d)
    except OSError: pass
    finally:
        for s in (a, b):
            try: s.shutdown(socket.SHUT_RDWR)
            except OSError: pass
while True:
    c, _ = srv.accept()
    u = socket.create_connection(("127.0.0.1", int(remote)))
    threading.Thread(target=pipe, args=(c, u), daemon=True).start()
    threading.Thread(target=pipe, args=(u, c), daemon=True).start()
"#;

#[tokio::test]
async fn port_forward_runs_kubectl_to_the_sandboxs_pod() {
    let e = env(&[POOL]).await;
    let kubectl = e.dir.path().join("kubectl");
    std::fs::write(&kubectl, KUBECTL).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&kubectl, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut o = e.options(Connection::PortForward);
    o.kubectl = kubectl.clone();
    o.kube_context = Some("test".into());
    let server_port: u16 = e.server.url().rsplit(':').next().unwrap().parse().unwrap();
    o.server_port = server_port;
    let ws = AgentSandboxWorkspace::start(o).await.unwrap();
    assert!(ws.host().starts_with("http://127.0.0.1:"));
    assert_ne!(ws.host(), e.server.url(), "reached through the forward");
    let out = ws
        .workspace()
        .execute_command("echo through-the-forward", None, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(out.stdout.trim(), "through-the-forward");
    let args = std::fs::read_to_string(Path::new(&format!("{}.args", kubectl.display()))).unwrap();
    let local = ws.host().rsplit(':').next().unwrap().to_string();
    assert_eq!(
        args.lines().next().unwrap(),
        format!(
            "port-forward --kubeconfig {} --context test -n agents pod/{} {local}:{server_port}",
            e.dir.path().join("kubeconfig").display(),
            ws.sandbox_id()
        )
    );
    ws.close().await.unwrap();
    assert!(e.claims().is_empty());
}

#[tokio::test]
async fn failures_are_clear_and_leave_no_claim() {
    // An unknown warm pool fails at once, and the claim is deleted.
    let e = env(&[]).await;
    let started = std::time::Instant::now();
    let err = AgentSandboxWorkspace::start(e.options(Connection::Direct(e.server.url())))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("SandboxWarmPool does not exist"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(e.claims().is_empty());

    // A refused create names the status, the reason and what was tried.
    e.api.fail(
        "POST",
        "sandboxclaims",
        403,
        "Forbidden",
        "sandboxclaims.extensions.agents.x-k8s.io is forbidden",
    );
    let err = AgentSandboxWorkspace::start(e.options(Connection::Direct(e.server.url())))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            WorkspaceError::Kubernetes(KubeError::Api { code: 403, .. })
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("creating sandboxclaims.extensions.agents.x-k8s.io"),
        "{err}"
    );

    // Bad options are refused before anything is created.
    let mut o = e.options(Connection::Direct(String::new()));
    assert!(
        AgentSandboxWorkspace::start(o.clone())
            .await
            .unwrap_err()
            .to_string()
            .contains("'direct' requires")
    );
    o.connection = Connection::Direct(e.server.url());
    o.labels = BTreeMap::from([("bad key!".into(), "v".into())]);
    assert!(
        AgentSandboxWorkspace::start(o)
            .await
            .unwrap_err()
            .to_string()
            .contains("bad key!")
    );
    assert_eq!(
        e.api
            .requests()
            .iter()
            .filter(|r| r.method == "POST")
            .count(),
        2
    );
}
