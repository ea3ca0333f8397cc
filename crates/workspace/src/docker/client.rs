//! The Engine API connection: connect, check, and every call under a
//! timeout with its error typed (shared by [`super::DockerWorkspace`] and
//! the control plane's docker engine).

use super::error::DockerError;
use bollard::Docker;
use std::future::Future;
use std::time::Duration;

/// Connects to `host` (`unix://…`, `tcp://…`; `None`: `DOCKER_HOST` or the
/// local socket) and checks that the daemon answers within `timeout`.
pub async fn connect(host: Option<&str>, timeout: Duration) -> Result<Docker, DockerError> {
    let shown = host
        .map(str::to_string)
        .or_else(|| crate::exec::env::host_var("DOCKER_HOST"))
        .unwrap_or_else(|| "unix:///var/run/docker.sock".into());
    let unreachable = |detail: String| DockerError::Unreachable {
        host: shown.clone(),
        detail,
    };
    let docker = match host {
        Some(h) => Docker::connect_with_host(h),
        None => Docker::connect_with_defaults(),
    }
    .map_err(|e| unreachable(e.to_string()))?
    .with_timeout(timeout);
    // Asking the daemon's API version doubles as the liveness check; an
    // older daemon is then spoken to in its own version.
    match tokio::time::timeout(timeout, docker.negotiate_version()).await {
        Ok(Ok(docker)) => Ok(docker),
        Ok(Err(e)) => Err(unreachable(e.to_string())),
        Err(_) => Err(unreachable(format!("no answer within {timeout:?}"))),
    }
}

/// Whether the error is the daemon's 404.
pub fn is_not_found(e: &bollard::errors::Error) -> bool {
    matches!(
        e,
        bollard::errors::Error::DockerResponseServerError {
            status_code: 404,
            ..
        }
    )
}

/// Runs one Engine API call under `timeout`, typing its failure as `op`.
pub async fn call<T>(
    op: &'static str,
    timeout: Duration,
    fut: impl Future<Output = Result<T, bollard::errors::Error>>,
) -> Result<T, DockerError> {
    match tokio::time::timeout(timeout, fut).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(DockerError::Daemon {
            op,
            detail: e.to_string(),
        }),
        Err(_) => Err(DockerError::Timeout { op, after: timeout }),
    }
}
