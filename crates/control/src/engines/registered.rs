//! The registered-hosts engine: agent servers an administrator registered
//! (`openhands control host add`); a sandbox is a working directory on the
//! least loaded enabled host that answers. The database is this engine's
//! record: any instance reaches any of its sandboxes.

use super::{Engine, EngineError, HOST, Located, ProvisionRequest, Provisioned};
use crate::agent_client::{AgentClient, Endpoint};
use crate::hosts::ProvisionError;
use crate::secrets::Sealer;
use crate::store::Store;
use crate::store::sandboxes::Sandbox;

/// The registered-hosts engine.
#[derive(Clone)]
pub struct RegisteredHosts {
    store: Store,
    sealer: Sealer,
    client: AgentClient,
}

impl std::fmt::Debug for RegisteredHosts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredHosts").finish_non_exhaustive()
    }
}

impl RegisteredHosts {
    /// The engine over the hosts in `store`.
    pub fn new(store: Store, sealer: Sealer, client: AgentClient) -> Self {
        Self {
            store,
            sealer,
            client,
        }
    }

    /// The endpoint of the host a sandbox runs on, with the sandbox's
    /// recorded key.
    async fn endpoint(&self, s: &Sandbox, key: &str) -> Result<Endpoint, HostLookup> {
        let host_id = s
            .engine_id
            .as_deref()
            .or(s.host_id.as_deref())
            .ok_or(HostLookup::NotRecorded)?;
        let host = self
            .store
            .host(host_id)
            .await?
            .ok_or(HostLookup::Unregistered)?;
        Ok(Endpoint {
            url: host.url,
            key: key.to_string(),
        })
    }
}

/// Why the host of a sandbox cannot be found.
#[derive(Debug, thiserror::Error)]
enum HostLookup {
    /// The row names no host.
    #[error("no host was recorded")]
    NotRecorded,
    /// The database failed.
    #[error("{0}")]
    Store(#[from] crate::store::StoreError),
    /// The host was removed.
    #[error("its host is no longer registered")]
    Unregistered,
}

#[async_trait::async_trait]
impl Engine for RegisteredHosts {
    fn name(&self) -> &'static str {
        HOST
    }

    async fn provision(&self, req: &ProvisionRequest) -> Result<Provisioned, ProvisionError> {
        let start = |e: String| ProvisionError::Start(e);
        let host = self
            .store
            .least_loaded_host()
            .await
            .map_err(|e| start(e.to_string()))?
            .ok_or_else(|| start("no registered host is enabled and healthy".into()))?;
        let key = self
            .sealer
            .open(&host.sealed_key)
            .map_err(|e| start(e.to_string()))?;
        let ep = Endpoint {
            url: host.url.clone(),
            key,
        };
        self.client
            .check(&ep)
            .await
            .map_err(|e| start(format!("host {}: {e}", host.url)))?;
        Ok(Provisioned {
            engine_id: host.id,
            url: ep.url,
            key: ep.key,
            working_dir: format!(
                "{}/{}",
                host.workspace_root.trim_end_matches('/'),
                req.sandbox_id
            ),
        })
    }

    async fn locate(&self, s: &Sandbox, key: &str) -> Located {
        let ep = match self.endpoint(s, key).await {
            Ok(ep) => ep,
            Err(e) => return Located::Unknown(e.to_string()),
        };
        match self.client.check(&ep).await {
            Ok(()) => Located::Running {
                url: ep.url,
                engine_id: s
                    .engine_id
                    .clone()
                    .or_else(|| s.host_id.clone())
                    .unwrap_or_default(),
            },
            Err(e) => Located::Unknown(format!("its host does not answer: {e}")),
        }
    }

    async fn release(&self, s: &Sandbox) {
        // The conversations go; the host's working directory stays.
        let Some(Ok(key)) = s.sealed_key.as_deref().map(|k| self.sealer.open(k)) else {
            return;
        };
        let Ok(ep) = self.endpoint(s, &key).await else {
            return;
        };
        let Ok(tasks) = self.store.tasks_of(&s.id).await else {
            return;
        };
        for t in tasks {
            if let Err(e) = self.client.delete_conversation(&ep, &t.session_id).await {
                tracing::debug!(sandbox = %s.id, "deleting a conversation failed: {e}");
            }
        }
    }

    async fn list(&self) -> Result<Vec<String>, EngineError> {
        self.store
            .sandboxes_of_engine(HOST)
            .await
            .map(|v| v.into_iter().map(|s| s.id).collect())
            .map_err(|e| EngineError {
                engine: HOST,
                detail: e.to_string(),
            })
    }

    async fn health(&self) -> Result<(), EngineError> {
        match self.store.least_loaded_host().await {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(EngineError {
                engine: HOST,
                detail: "no registered host is enabled and healthy".into(),
            }),
            Err(e) => Err(EngineError {
                engine: HOST,
                detail: e.to_string(),
            }),
        }
    }

    fn reaches(&self, _owner: &str) -> bool {
        true
    }
}
