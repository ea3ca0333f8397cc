//! A stand-in Kubernetes API server serving the contract the agent-sandbox
//! clients use — not a cluster: create, get, list (label selector),
//! merge-patch and delete of `Secret` (`v1`), `Sandbox`
//! (`agents.x-k8s.io/v1beta1`) and `SandboxClaim`
//! (`extensions.agents.x-k8s.io/v1beta1`), answering with the API server's
//! shapes (`Status` objects on errors: 404 `NotFound`, 409
//! `AlreadyExists`, injected 401/403/…), recording every request.
//!
//! A small controller stands in for agent-sandbox's: a created `Sandbox`
//! becomes `Ready` with `status.serviceFQDN` (when
//! [`Controller::auto_ready`]), a `SandboxClaim` on a known warm pool
//! adopts a new `Sandbox` of that pool and is `Ready`, one on an unknown
//! pool reports `WarmPoolNotFound`.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{OriginalUri, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One request the server received.
#[derive(Debug, Clone)]
pub struct KubeRequest {
    /// HTTP method.
    pub method: String,
    /// The path (no query).
    pub path: String,
    /// The query string.
    pub query: String,
    /// The `Authorization` header.
    pub authorization: Option<String>,
    /// The `Content-Type` header.
    pub content_type: Option<String>,
    /// The JSON body.
    pub body: Option<Value>,
}

/// An error answered instead of the normal one.
#[derive(Debug, Clone)]
pub struct Fault {
    /// Method it applies to.
    pub method: String,
    /// Part of the path it applies to.
    pub path_contains: String,
    /// HTTP status.
    pub code: u16,
    /// The `Status` reason.
    pub reason: String,
    /// The `Status` message.
    pub message: String,
}

/// What the stand-in controller does.
#[derive(Debug, Clone)]
pub struct Controller {
    /// Mark created sandboxes ready.
    pub auto_ready: bool,
    /// The `serviceFQDN` ready sandboxes report.
    pub service_fqdn: String,
    /// Warm pools that exist.
    pub pools: Vec<String>,
}

impl Default for Controller {
    fn default() -> Self {
        Self {
            auto_ready: true,
            service_fqdn: "127.0.0.1".into(),
            pools: Vec::new(),
        }
    }
}

type Key = (String, String, String);

#[derive(Default)]
struct Inner {
    objects: BTreeMap<Key, Value>,
    requests: Vec<KubeRequest>,
    faults: Vec<Fault>,
    controller: Controller,
    version: u64,
    pool_seq: u64,
}

/// The running stand-in server.
#[derive(Clone)]
pub struct FakeKubeApi {
    url: String,
    inner: Arc<Mutex<Inner>>,
}

impl std::fmt::Debug for FakeKubeApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeKubeApi")
            .field("url", &self.url)
            .finish()
    }
}

/// The group/version each served plural lives in.
const SERVED: &[(&str, &str, &str)] = &[
    ("", "v1", "secrets"),
    ("agents.x-k8s.io", "v1beta1", "sandboxes"),
    ("extensions.agents.x-k8s.io", "v1beta1", "sandboxclaims"),
];

fn status(code: u16, reason: &str, message: &str) -> Response {
    let body = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    });
    (
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        axum::Json(body),
    )
        .into_response()
}

/// `(plural, namespace, name)` of a served path.
fn parse(path: &str) -> Option<(String, String, Option<String>)> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, rest) = match parts.as_slice() {
        ["api", "v1", rest @ ..] => (("", "v1"), rest),
        ["apis", g, v, rest @ ..] => ((*g, *v), rest),
        _ => return None,
    };
    let (ns, plural, name) = match rest {
        ["namespaces", ns, plural] => (*ns, *plural, None),
        ["namespaces", ns, plural, name] => (*ns, *plural, Some(name.to_string())),
        _ => return None,
    };
    SERVED
        .iter()
        .any(|(g, v, p)| (*g, *v) == group && *p == plural)
        .then(|| (plural.to_string(), ns.to_string(), name))
}

fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

fn matches(obj: &Value, selector: &str) -> bool {
    let labels = obj
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or(json!({}));
    selector
        .split(',')
        .filter(|s| !s.is_empty())
        .all(|req| match req.split_once('=') {
            Some((k, v)) => labels.get(k).and_then(Value::as_str) == Some(v),
            None => labels.get(req).is_some(),
        })
}

