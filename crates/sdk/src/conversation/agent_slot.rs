//! The agent slot: the conversation's agent (immutable configuration,
//! replaced as a whole when it changes) and what it became in this
//! process — the runtime with its tool instances and prompt, built on
//! first use, and the MCP servers started for it.
//!
//! Its own lock order: `runtime` → `agent` → `mcp_started` →
//! `mcp_unreported` (each released before any other part is called).

use crate::agent::{Agent, AgentError, AgentRuntime};
use crate::condenser::Condenser;
use crate::mcp::McpStartup;
use crate::tool::{Tool, ToolEnv};
use openhands_mcp::ServerFailure;
use openhands_wire::agent::AgentSpec;
use parking_lot::{Mutex, RwLock};
use std::sync::Arc;

/// The agent and its runtime.
pub(crate) struct AgentSlot {
    agent: RwLock<Agent>,
    runtime: Mutex<Option<AgentRuntime>>,
    /// MCP servers started ahead of the runtime (by async code), taken
    /// when the runtime is built.
    mcp_started: Mutex<Option<McpStartup>>,
    /// MCP start failures not yet recorded as events.
    mcp_unreported: Mutex<Vec<ServerFailure>>,
}

/// A built runtime, and whether this call built it.
pub(crate) struct Built {
    /// The runtime.
    pub runtime: AgentRuntime,
    /// Built now (its condenser's LLM is new to the conversation).
    pub fresh: bool,
}

/// What a runtime replaced by [`AgentSlot::install`] leaves to close.
#[must_use]
pub(crate) struct Retired {
    tools: Vec<Arc<dyn Tool>>,
    mcp: Option<McpStartup>,
}

impl Retired {
    /// Closes the unused tool instances and the replaced MCP servers.
    pub async fn close(self) {
        for t in self.tools {
            t.close().await;
        }
        if let Some(m) = self.mcp {
            m.client.close().await;
        }
    }
}

impl AgentSlot {
    /// A slot holding `agent`, nothing built.
    pub fn new(agent: Agent) -> Self {
        Self {
            agent: RwLock::new(agent),
            runtime: Mutex::new(None),
            mcp_started: Mutex::new(None),
            mcp_unreported: Mutex::new(Vec::new()),
        }
    }

    /// The agent.
    pub fn agent(&self) -> Agent {
        self.agent.read().clone()
    }

    /// Runs `f` over the agent without copying it.
    pub fn with_agent<R>(&self, f: impl FnOnce(&Agent) -> R) -> R {
        f(&self.agent.read())
    }

    /// A copy of the agent's configuration.
    pub fn spec(&self) -> AgentSpec {
        self.agent.read().spec().clone()
    }

    /// The agent's LLM.
    pub fn llm(&self) -> openhands_llm::Llm {
        self.agent.read().llm().clone()
    }

    /// Makes `agent` the agent; the runtime is built again on next use.
    pub fn replace(&self, agent: Agent) {
        let mut rt = self.runtime.lock();
        *self.agent.write() = agent;
        *rt = None;
    }

    /// Makes `agent` the agent, keeping the built runtime (its tools and
    /// prompt stay; the agent's LLM is what the loop calls).
    pub fn swap(&self, agent: Agent) {
        *self.agent.write() = agent;
    }

    /// The built runtime, if any (nothing is built).
    pub fn built(&self) -> Option<AgentRuntime> {
        self.runtime.lock().clone()
    }

