//! How a [`super::DockerWorkspace`]'s server is reached: the container's
//! network, the ports published on the host's loopback, and the address
//! the server listens on inside the container (the reference's
//! `host_port`, `extra_ports` and `network`).

use super::error::DockerError;
use bollard::models::PortBinding;
use std::collections::HashMap;

/// The port the agent server listens on inside a bridged container (the
/// reference's image default).
pub const SERVER_PORT: u16 = 8000;
/// The VS Code port inside the container, published at `host_port + 1`
/// with `extra_ports` (as the reference does). Our agent server runs no
/// VS Code: whatever the image runs there is reached through it.
pub const VSCODE_PORT: u16 = 8001;

/// How many random ports are tried for a free pair.
const PORT_ATTEMPTS: usize = 50;

/// Where the server listens and what is published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortPlan {
    /// The docker network mode (`bridge`, `host`, or a network's name).
    pub network_mode: String,
    /// The address the server binds inside the container.
    pub listen_host: &'static str,
    /// The port the server binds inside the container.
    pub listen_port: u16,
    /// The server's port on the host's loopback.
    pub host_port: u16,
    /// The extra port published (`host_port + 1`), if asked for.
    pub extra_port: Option<u16>,
}

impl PortPlan {
    /// Whether the container shares the host's network.
    pub fn is_host(&self) -> bool {
        self.network_mode == "host"
    }

    /// The container ports to expose (`8000/tcp`, …; none on the host
    /// network).
    pub fn exposed_ports(&self) -> Option<Vec<String>> {
        if self.is_host() {
            return None;
        }
        let mut ports = vec![format!("{SERVER_PORT}/tcp")];
        if self.extra_port.is_some() {
            ports.push(format!("{VSCODE_PORT}/tcp"));
        }
        Some(ports)
    }

    /// The port bindings, all on `127.0.0.1` (none on the host network).
    pub fn port_bindings(&self) -> Option<HashMap<String, Option<Vec<PortBinding>>>> {
        if self.is_host() {
            return None;
        }
        let bind = |p: u16| {
            Some(vec![PortBinding {
                host_ip: Some("127.0.0.1".into()),
                host_port: Some(p.to_string()),
            }])
        };
        let mut map = HashMap::from([(format!("{SERVER_PORT}/tcp"), bind(self.host_port))]);
        if let Some(extra) = self.extra_port {
            map.insert(format!("{VSCODE_PORT}/tcp"), bind(extra));
        }
        Some(map)
    }
}

/// Whether `port` can be bound on every interface (what publishing it
/// needs) and on the loopback.
fn port_free(port: u16) -> bool {
    // One at a time: each probe's listener is closed before the next.
    let all = std::net::TcpListener::bind(("0.0.0.0", port)).is_ok();
    let loopback = std::net::TcpListener::bind(("127.0.0.1", port)).is_ok();
    all && loopback
}

/// A port the system hands out as free.
fn any_free_port() -> Result<u16, DockerError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| DockerError::Invalid(format!("no free port: {e}")))
}

/// Plans the ports: `network` (`None`: the default bridge), the asked
/// `host_port` (`None`: a free one) and whether the VS Code port is
/// published at `host_port + 1`. A taken port or a combination that cannot
/// work is refused naming the option.
pub fn plan(
    network: Option<&str>,
    host_port: Option<u16>,
    extra_ports: bool,
) -> Result<PortPlan, DockerError> {
    let network_mode = network.unwrap_or("bridge").to_string();
    if network_mode.is_empty() {
        return Err(DockerError::Invalid("network must not be empty".into()));
    }
    if network_mode == "none" || network_mode.starts_with("container:") {
        return Err(DockerError::Invalid(format!(
            "network '{network_mode}' leaves the agent server unreachable from this process; use the default bridge, 'host', or a user-defined network"
        )));
    }
    let host = network_mode == "host";
    if host && extra_ports {
        return Err(DockerError::Invalid(
            "extra_ports publishes the container's VS Code port at host_port + 1, which needs a bridged network; with network 'host' the container's ports already are the host's".into(),
        ));
    }
    let host_port = match host_port {
        Some(0) => return Err(DockerError::Invalid("host_port must not be 0".into())),
        Some(p) => {
            if !port_free(p) {
                return Err(DockerError::Invalid(format!(
                    "host_port {p} is not available"
                )));
            }
            if extra_ports && (p == u16::MAX || !port_free(p + 1)) {
                return Err(DockerError::Invalid(format!(
                    "extra_ports needs host_port + 1 ({}) free for the VS Code port, and it is not",
                    u32::from(p) + 1
                )));
            }
            p
        }
        None if !extra_ports => any_free_port()?,
        None => {
            let mut found = None;
            for _ in 0..PORT_ATTEMPTS {
                let p = any_free_port()?;
                if p < u16::MAX && port_free(p + 1) {
                    found = Some(p);
                    break;
                }
            }
            found.ok_or_else(|| {
                DockerError::Invalid("no two free consecutive ports for extra_ports".into())
            })?
        }
    };
    Ok(PortPlan {
        listen_host: if host { "127.0.0.1" } else { "0.0.0.0" },
        listen_port: if host { host_port } else { SERVER_PORT },
        host_port,
        extra_port: extra_ports.then_some(host_port + 1),
        network_mode,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_a_bridge_with_the_server_port_published_on_the_loopback() {
        let p = plan(None, None, false).unwrap();
        assert_eq!(p.network_mode, "bridge");
        assert_eq!((p.listen_host, p.listen_port), ("0.0.0.0", SERVER_PORT));
        let b = p.port_bindings().unwrap();
        let bound = b["8000/tcp"].as_ref().unwrap();
        assert_eq!(bound[0].host_ip.as_deref(), Some("127.0.0.1"));
        assert_eq!(bound[0].host_port, Some(p.host_port.to_string()));
        assert_eq!(p.exposed_ports().unwrap(), vec!["8000/tcp"]);
        assert_eq!(p.extra_port, None);
    }

    #[test]
    fn extra_ports_publish_the_vscode_port_next_to_the_server_port() {
        let p = plan(None, None, true).unwrap();
        assert_eq!(p.extra_port, Some(p.host_port + 1));
        let b = p.port_bindings().unwrap();
        assert_eq!(
            b["8001/tcp"].as_ref().unwrap()[0].host_port,
            Some((p.host_port + 1).to_string())
        );
    }

    #[test]
    fn the_host_network_listens_on_the_loopback_and_publishes_nothing() {
        let p = plan(Some("host"), Some(any_free_port().unwrap()), false).unwrap();
        assert_eq!((p.listen_host, p.listen_port), ("127.0.0.1", p.host_port));
        assert!(p.port_bindings().is_none() && p.exposed_ports().is_none());
    }

    #[test]
    fn unusable_combinations_are_refused_naming_the_option() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        let e = plan(None, Some(port), false).unwrap_err().to_string();
        assert!(
            e.contains("host_port") && e.contains(&port.to_string()),
            "{e}"
        );
        let e = plan(Some("host"), None, true).unwrap_err().to_string();
        assert!(e.contains("extra_ports"), "{e}");
        let e = plan(Some("none"), None, false).unwrap_err().to_string();
        assert!(e.contains("network"), "{e}");
        let e = plan(None, Some(0), false).unwrap_err().to_string();
        assert!(e.contains("host_port"), "{e}");
    }
}