/// The status of a ready sandbox.
pub fn ready_status(name: &str, fqdn: &str) -> Value {
    json!({
        "serviceFQDN": fqdn,
        "service": name,
        "conditions": [{
            "type": "Ready", "status": "True", "reason": "DependenciesReady",
            "message": "Pod is Ready; Service Exists",
            "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1,
        }],
        "selector": format!("agents.x-k8s.io/sandbox-name-hash={name}"),
        "podIPs": ["127.0.0.1"],
    })
}

impl Inner {
    fn bump(&mut self, obj: &mut Value) {
        self.version += 1;
        obj["metadata"]["resourceVersion"] = json!(self.version.to_string());
    }

    /// What agent-sandbox's controllers do after a create.
    fn reconcile(&mut self, plural: &str, ns: &str, name: &str) {
        let c = self.controller.clone();
        match plural {
            "sandboxes" if c.auto_ready => {
                if let Some(mut o) = self
                    .objects
                    .remove(&(plural.into(), ns.into(), name.into()))
                {
                    o["status"] = ready_status(name, &c.service_fqdn);
                    self.bump(&mut o);
                    self.objects
                        .insert((plural.into(), ns.into(), name.into()), o);
                }
            }
            "sandboxclaims" => {
                let key: Key = (plural.into(), ns.into(), name.into());
                let Some(mut claim) = self.objects.remove(&key) else {
                    return;
                };
                let pool = claim
                    .pointer("/spec/warmPoolRef/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                if c.pools.contains(&pool) {
                    self.pool_seq += 1;
                    let sandbox = format!("{pool}-{:05}", self.pool_seq);
                    let mut sb = json!({
                        "apiVersion": "agents.x-k8s.io/v1beta1",
                        "kind": "Sandbox",
                        "metadata": {
                            "name": sandbox, "namespace": ns,
                            "labels": {"agents.x-k8s.io/warm-pool-sandbox": pool},
                        },
                        "spec": {"operatingMode": "Running", "service": true},
                        "status": ready_status(&sandbox, &c.service_fqdn),
                    });
                    self.bump(&mut sb);
                    self.objects
                        .insert(("sandboxes".into(), ns.into(), sandbox.clone()), sb);
                    claim["status"] = json!({
                        "conditions": [{"type": "Ready", "status": "True", "reason": "SandboxReady", "message": ""}],
                        "sandbox": {"name": sandbox, "podIPs": ["127.0.0.1"]},
                    });
                } else {
                    claim["status"] = json!({
                        "conditions": [{
                            "type": "Ready", "status": "False", "reason": "WarmPoolNotFound",
                            "message": format!("SandboxWarmPool {pool:?} not found"),
                        }],
                    });
                }
                self.bump(&mut claim);
                self.objects.insert(key, claim);
            }
            _ => {}
        }
    }
}

async fn handle(
    State(api): State<FakeKubeApi>,
    method: Method,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let query = uri.query().unwrap_or_default().to_string();
    let header = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let body: Option<Value> = serde_json::from_slice(&body).ok();
    let mut inner = api.inner.lock();
    inner.requests.push(KubeRequest {
        method: method.to_string(),
        path: path.clone(),
        query: query.clone(),
        authorization: header("authorization"),
        content_type: header("content-type"),
        body: body.clone(),
    });
    if let Some(f) = inner
        .faults
        .iter()
        .find(|f| f.method == method.as_str() && path.contains(&f.path_contains))
    {
        return status(f.code, &f.reason, &f.message);
    }
    let Some((plural, ns, name)) = parse(&path) else {
        return status(
            404,
            "NotFound",
            "the server could not find the requested resource",
        );
    };
    let missing = |name: &str| status(404, "NotFound", &format!("{plural} {name:?} not found"));
    match (method.as_str(), name) {
        ("POST", None) => {
            let Some(mut obj) = body else {
                return status(400, "BadRequest", "the body is not JSON");
            };
            let Some(name) = obj
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .map(str::to_string)
            else {
                return status(422, "Invalid", "metadata.name: Required value");
            };
            let key: Key = (plural.clone(), ns.clone(), name.clone());
            if inner.objects.contains_key(&key) {
                return status(
                    409,
                    "AlreadyExists",
                    &format!("{plural} {name:?} already exists"),
                );
            }
            obj["metadata"]["namespace"] = json!(ns);
            obj["metadata"]["uid"] = json!(uuid::Uuid::new_v4().to_string());
            inner.bump(&mut obj);
            inner.objects.insert(key, obj.clone());
            inner.reconcile(&plural, &ns, &name);
            (StatusCode::CREATED, axum::Json(obj)).into_response()
        }
        ("GET", None) => {
            let selector = url_param(&query, "labelSelector").unwrap_or_default();
            let items: Vec<Value> = inner
                .objects
                .iter()
                .filter(|((p, n, _), o)| *p == plural && *n == ns && matches(o, &selector))
                .map(|(_, o)| o.clone())
                .collect();
            axum::Json(json!({"kind": "List", "apiVersion": "v1", "metadata": {}, "items": items}))
                .into_response()
        }
        ("GET", Some(name)) => match inner
            .objects
            .get(&(plural.clone(), ns.clone(), name.clone()))
        {
            Some(o) => axum::Json(o.clone()).into_response(),
            None => missing(&name),
        },
        ("PATCH", Some(name)) => {
            let key: Key = (plural.clone(), ns.clone(), name.clone());
            let Some(mut o) = inner.objects.remove(&key) else {
                return missing(&name);
            };
            merge(&mut o, &body.unwrap_or(Value::Null));
            inner.bump(&mut o);
            inner.objects.insert(key, o.clone());
            axum::Json(o).into_response()
        }
        ("DELETE", Some(name)) => {
            match inner
                .objects
                .remove(&(plural.clone(), ns.clone(), name.clone()))
            {
                Some(_) => {
                    axum::Json(json!({"kind": "Status", "apiVersion": "v1", "status": "Success"}))
                        .into_response()
                }
                None => missing(&name),
            }
        }
        _ => status(
            405,
            "MethodNotAllowed",
            "the server does not allow this method",
        ),
    }
}

