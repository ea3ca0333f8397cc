//! The local engine: one confined `openhands-agent-server` process per
//! sandbox on the control plane's own machine ([`crate::hosts::local`]),
//! in `<data dir>/sandboxes/<id>`. Its processes outlive the control
//! plane; only the instance owning the data directory reaches them.

use super::{
    Engine, EngineError, LOCAL, Located, ProvisionRequest, Provisioned, RuntimeRefusal, RuntimeSpec,
};
use crate::agent_client::{AgentClient, Endpoint};
use crate::hosts::local::LocalSandboxes;
use crate::hosts::{ProvisionError, SandboxLayout, find_agent_server};
use crate::secrets::new_credential;
use crate::store::sandboxes::Sandbox;
use std::path::PathBuf;
use std::time::Duration;

/// The local engine.
#[derive(Debug)]
pub struct LocalEngine {
    procs: LocalSandboxes,
    data_dir: PathBuf,
    agent_server_bin: Option<PathBuf>,
    instance: String,
    client: AgentClient,
    start_timeout: Duration,
}

impl LocalEngine {
    /// The engine of instance `instance` with its sandboxes under
    /// `data_dir/sandboxes`.
    pub fn new(
        procs: LocalSandboxes,
        data_dir: PathBuf,
        agent_server_bin: Option<PathBuf>,
        instance: String,
        client: AgentClient,
        start_timeout: Duration,
    ) -> Self {
        Self {
            procs,
            data_dir,
            agent_server_bin,
            instance,
            client,
            start_timeout,
        }
    }

    /// The processes (confinement, shutdown).
    pub fn procs(&self) -> &LocalSandboxes {
        &self.procs
    }

    /// The directory layout of a sandbox.
    pub fn layout(&self, sandbox_id: &str) -> SandboxLayout {
        SandboxLayout::new(self.data_dir.join("sandboxes").join(sandbox_id))
    }

    async fn binary(&self) -> Result<PathBuf, ProvisionError> {
        let configured = self.agent_server_bin.clone();
        tokio::task::spawn_blocking(move || find_agent_server(configured.as_deref()))
            .await
            .map_err(|e| ProvisionError::Start(e.to_string()))?
            .ok_or(ProvisionError::NoBinary)
    }
}

#[async_trait::async_trait]
impl Engine for LocalEngine {
    fn name(&self) -> &'static str {
        LOCAL
    }

    async fn provision(&self, req: &ProvisionRequest) -> Result<Provisioned, ProvisionError> {
        let lay = self.layout(&req.sandbox_id);
        let secret = new_credential("").map_err(|e| ProvisionError::Start(e.to_string()))?;
        let (k, l) = (req.key.clone(), lay.clone());
        let confined = self.procs.confined();
        tokio::task::spawn_blocking(move || l.prepare(&k, &secret, confined))
            .await
            .map_err(|e| ProvisionError::Start(e.to_string()))??;
        let bin = self.binary().await?;
        let started = self
            .procs
            .start(&req.sandbox_id, &bin, &lay, self.start_timeout)
            .await?;
        let ep = Endpoint {
            url: started.url.clone(),
            key: req.key.clone(),
        };
        if let Err(e) = self.client.wait_ready(&ep, self.start_timeout).await {
            self.procs.stop(&req.sandbox_id, &lay).await;
            return Err(ProvisionError::Start(e.to_string()));
        }
        Ok(Provisioned {
            engine_id: started.pgid.to_string(),
            url: started.url,
            key: req.key.clone(),
            working_dir: lay.workspace().to_string_lossy().into_owned(),
        })
    }

    async fn locate(&self, s: &Sandbox, key: &str) -> Located {
        if !self.reaches(&s.owner_instance) {
            return Located::Unknown(format!("a local sandbox of instance {}", s.owner_instance));
        }
        let lay = self.layout(&s.id);
        let Some(pgid) = self.procs.locate(&s.id, &lay).await else {
            return Located::Gone("its agent server process is gone".into());
        };
        let Some(url) = s.url.clone() else {
            return Located::Unknown("no address was recorded".into());
        };
        let ep = Endpoint {
            url: url.clone(),
            key: key.to_string(),
        };
        match self.client.check(&ep).await {
            Ok(()) => Located::Running {
                url,
                engine_id: pgid.to_string(),
            },
            // The process is this sandbox's: a busy or starting server.
            Err(e) => Located::Unknown(format!("its agent server does not answer: {e}")),
        }
    }

    async fn release(&self, s: &Sandbox) {
        if self.reaches(&s.owner_instance) {
            self.procs.stop(&s.id, &self.layout(&s.id)).await;
        }
    }

    async fn list(&self) -> Result<Vec<String>, EngineError> {
        let root = self.data_dir.join("sandboxes");
        let found = tokio::task::spawn_blocking(move || {
            let Ok(entries) = std::fs::read_dir(&root) else {
                return Vec::new();
            };
            entries
                .flatten()
                .filter_map(|e| {
                    let id = e.file_name().into_string().ok()?;
                    crate::hosts::local::live_server(&SandboxLayout::new(e.path()))?;
                    Some(id)
                })
                .collect()
        })
        .await
        .map_err(|e| EngineError {
            engine: LOCAL,
            detail: e.to_string(),
        })?;
        Ok(found)
    }

    async fn health(&self) -> Result<(), EngineError> {
        self.binary().await.map(drop).map_err(|e| EngineError {
            engine: LOCAL,
            detail: e.to_string(),
        })
    }

    fn reaches(&self, owner: &str) -> bool {
        owner == self.instance
    }

    async fn check_runtime(&self, spec: &RuntimeSpec) -> Result<(), RuntimeRefusal> {
        if spec.image.is_some() {
            return Err(RuntimeRefusal::LocalImage);
        }
        match spec.first_setting() {
            None => Ok(()),
            Some(field) => Err(RuntimeRefusal::Unsupported {
                field,
                engine: "local",
            }),
        }
    }

    async fn pause(&self, s: &Sandbox) -> Result<(), EngineError> {
        self.signal(s, nix::sys::signal::Signal::SIGSTOP).await
    }

    async fn resume(&self, s: &Sandbox) -> Result<(), EngineError> {
        self.signal(s, nix::sys::signal::Signal::SIGCONT).await
    }
}

impl LocalEngine {
    /// Sends `sig` to the process group of the sandbox's agent server
    /// (bubblewrap starts no session of its own, so the group holds the
    /// server and everything it runs).
    async fn signal(&self, s: &Sandbox, sig: nix::sys::signal::Signal) -> Result<(), EngineError> {
        let err = |detail: String| EngineError {
            engine: LOCAL,
            detail,
        };
        if !self.reaches(&s.owner_instance) {
            return Err(err(format!(
                "a local sandbox of instance {}",
                s.owner_instance
            )));
        }
        let Some(pgid) = self.procs.locate(&s.id, &self.layout(&s.id)).await else {
            return Err(err("its agent server process is gone".into()));
        };
        openhands_workspace::exec::procs::signal_group(pgid, sig);
        Ok(())
    }
}
