//! The custom resources of kubernetes-sigs/agent-sandbox and how their
//! state is read, as the reference's `k8s-agent-sandbox` client does:
//!
//! * a `Sandbox` is ready when its `Ready` condition is `True`; its
//!   endpoint is `status.serviceFQDN` (the headless Service the controller
//!   creates when `spec.service` is true); `spec.operatingMode`
//!   `Suspended` / `Running` suspends (the pod is deleted) and resumes it;
//! * a `SandboxClaim` names a `SandboxWarmPool` (`spec.warmPoolRef`); it
//!   is ready when its `Ready` condition (forwarded from the sandbox) is
//!   `True` and `status.sandbox.name` names the adopted `Sandbox`;
//!   `TemplateNotFound`, `WarmPoolNotFound` and the terminal reasons fail
//!   at once instead of waiting out the timeout.
//!
//! Waits poll the object (every 250 ms, backing off to 2 s) rather than
//! watch it.

use super::client::{KubeClient, ResourceType};
use super::error::KubeError;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// `Sandbox` (`agents.x-k8s.io/v1beta1`).
pub const SANDBOX: ResourceType = ResourceType {
    group: "agents.x-k8s.io",
    version: "v1beta1",
    plural: "sandboxes",
    kind: "Sandbox",
};

/// `SandboxClaim` (`extensions.agents.x-k8s.io/v1beta1`).
pub const SANDBOX_CLAIM: ResourceType = ResourceType {
    group: "extensions.agents.x-k8s.io",
    version: "v1beta1",
    plural: "sandboxclaims",
    kind: "SandboxClaim",
};

/// `Secret` (core `v1`).
pub const SECRET: ResourceType = ResourceType {
    group: "",
    version: "v1",
    plural: "secrets",
    kind: "Secret",
};

/// The label naming who created an object (agent-sandbox's).
pub const CREATED_BY_LABEL: &str = "agents.x-k8s.io/created-by";
/// The annotation with the time a client first asked (agent-sandbox's).
pub const CLIENT_REQUEST_TIME_ANNOTATION: &str = "agents.x-k8s.io/client-first-requested-at";
/// The (legacy) annotation naming a sandbox's pod.
pub const POD_NAME_ANNOTATION: &str = "agents.x-k8s.io/pod-name";

/// Claim `Ready=False` reasons the controller does not recover from.
pub const TERMINAL_CLAIM_REASONS: &[&str] = &[
    "InvalidMetadata",
    "EnvVarsInjectionRejected",
    "VolumeClaimTemplatesError",
    "ClaimExpired",
    "SandboxExpired",
    "InvalidConfiguration",
    "PodFailed",
    "PodSucceeded",
];

/// `Sandbox` `Ready=False` reasons that will not turn `True` by waiting.
const TERMINAL_SANDBOX_REASONS: &[&str] = &[
    "SandboxExpired",
    "InvalidConfiguration",
    "PodFailed",
    "PodSucceeded",
];

/// The state of a `Sandbox` or a `SandboxClaim`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// Ready (for a claim: the adopted sandbox's name).
    Ready(String),
    /// Not yet: why.
    Waiting(String),
    /// Suspended (`operatingMode: Suspended`).
    Suspended,
    /// Failed for good: why.
    Failed(String),
}

fn conditions(obj: &Value) -> Vec<&Map<String, Value>> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_object).collect())
        .unwrap_or_default()
}

fn field<'a>(c: &'a Map<String, Value>, k: &str) -> &'a str {
    c.get(k).and_then(Value::as_str).unwrap_or_default()
}

fn describe(c: &Map<String, Value>) -> String {
    let (reason, message) = (field(c, "reason"), field(c, "message"));
    match (reason.is_empty(), message.is_empty()) {
        (false, false) => format!("{reason}: {message}"),
        (false, true) => reason.to_string(),
        (true, false) => message.to_string(),
        (true, true) => "no reason given".into(),
    }
}

/// A `Sandbox`'s readiness (its name when ready).
pub fn sandbox_readiness(obj: &Value) -> Readiness {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let conds = conditions(obj);
    if let Some(f) = conds
        .iter()
        .find(|c| field(c, "type") == "Finished" && field(c, "status") == "True")
    {
        return Readiness::Failed(format!("its pod finished ({})", describe(f)));
    }
    match conds.iter().find(|c| field(c, "type") == "Ready") {
        Some(c) if field(c, "status") == "True" => Readiness::Ready(name),
        Some(c) if field(c, "reason") == "SandboxSuspended" => Readiness::Suspended,
        Some(c) if TERMINAL_SANDBOX_REASONS.contains(&field(c, "reason")) => {
            Readiness::Failed(describe(c))
        }
        Some(c) => Readiness::Waiting(describe(c)),
        None => Readiness::Waiting("the controller has not reported on it yet".into()),
    }
}