fn url_param(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == name).then(|| decode(v))
    })
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl FakeKubeApi {
    /// Starts the server on a free loopback port with `controller`.
    pub async fn start(controller: Controller) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let api = Self {
            url,
            inner: Arc::new(Mutex::new(Inner {
                controller,
                ..Inner::default()
            })),
        };
        let app = Router::new().fallback(handle).with_state(api.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(api)
    }

    /// Base URL of the server.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A kubeconfig (YAML) pointing at the server with `token`.
    pub fn kubeconfig(&self, token: &str, namespace: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: test\nclusters:\n- name: fake\n  cluster:\n    server: {}\ncontexts:\n- name: test\n  context:\n    cluster: fake\n    user: tester\n    namespace: {namespace}\nusers:\n- name: tester\n  user:\n    token: {token}\n",
            self.url
        )
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<KubeRequest> {
        self.inner.lock().requests.clone()
    }

    /// The stored object, if any.
    pub fn object(&self, plural: &str, ns: &str, name: &str) -> Option<Value> {
        self.inner
            .lock()
            .objects
            .get(&(plural.into(), ns.into(), name.into()))
            .cloned()
    }

    /// Names of the stored objects of `plural` in `ns`.
    pub fn names(&self, plural: &str, ns: &str) -> Vec<String> {
        self.inner
            .lock()
            .objects
            .keys()
            .filter(|(p, n, _)| p == plural && n == ns)
            .map(|(_, _, name)| name.clone())
            .collect()
    }

    /// Stores `obj` (as if another client created it).
    pub fn insert(&self, plural: &str, ns: &str, obj: Value) {
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        self.inner
            .lock()
            .objects
            .insert((plural.into(), ns.into(), name), obj);
    }

    /// Removes an object (as if deleted behind the client's back).
    pub fn remove(&self, plural: &str, ns: &str, name: &str) -> Option<Value> {
        self.inner
            .lock()
            .objects
            .remove(&(plural.into(), ns.into(), name.into()))
    }

    /// Replaces an object's `status`.
    pub fn set_status(&self, plural: &str, ns: &str, name: &str, status: Value) {
        let mut inner = self.inner.lock();
        let key: Key = (plural.into(), ns.into(), name.into());
        if let Some(mut o) = inner.objects.remove(&key) {
            o["status"] = status;
            inner.bump(&mut o);
            inner.objects.insert(key, o);
        }
    }

    /// Answers requests matching `method` and `path_contains` with an
    /// error `Status` from now on.
    pub fn fail(&self, method: &str, path_contains: &str, code: u16, reason: &str, message: &str) {
        self.inner.lock().faults.push(Fault {
            method: method.into(),
            path_contains: path_contains.into(),
            code,
            reason: reason.into(),
            message: message.into(),
        });
    }

    /// Removes every injected fault.
    pub fn heal(&self) {
        self.inner.lock().faults.clear();
    }
}
