//! Where the Kubernetes API server is and how to authenticate to it: a
//! kubeconfig file (its current context or a named one) or the pod's
//! service account (in-cluster).
//!
//! Supported from a kubeconfig: `server`, `certificate-authority(-data)`,
//! `tls-server-name` is refused, `token` / `tokenFile`, and
//! `client-certificate(-data)` with `client-key(-data)`; relative paths are
//! relative to the file's directory. What cannot be honoured
//! (`insecure-skip-tls-verify`, `exec` credential plugins, `auth-provider`,
//! basic auth, `proxy-url`) is refused by name, never ignored.

use super::error::KubeError;
use base64::Engine as _;
use openhands_client::{ClientIdentity, TlsOptions};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Where the service-account files of a pod are mounted.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// How to find the cluster (the settings of an engine or a workspace).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KubeSource {
    /// A kubeconfig file; `None`: `KUBECONFIG` (its first file), else
    /// `~/.kube/config` — unless the process runs in a pod and no context
    /// is named, then the pod's service account.
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context; `None`: its `current-context`.
    pub context: Option<String>,
}

/// The bearer token of requests.
#[derive(Clone, PartialEq, Eq)]
pub enum Token {
    /// A fixed token.
    Static(String),
    /// A file read before each request (service-account tokens rotate).
    File(PathBuf),
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Token::Static(_) => f.write_str("Token::Static(..)"),
            Token::File(p) => write!(f, "Token::File({})", p.display()),
        }
    }
}

/// A resolved connection: the API server's URL, the TLS to use and the
/// token, plus the namespace the source names (if any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeConnection {
    /// Base URL of the API server (no trailing `/`).
    pub server: String,
    /// Trusted CAs and the client certificate.
    pub tls: TlsOptions,
    /// Bearer token, if any.
    pub token: Option<Token>,
    /// The context's (or service account's) namespace.
    pub namespace: Option<String>,
}

/// Reads the variable through the project's environment policy.
fn var(name: &str) -> Option<String> {
    crate::exec::env::host_var(name).filter(|v| !v.trim().is_empty())
}

impl KubeSource {
    /// Resolves the source: the kubeconfig when one is named (or a
    /// context), else the service account when running in a pod, else the
    /// default kubeconfig.
    pub async fn resolve(&self) -> Result<KubeConnection, KubeError> {
        if self.kubeconfig.is_none()
            && self.context.is_none()
            && var("KUBERNETES_SERVICE_HOST").is_some()
        {
            return in_cluster(Path::new(SERVICE_ACCOUNT_DIR)).await;
        }
        let path = match &self.kubeconfig {
            Some(p) => p.clone(),
            None => match var("KUBECONFIG") {
                Some(list) => list
                    .split(':')
                    .find(|p| !p.is_empty())
                    .map(PathBuf::from)
                    .ok_or_else(|| KubeError::Config("KUBECONFIG names no file".into()))?,
                None => {
                    let home = var("HOME").ok_or_else(|| {
                        KubeError::Config(
                            "no kubeconfig: set KUBECONFIG or HOME, or name the file".into(),
                        )
                    })?;
                    Path::new(&home).join(".kube").join("config")
                }
            },
        };
        let text = tokio::fs::read_to_string(&path)
            .await
            .map_err(|e| KubeError::Config(format!("kubeconfig {}: {e}", path.display())))?;
        from_kubeconfig(&text, path.parent(), self.context.as_deref())
            .await
            .map_err(|e| KubeError::Config(format!("kubeconfig {}: {e}", path.display())))
    }
}

/// The pod's service account: `KUBERNETES_SERVICE_HOST`/`_PORT`, the
/// token and CA files under `dir`.
pub async fn in_cluster(dir: &Path) -> Result<KubeConnection, KubeError> {
    let host = var("KUBERNETES_SERVICE_HOST")
        .ok_or_else(|| KubeError::Config("KUBERNETES_SERVICE_HOST is not set".into()))?;
    let port = var("KUBERNETES_SERVICE_PORT").unwrap_or_else(|| "443".into());
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host
    };
    let ca = tokio::fs::read(dir.join("ca.crt")).await.map_err(|e| {
        KubeError::Config(format!("service account CA {}/ca.crt: {e}", dir.display()))
    })?;
    let token = dir.join("token");
    if let Err(e) = tokio::fs::metadata(&token).await {
        return Err(KubeError::Config(format!(
            "service account token {}: {e}",
            token.display()
        )));
    }
    let namespace = tokio::fs::read_to_string(dir.join("namespace"))
        .await
        .ok()
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty());
    Ok(KubeConnection {
        server: format!("https://{host}:{port}"),
        tls: TlsOptions {
            ca_pem: Some(ca),
            ..TlsOptions::default()
        },
        token: Some(Token::File(token)),
        namespace,
    })
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct KubeconfigFile {
    #[serde(default)]
    current_context: Option<String>,
    #[serde(default)]
    clusters: Vec<Named<Cluster>>,
    #[serde(default)]
    contexts: Vec<Named<Context>>,
    #[serde(default)]
    users: Vec<Named<User>>,
}