    /// The runtime, built on first use (`closed`: no MCP server is started
    /// for it). MCP servers are started here unless [`AgentSlot::start_mcp`]
    /// did, blocking the calling thread while they start; an MCP server
    /// that announced other tools has its new list offered.
    pub fn runtime(&self, env: &ToolEnv, closed: bool) -> Result<Built, AgentError> {
        let mut rt = self.runtime.lock();
        if let Some(r) = rt.as_ref() {
            if !r.mcp_tools_changed() {
                return Ok(Built {
                    runtime: r.clone(),
                    fresh: false,
                });
            }
            let agent = self.agent();
            let refreshed = agent.refresh_mcp_tools(r, env)?;
            *rt = Some(refreshed.clone());
            return Ok(Built {
                runtime: refreshed,
                fresh: false,
            });
        }
        let agent = self.agent();
        let started = self.mcp_started.lock().take();
        let mcp = match started {
            Some(m) => Some(m),
            None if closed => None,
            None => crate::mcp::start_blocking(&agent.spec().mcp_config, env)?,
        };
        let r = agent.materialize_with(env, mcp)?;
        self.mcp_unreported
            .lock()
            .extend(r.mcp_failures().iter().cloned());
        *rt = Some(r.clone());
        Ok(Built {
            runtime: r,
            fresh: true,
        })
    }

    /// Starts the agent's MCP servers from async code, ahead of the
    /// runtime (which would otherwise start them blocking). Does nothing
    /// when the runtime exists, they were started, or there are none.
    pub async fn start_mcp(&self, env: &ToolEnv) -> Result<(), AgentError> {
        if self.runtime.lock().is_some() || self.mcp_started.lock().is_some() {
            return Ok(());
        }
        let config = self.agent.read().spec().mcp_config.clone();
        let Some(started) = crate::mcp::start(&config, env).await? else {
            return Ok(());
        };
        let unneeded = {
            let rt = self.runtime.lock();
            let mut slot = self.mcp_started.lock();
            if slot.is_none() && rt.is_none() {
                *slot = Some(started);
                None
            } else {
                Some(started)
            }
        };
        // Another caller won the race: this set is not needed.
        if let Some(m) = unneeded {
            m.client.close().await;
        }
        Ok(())
    }

    /// MCP start failures not yet reported (each reported once).
    pub fn take_mcp_failures(&self) -> Vec<ServerFailure> {
        std::mem::take(&mut *self.mcp_unreported.lock())
    }

    /// Gives a built runtime `condenser` (after an LLM switch); `false`
    /// when nothing is built (it will be built from the configuration).
    pub fn set_condenser(&self, condenser: Condenser) -> bool {
        match self.runtime.lock().as_mut() {
            Some(rt) => {
                rt.set_condenser(Some(condenser));
                true
            }
            None => false,
        }
    }

    /// Whether the runtime is built.
    pub fn is_built(&self) -> bool {
        self.runtime.lock().is_some()
    }

    /// Makes `agent` the agent mid-conversation: a built runtime is rebuilt
    /// keeping its tool instances (MCP servers restarted when `mcp_changed`).
    /// Returns what the old runtime leaves to close once the change is
    /// recorded.
    pub async fn install(
        &self,
        agent: Agent,
        mcp_changed: bool,
        env: &ToolEnv,
    ) -> Result<Retired, AgentError> {
        let mut retired = Retired {
            tools: Vec::new(),
            mcp: None,
        };
        if let Some(old) = self.built() {
            let mcp = if mcp_changed {
                retired.mcp = old.mcp_client().cloned();
                crate::mcp::start(&agent.spec().mcp_config, env).await?
            } else {
                old.mcp_client().cloned()
            };
            let (rt, unused) = agent.rebuild_keeping(&old, env, mcp)?;
            self.mcp_unreported
                .lock()
                .extend(rt.mcp_failures().iter().cloned());
            retired.tools = unused;
            *self.runtime.lock() = Some(rt);
        }
        self.swap(agent);
        Ok(retired)
    }

    /// Closes the runtime's tools (terminal sessions) and MCP servers.
    pub async fn close(&self) {
        let rt = self.runtime.lock().take();
        if let Some(rt) = rt {
            rt.close().await;
        }
        let started = self.mcp_started.lock().take();
        if let Some(m) = started {
            m.client.close().await;
        }
    }
}
