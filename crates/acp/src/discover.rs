//! `POST /api/acp/models`'s work: start the server in a throwaway session,
//! report what it offers, stop it.

use crate::client::{AcpClient, LaunchOptions};
use crate::config::AcpAgentConfig;
use crate::models::{AcpModelDiscovery, AcpModelDiscoveryError};

/// Starts the server for `config` (its model ignored) with `opts`, and
/// reports its identity and models; a start failure is reported in
/// `error`, never as an `Err`.
pub async fn discover_models(config: &AcpAgentConfig, opts: LaunchOptions) -> AcpModelDiscovery {
    let mut config = config.clone();
    config.model = None;
    config.resume_session_id = None;
    match AcpClient::start(&config, opts).await {
        Ok(client) => {
            let state = client.state();
            client.close().await;
            AcpModelDiscovery {
                agent_name: Some(state.agent_name.clone()).filter(|s| !s.is_empty()),
                agent_version: Some(state.agent_version.clone()).filter(|s| !s.is_empty()),
                current_model_id: state.current_model_id.clone(),
                available_models: state.available_models.clone().unwrap_or_default(),
                supports_runtime_model_switch: state.supports_runtime_model_switch(),
                error: None,
            }
        }
        Err(e) => AcpModelDiscovery {
            error: Some(AcpModelDiscoveryError {
                code: e.init_code().to_string(),
                detail: e.detail(),
            }),
            ..AcpModelDiscovery::default()
        },
    }
}