#[derive(Debug, Deserialize)]
struct Named<T> {
    name: String,
    #[serde(alias = "cluster", alias = "context", alias = "user")]
    item: Option<T>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Cluster {
    server: Option<String>,
    certificate_authority: Option<String>,
    certificate_authority_data: Option<String>,
    #[serde(default)]
    insecure_skip_tls_verify: bool,
    tls_server_name: Option<String>,
    proxy_url: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Context {
    cluster: Option<String>,
    user: Option<String>,
    namespace: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct User {
    token: Option<String>,
    #[serde(rename = "tokenFile")]
    token_file: Option<String>,
    client_certificate: Option<String>,
    client_certificate_data: Option<String>,
    client_key: Option<String>,
    client_key_data: Option<String>,
    username: Option<String>,
    exec: Option<serde_json::Value>,
    auth_provider: Option<serde_json::Value>,
}

fn find<'a, T>(
    list: &'a [Named<T>],
    name: &str,
    what: &'static str,
) -> Result<&'a T, KubeconfigError> {
    list.iter()
        .find(|n| n.name == name)
        .and_then(|n| n.item.as_ref())
        .ok_or_else(|| KubeconfigError::Missing {
            what,
            name: name.to_string(),
        })
}

/// Why a kubeconfig gives no connection (the text names the entry).
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    /// Not YAML of a kubeconfig's shape.
    #[error("not a kubeconfig: {0}")]
    Parse(#[source] serde_norway::Error),
    /// No context given and no current one.
    #[error("no context named and no current-context")]
    NoContext,
    /// A named context, cluster or user is not in the file.
    #[error("no {what} named {name:?}")]
    Missing {
        /// `context`, `cluster` or `user`.
        what: &'static str,
        /// The name.
        name: String,
    },
    /// The context names no cluster.
    #[error("context {0:?} names no cluster")]
    NoCluster(String),
    /// The cluster has no server URL.
    #[error("cluster {0:?} has no server")]
    NoServer(String),
    /// A cluster setting we cannot honour.
    #[error("cluster {cluster:?}: {what}")]
    ClusterUnsupported {
        /// The cluster.
        cluster: String,
        /// What is refused, and what to do instead.
        what: &'static str,
    },
    /// A user setting we cannot honour.
    #[error("user {user:?}: {what}")]
    UserUnsupported {
        /// The user.
        user: String,
        /// What is refused, and what to do instead.
        what: &'static str,
    },
    /// Inline data that is not base64.
    #[error("{what}-data is not base64: {source}")]
    NotBase64 {
        /// Which entry.
        what: &'static str,
        /// The decoder's complaint.
        source: base64::DecodeError,
    },
    /// A file the kubeconfig names cannot be read.
    #[error("{what} {}: {source}", .path.display())]
    Read {
        /// Which entry.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What the disk said.
        source: std::io::Error,
    },
}

/// A kubeconfig's file or inline data (`*-data`, base64).
async fn file_or_data(
    base: Option<&Path>,
    file: Option<&str>,
    data: Option<&str>,
    what: &'static str,
) -> Result<Option<Vec<u8>>, KubeconfigError> {
    if let Some(d) = data {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(d.trim())
            .map_err(|source| KubeconfigError::NotBase64 { what, source })?;
        return Ok(Some(bytes));
    }
    let Some(f) = file else { return Ok(None) };
    let p = Path::new(f);
    let p = match base {
        Some(b) if p.is_relative() => b.join(p),
        _ => p.to_path_buf(),
    };
    tokio::fs::read(&p)
        .await
        .map(Some)
        .map_err(|source| KubeconfigError::Read {
            what,
            path: p.clone(),
            source,
        })
}

/// The connection a kubeconfig's text describes (`base`: its directory,
/// for relative paths; `context`: the context to use).
pub async fn from_kubeconfig(
    text: &str,
    base: Option<&Path>,
    context: Option<&str>,
) -> Result<KubeConnection, KubeconfigError> {
    let cfg: KubeconfigFile = serde_norway::from_str(text).map_err(KubeconfigError::Parse)?;
    let ctx_name = context
        .map(str::to_string)
        .or(cfg.current_context.clone())
        .filter(|c| !c.is_empty())
        .ok_or(KubeconfigError::NoContext)?;
    let ctx = find(&cfg.contexts, &ctx_name, "context")?;
    let cluster_name = ctx
        .cluster
        .as_deref()
        .ok_or_else(|| KubeconfigError::NoCluster(ctx_name.clone()))?;
    let cluster = find(&cfg.clusters, cluster_name, "cluster")?;
    let server = cluster
        .server
        .as_deref()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| KubeconfigError::NoServer(cluster_name.to_string()))?
        .trim_end_matches('/')
        .to_string();
    let cluster_refuses = |what| {
        Err(KubeconfigError::ClusterUnsupported {
            cluster: cluster_name.to_string(),
            what,
        })
    };
    if cluster.insecure_skip_tls_verify {
        return cluster_refuses(
            "insecure-skip-tls-verify is not supported; give its CA (certificate-authority-data)",
        );
    }
    if cluster.tls_server_name.is_some() {
        return cluster_refuses("tls-server-name is not supported");
    }
    if cluster.proxy_url.is_some() {
        return cluster_refuses("proxy-url is not supported");
    }
    let ca = file_or_data(
        base,
        cluster.certificate_authority.as_deref(),
        cluster.certificate_authority_data.as_deref(),
        "certificate-authority",
    )
    .await?;
    let empty = User::default();
    let user = match ctx.user.as_deref() {
        Some(u) => find(&cfg.users, u, "user")?,
        None => &empty,
    };
    let user_name = ctx.user.as_deref().unwrap_or_default();
    let user_refuses = |what| {
        Err(KubeconfigError::UserUnsupported {
            user: user_name.to_string(),
            what,
        })
    };
    if user.exec.is_some() {
        return user_refuses(
            "exec credential plugins are not supported; use a token or a client certificate",
        );
    }
    if user.auth_provider.is_some() {
        return user_refuses("auth-provider is not supported");
    }
    if user.username.is_some() {
        return user_refuses("basic auth is not supported");
    }
    let token = match (&user.token, &user.token_file) {
        (Some(t), _) => Some(Token::Static(t.clone())),
        (None, Some(f)) => {
            let p = Path::new(f);
            Some(Token::File(match base {
                Some(b) if p.is_relative() => b.join(p),
                _ => p.to_path_buf(),
            }))
        }
        (None, None) => None,
    };
    let cert = file_or_data(
        base,
        user.client_certificate.as_deref(),
        user.client_certificate_data.as_deref(),
        "client-certificate",
    )
    .await?;
    let key = file_or_data(
        base,
        user.client_key.as_deref(),
        user.client_key_data.as_deref(),
        "client-key",
    )
    .await?;
    let identity = match (cert, key) {
        (Some(cert_pem), Some(key_pem)) => Some(ClientIdentity { cert_pem, key_pem }),
        (None, None) => None,
        _ => return user_refuses("a client certificate needs both its certificate and its key"),
    };
    Ok(KubeConnection {
        server,
        tls: TlsOptions {
            ca_pem: ca,
            identity,
            ..TlsOptions::default()
        },
        token,
        namespace: ctx.namespace.clone().filter(|n| !n.is_empty()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"
apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: c1
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority-data: Y2E=
- name: c2
  cluster:
    server: https://other:443
    insecure-skip-tls-verify: true
contexts:
- name: dev
  context: {cluster: c1, user: u1, namespace: sandboxes}
- name: insecure
  context: {cluster: c2, user: u1}
- name: plugin
  context: {cluster: c1, user: u2}
- name: half
  context: {cluster: c1, user: u3}
users:
- name: u1
  user: {token: abc}
- name: u2
  user:
    exec: {command: aws}
- name: u3
  user: {client-certificate-data: Y2VydA==}
"#;

    #[tokio::test]
    async fn the_current_context_gives_server_ca_token_and_namespace() {
        let c = from_kubeconfig(CONFIG, None, None).await.unwrap();
        assert_eq!(c.server, "https://10.0.0.1:6443");
        assert_eq!(c.tls.ca_pem.as_deref(), Some(&b"ca"[..]));
        assert_eq!(c.token, Some(Token::Static("abc".into())));
        assert_eq!(c.namespace.as_deref(), Some("sandboxes"));
    }

    #[tokio::test]
    async fn what_cannot_be_honoured_is_refused_by_name() {
        for (ctx, needle) in [
            ("insecure", "insecure-skip-tls-verify"),
            ("plugin", "exec credential plugins"),
            ("half", "both its certificate and its key"),
            ("missing", "no context named \"missing\""),
        ] {
            let e = from_kubeconfig(CONFIG, None, Some(ctx)).await.unwrap_err();
            assert!(e.to_string().contains(needle), "{ctx}: {e}");
        }
        let e = from_kubeconfig("[1, 2", None, None).await.unwrap_err();
        assert!(e.to_string().contains("not a kubeconfig"), "{e}");
    }
}