/// A `SandboxClaim`'s readiness (the adopted sandbox's name when ready).
pub fn claim_readiness(obj: &Value) -> Readiness {
    let sandbox = obj
        .pointer("/status/sandbox/name")
        .or_else(|| obj.pointer("/status/sandbox/Name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut ready = false;
    for c in conditions(obj) {
        let (ty, status, reason) = (field(c, "type"), field(c, "status"), field(c, "reason"));
        if reason == "WarmPoolNotFound" {
            return Readiness::Failed(format!(
                "the SandboxWarmPool does not exist ({})",
                describe(c)
            ));
        }
        if ty == "Ready" && status == "False" && reason == "TemplateNotFound" {
            return Readiness::Failed(format!(
                "the SandboxTemplate does not exist ({})",
                describe(c)
            ));
        }
        if ty == "Ready" && status == "False" && TERMINAL_CLAIM_REASONS.contains(&reason) {
            return Readiness::Failed(format!("the claim failed ({})", describe(c)));
        }
        if ty == "Ready" && status == "True" {
            ready = true;
        }
    }
    if ready && !sandbox.is_empty() {
        return Readiness::Ready(sandbox);
    }
    let why = conditions(obj)
        .into_iter()
        .find(|c| field(c, "type") == "Ready")
        .map(describe)
        .unwrap_or_else(|| "not bound to a sandbox yet".into());
    Readiness::Waiting(why)
}

/// The agent server's URL of a ready `Sandbox`: its Service's FQDN and
/// `port`.
pub fn service_url(sandbox: &Value, port: u16) -> Option<String> {
    sandbox
        .pointer("/status/serviceFQDN")
        .and_then(Value::as_str)
        .filter(|f| !f.is_empty())
        .map(|f| format!("http://{f}:{port}"))
}

/// The pod name of a `Sandbox` (the legacy annotation, else its name).
pub fn pod_name(sandbox: &Value) -> Option<String> {
    sandbox
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(POD_NAME_ANNOTATION))
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
        .or_else(|| sandbox.pointer("/metadata/name").and_then(Value::as_str))
        .map(str::to_string)
}

/// What a claim asks (the reference's `create_sandbox` arguments).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClaimRequest {
    /// The claim's name.
    pub name: String,
    /// The `SandboxWarmPool` to claim from.
    pub warmpool: String,
    /// Labels of the claim object.
    pub labels: BTreeMap<String, String>,
    /// Labels stamped onto the sandbox's pod.
    pub pod_labels: BTreeMap<String, String>,
    /// Annotations stamped onto the sandbox's pod.
    pub pod_annotations: BTreeMap<String, String>,
    /// The claim is deleted by the controller this long after creation.
    pub shutdown_after: Option<Duration>,
    /// The `created-by` label's value.
    pub created_by: String,
}

