//! The OpenAI-compatible gateway: any OpenAI client can drive OpenHands
//! agents through the server's `/v1` routes. A saved LLM profile `demo`
//! appears as the model `openhands_demo`; each chat completion runs an agent
//! conversation, whose id comes back in `X-OpenHands-ServerConversation-ID`
//! so a follow-up continues it.

use openhands::local_server;
use openhands::protocol::SESSION_API_KEY_HEADER;
use openhands::testing::llm_endpoint_from_env_or_script;
use openhands::wire::SecretString;
use serde_json::{Value, json};
use std::time::Duration;

const SESSION_KEY: &str = "gateway-example-key";
const CONVERSATION_HEADER: &str = "X-OpenHands-ServerConversation-ID";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (builder, _llm_server) = llm_endpoint_from_env_or_script(include_str!(
        "scripts/remote_15_openai_compatible_gateway.json"
    ))
    .await?;
    let root = std::env::current_dir()?.join("agent-server");
    std::fs::create_dir_all(root.join("workspace"))?;
    let mut config = local_server::config_in(&root);
    config.session_api_keys = vec![SESSION_KEY.into()];
    config.secret_key = Some(SecretString::new("encrypts-stored-profiles"));
    let server = local_server::start(config).await?;
    let http = openhands_client::http_client(&openhands_client::HttpOptions::with_timeout(
        Duration::from_secs(120),
    ))?;

    // 1. A profile with the model the agents behind the gateway use.
    let llm = builder.config();
    let profile = json!({
        "llm": {
            "model": llm.model,
            "base_url": llm.base_url,
            "api_key": llm.api_key.as_ref().map(|k| k.expose().to_string()),
        },
        "include_secrets": true
    });
    http.post(format!("{}/api/profiles/demo", server.url()))
        .header(SESSION_API_KEY_HEADER, SESSION_KEY)
        .json(&profile)
        .send()
        .await?
        .error_for_status()?;

    // 2. From here on, plain OpenAI protocol with a bearer key.
    let v1 = format!("{}/v1", server.url());
    let models: Value = http
        .get(format!("{v1}/models"))
        .bearer_auth(SESSION_KEY)
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    println!("models: {}", models["data"][0]["id"]);

    let first = http
        .post(format!("{v1}/chat/completions"))
        .bearer_auth(SESSION_KEY)
        .json(&json!({
            "model": "openhands_demo",
            "messages": [
                {"role": "system", "content": "Answer directly unless you need to inspect files."},
                {"role": "user", "content": "Explain what this OpenHands endpoint does in one sentence."}
            ]
        }))
        .send()
        .await?
        .error_for_status()?;
    let conversation_id = first
        .headers()
        .get(CONVERSATION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .ok_or("the gateway did not name its conversation")?;
    let first: Value = first.json().await?;
    println!("answer: {}", first["choices"][0]["message"]["content"]);
    println!("conversation: {conversation_id}");

    // 3. The same conversation continues with the header.
    let follow_up: Value = http
        .post(format!("{v1}/chat/completions"))
        .bearer_auth(SESSION_KEY)
        .header(CONVERSATION_HEADER, &conversation_id)
        .json(&json!({
            "model": "openhands_demo",
            "messages": [{"role": "user", "content": "And in three words?"}]
        }))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    println!(
        "follow-up: {}",
        follow_up["choices"][0]["message"]["content"]
    );
    server.shutdown().await?;
    Ok(())
}
