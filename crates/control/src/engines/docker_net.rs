//! The network docker sandboxes share: one user-defined bridge
//! ([`NETWORK`]) on which containers cannot reach each other —
//! inter-container communication is disabled, so the bridge drops traffic
//! from one sandbox's container to another's address — while each agent
//! server is published on the host's loopback only, where no container
//! reaches it. One network rather than one per sandbox: docker's default
//! address pools hold about thirty bridge networks, far fewer than the
//! sandboxes one daemon runs.
//!
//! The network is made on first use and never removed (every control
//! plane using the daemon shares it). A network of that name that lets
//! containers reach each other is refused, never used.

use bollard::Docker;
use bollard::models::{Network, NetworkCreateRequest};
use bollard::query_parameters::ListNetworksOptionsBuilder;
use openhands_workspace::docker::client::call;
use std::collections::HashMap;
use std::time::Duration;

/// Name of the sandboxes' network.
pub const NETWORK: &str = "openhands-sandboxes";

/// The bridge driver's option for inter-container communication.
pub const ICC_OPTION: &str = "com.docker.network.bridge.enable_icc";

/// The bridge driver's option naming the host address published ports
/// default to: the loopback, so a port published without an address is
/// not reachable from other machines either.
const HOST_BINDING_OPTION: &str = "com.docker.network.bridge.host_binding_ipv4";

/// Label on the network (who made it).
const NETWORK_LABEL: &str = "openhands.control.network";

/// The network's creation request.
pub fn network_request() -> NetworkCreateRequest {
    NetworkCreateRequest {
        name: NETWORK.to_string(),
        driver: Some("bridge".into()),
        options: Some(HashMap::from([
            (ICC_OPTION.to_string(), "false".to_string()),
            (HOST_BINDING_OPTION.to_string(), "127.0.0.1".to_string()),
        ])),
        labels: Some(HashMap::from([(
            NETWORK_LABEL.to_string(),
            "sandboxes".to_string(),
        )])),
        ..NetworkCreateRequest::default()
    }
}

/// Why `n` cannot carry sandboxes, or `None`: it must be a bridge on
/// which containers cannot reach each other.
pub fn unfit(n: &Network) -> Option<String> {
    let driver = n.driver.as_deref().unwrap_or_default();
    let icc = n
        .options
        .as_ref()
        .and_then(|o| o.get(ICC_OPTION))
        .map(String::as_str);
    if driver != "bridge" || icc != Some("false") {
        return Some(format!(
            "the docker network {NETWORK} (driver {driver:?}) lets its containers reach each other \
             (its {ICC_OPTION} is not \"false\"); remove it (`docker network rm {NETWORK}`) and \
             the control plane makes it again"
        ));
    }
    None
}

/// Why the sandboxes' network cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    /// The networks could not be listed.
    #[error("{0}")]
    List(#[source] openhands_workspace::docker::DockerError),
    /// The network could not be made.
    #[error("making the docker network {NETWORK}: {0}")]
    Create(#[source] openhands_workspace::docker::DockerError),
    /// It was made and then was not there.
    #[error("the docker network {NETWORK} vanished as it was made")]
    Vanished,
    /// It lets containers reach each other (see [`unfit`]).
    #[error("{0}")]
    Unfit(String),
    /// Docker reported it without an id.
    #[error("the docker network {NETWORK} has no id")]
    NoId,
}

/// The networks named exactly [`NETWORK`], oldest first (Engine APIs
/// before 1.44 let two requests at once make two of one name).
async fn listed(docker: &Docker, timeout: Duration) -> Result<Vec<Network>, NetworkError> {
    let filters = HashMap::from([("name", vec![NETWORK])]);
    let opts = ListNetworksOptionsBuilder::new().filters(&filters).build();
    let mut found: Vec<Network> = call("list networks", timeout, docker.list_networks(Some(opts)))
        .await
        .map_err(NetworkError::List)?
        .into_iter()
        .filter(|n| n.name.as_deref() == Some(NETWORK))
        .collect();
    let key = |n: &Network| {
        let created = n
            .created
            .as_deref()
            .and_then(|c| chrono::DateTime::parse_from_rfc3339(c).ok());
        (created, n.id.clone())
    };
    found.sort_by_key(key);
    Ok(found)
}

/// The id of the sandboxes' network, made first if there is none; an
/// error if it cannot be made or lets containers reach each other.
pub async fn ensure(docker: &Docker, timeout: Duration) -> Result<String, NetworkError> {
    let mut found = listed(docker, timeout).await?;
    if found.is_empty() {
        let made = call(
            "create network",
            timeout,
            docker.create_network(network_request()),
        )
        .await;
        found = listed(docker, timeout).await?;
        match made {
            Ok(made) => {
                // Another control plane made one at the same moment: all
                // use the oldest, ours goes.
                if found.first().and_then(|n| n.id.as_deref()) != Some(made.id.as_str()) {
                    let _ = call("remove network", timeout, docker.remove_network(&made.id)).await;
                }
            }
            Err(e) if found.is_empty() => return Err(NetworkError::Create(e)),
            Err(_) => {}
        }
    }
    let Some(chosen) = found.first() else {
        return Err(NetworkError::Vanished);
    };
    if let Some(why) = unfit(chosen) {
        return Err(NetworkError::Unfit(why));
    }
    chosen.id.clone().ok_or(NetworkError::NoId)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(driver: &str, icc: Option<&str>) -> Network {
        Network {
            name: Some(NETWORK.into()),
            id: Some("n1".into()),
            driver: Some(driver.into()),
            options: Some(
                icc.map(|v| HashMap::from([(ICC_OPTION.to_string(), v.to_string())]))
                    .unwrap_or_default(),
            ),
            ..Network::default()
        }
    }

    #[test]
    fn only_a_bridge_without_inter_container_traffic_carries_sandboxes() {
        let made = network_request();
        assert_eq!(made.driver.as_deref(), Some("bridge"));
        let options = made.options.clone().unwrap_or_default();
        assert_eq!(options.get(ICC_OPTION).map(String::as_str), Some("false"));
        assert_eq!(unfit(&net("bridge", Some("false"))), None);
        for n in [
            net("bridge", None),
            net("bridge", Some("true")),
            net("overlay", Some("false")),
        ] {
            let why = unfit(&n).unwrap();
            assert!(
                why.contains("docker network rm openhands-sandboxes"),
                "{why}"
            );
        }
    }
}