/// RFC 3339 UTC with second precision (`2026-01-02T03:04:05Z`).
fn rfc3339(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Checks label keys and values as Kubernetes does (so a bad one fails
/// here, naming it, not at the API server).
pub fn validate_labels(labels: &BTreeMap<String, String>) -> Result<(), KubeError> {
    fn name_ok(s: &str) -> bool {
        !s.is_empty()
            && s.len() <= 63
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && s.starts_with(|c: char| c.is_ascii_alphanumeric())
            && s.ends_with(|c: char| c.is_ascii_alphanumeric())
    }
    for (k, v) in labels {
        let key_ok = match k.split_once('/') {
            Some((prefix, name)) => {
                !prefix.is_empty()
                    && prefix.len() <= 253
                    && prefix.chars().all(|c| {
                        c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.')
                    })
                    && name_ok(name)
            }
            None => name_ok(k),
        };
        if !key_ok {
            return Err(KubeError::Invalid(format!(
                "label key {k:?} is not a valid Kubernetes label key"
            )));
        }
        if !v.is_empty() && !name_ok(v) {
            return Err(KubeError::Invalid(format!(
                "label value {v:?} of {k:?} is not a valid Kubernetes label value"
            )));
        }
    }
    Ok(())
}

impl ClaimRequest {
    /// The `SandboxClaim` manifest (as of `now`, for the request-time
    /// annotation and the shutdown time).
    pub fn manifest(&self, now: std::time::SystemTime) -> Value {
        let mut labels: Map<String, Value> = self
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        labels.insert(CREATED_BY_LABEL.into(), json!(self.created_by));
        let mut spec = Map::new();
        spec.insert("warmPoolRef".into(), json!({ "name": self.warmpool }));
        if let Some(ttl) = self.shutdown_after {
            spec.insert(
                "lifecycle".into(),
                json!({
                    "shutdownTime": rfc3339(now + ttl),
                    "shutdownPolicy": "Delete",
                }),
            );
        }
        let mut pod = Map::new();
        if !self.pod_labels.is_empty() {
            pod.insert("labels".into(), json!(self.pod_labels));
        }
        if !self.pod_annotations.is_empty() {
            pod.insert("annotations".into(), json!(self.pod_annotations));
        }
        if !pod.is_empty() {
            spec.insert("additionalPodMetadata".into(), Value::Object(pod));
        }
        json!({
            "apiVersion": SANDBOX_CLAIM.api_version(),
            "kind": SANDBOX_CLAIM.kind,
            "metadata": {
                "name": self.name,
                "annotations": { CLIENT_REQUEST_TIME_ANNOTATION: rfc3339(now) },
                "labels": labels,
            },
            "spec": spec,
        })
    }
}

/// Polls `read` until it answers `Ready`, `Failed` or `Suspended` (then
/// an error), or `timeout` passes. `what` names the object in errors.
async fn wait<F, Fut>(what: &str, timeout: Duration, mut read: F) -> Result<String, KubeError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Readiness, KubeError>>,
{
    let end = Instant::now() + timeout;
    let mut pause = Duration::from_millis(250);
    loop {
        let why = match read().await? {
            Readiness::Ready(name) => return Ok(name),
            Readiness::Failed(why) => return Err(KubeError::Failed(format!("{what}: {why}"))),
            Readiness::Suspended => return Err(KubeError::Failed(format!("{what} is suspended"))),
            Readiness::Waiting(why) => why,
        };
        if Instant::now() + pause > end {
            return Err(KubeError::Timeout(format!(
                "{what} was not ready within {timeout:?} ({why})"
            )));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

/// Waits until the claim is bound and ready; the adopted sandbox's name.
pub async fn wait_claim_ready(
    client: &KubeClient,
    namespace: &str,
    claim: &str,
    timeout: Duration,
) -> Result<String, KubeError> {
    let what = format!("SandboxClaim {namespace}/{claim}");
    wait(&what, timeout, || async {
        match client.get(&SANDBOX_CLAIM, namespace, claim).await? {
            Some(obj) => Ok(claim_readiness(&obj)),
            None => Ok(Readiness::Failed("it was deleted while waiting".into())),
        }
    })
    .await
}

/// Waits until the sandbox is ready; the sandbox object then.
pub async fn wait_sandbox_ready(
    client: &KubeClient,
    namespace: &str,
    name: &str,
    timeout: Duration,
) -> Result<Value, KubeError> {
    let what = format!("Sandbox {namespace}/{name}");
    let last = std::sync::Mutex::new(Value::Null);
    wait(&what, timeout, || async {
        match client.get(&SANDBOX, namespace, name).await? {
            Some(obj) => {
                let r = sandbox_readiness(&obj);
                if let Ok(mut l) = last.lock() {
                    *l = obj;
                }
                Ok(r)
            }
            None => Ok(Readiness::Failed("it was deleted while waiting".into())),
        }
    })
    .await?;
    let obj = last.lock().map(|l| l.clone()).unwrap_or(Value::Null);
    Ok(obj)
}

/// Sets a sandbox's `spec.operatingMode` (`Running` or `Suspended`).
pub async fn set_operating_mode(
    client: &KubeClient,
    namespace: &str,
    name: &str,
    mode: &str,
) -> Result<(), KubeError> {
    client
        .merge_patch(
            &SANDBOX,
            namespace,
            name,
            &json!({ "spec": { "operatingMode": mode } }),
        )
        .await?
        .map(drop)
        .ok_or_else(|| KubeError::Invalid(format!("Sandbox {namespace}/{name} does not exist")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_rfc3339_utc() {
        let t = std::time::UNIX_EPOCH + Duration::from_secs(1_780_000_000);
        assert_eq!(rfc3339(t), "2026-05-28T20:26:40Z");
        assert_eq!(rfc3339(std::time::UNIX_EPOCH), "1970-01-01T00:00:00Z");
    }

    #[test]
    fn claim_conditions_map_to_readiness() {
        let claim = |conds: Value, name: &str| json!({"status": {"conditions": conds, "sandbox": {"name": name}}});
        assert_eq!(
            claim_readiness(&claim(
                json!([{"type": "Ready", "status": "True"}]),
                "pool-x"
            )),
            Readiness::Ready("pool-x".into())
        );
        assert!(matches!(
            claim_readiness(&claim(json!([{"type": "Ready", "status": "True"}]), "")),
            Readiness::Waiting(_)
        ));
        for reason in [
            "TemplateNotFound",
            "WarmPoolNotFound",
            "PodFailed",
            "ClaimExpired",
        ] {
            let r = claim_readiness(&claim(
                json!([{"type": "Ready", "status": "False", "reason": reason, "message": "m"}]),
                "",
            ));
            assert!(matches!(r, Readiness::Failed(_)), "{reason}: {r:?}");
        }
        assert!(matches!(
            claim_readiness(&claim(
                json!([{"type": "Ready", "status": "False", "reason": "SandboxNotReady"}]),
                "s"
            )),
            Readiness::Waiting(w) if w.contains("SandboxNotReady")
        ));
    }

    #[test]
    fn labels_are_checked_like_kubernetes() {
        let ok = BTreeMap::from([("app.kubernetes.io/name".to_string(), "oh".to_string())]);
        assert!(validate_labels(&ok).is_ok());
        for (k, v) in [("-bad", "x"), ("Up/x", "x"), ("k", "bad value"), ("", "x")] {
            let l = BTreeMap::from([(k.to_string(), v.to_string())]);
            assert!(validate_labels(&l).is_err(), "{k}={v}");
        }
    }
}
