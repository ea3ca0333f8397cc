//! MCP OAuth on the command line: the tokens of OAuth servers
//! (`auth: "oauth"`, `openhands mcp add --auth oauth`) are kept between
//! runs in `~/.openhands/mcp_oauth.json`, each server's state encrypted
//! (with `OH_SECRET_KEY` when set, else with a random key kept owner-only
//! in `~/.openhands/mcp_oauth.key`). `openhands mcp login NAME` authorizes
//! a server (its URL printed, and opened in a browser when there is a
//! display; the redirect comes back to a loopback listener); a session
//! started on a terminal authorizes the servers that have no tokens yet
//! before it begins, and one without a terminal refuses to start without
//! them.

use crate::error::usage;
use openhands_mcp::McpConfig;
use openhands_mcp::oauth::OAuthStateStore;
use openhands_sdk::mcp_oauth::{
    CONSENT_LIMIT, FileOAuthStates, OAuthServer, authorize, pending, user_store,
};
use serde_json::{Map, Value};
use std::io::IsTerminal;
use std::sync::Arc;

/// The store of the command line's OAuth tokens.
pub fn store() -> anyhow::Result<Arc<FileOAuthStates>> {
    // The SDK's user store: a program on the SDK reads the same tokens.
    let store = user_store(
        &crate::paths::openhands_dir(),
        crate::settings::cipher_from_env()?,
    )
    .map_err(|e| usage(format!("cannot set up the MCP OAuth key: {e}")))?;
    Ok(Arc::new(store))
}

/// The parsed configuration of an agent's `mcp_config` map (`None` when
/// it has no server).
fn config_of(servers: &Map<String, Value>) -> anyhow::Result<Option<McpConfig>> {
    openhands_sdk::mcp::config_of(servers).map_err(|e| usage(e.to_string()))
}

/// Whether `servers` has an enabled OAuth server (then sessions need the
/// token store).
pub fn uses_oauth(servers: &Map<String, Value>) -> bool {
    config_of(servers)
        .ok()
        .flatten()
        .is_some_and(|c| !openhands_sdk::mcp_oauth::oauth_servers(&c).is_empty())
}

/// Authorizes one server, telling the user on standard error (or standard
/// output for `mcp login`) what to open.
async fn authorize_one(
    server: &OAuthServer,
    store: Arc<dyn OAuthStateStore>,
    browser: bool,
    to_stdout: bool,
) -> anyhow::Result<()> {
    let say = move |text: String| {
        if to_stdout {
            println!("{text}");
        } else {
            eprintln!("{text}");
        }
    };
    let name = server.name.clone();
    authorize(server, store, CONSENT_LIMIT, |url| {
        say(format!(
            "MCP server '{name}' needs your authorization. Open this URL in a browser:\n{url}\n\
             waiting for the authorization (up to {} minutes)…",
            CONSENT_LIMIT.as_secs() / 60
        ));
        if browser {
            tokio::spawn(openhands_sdk::mcp_oauth::open_browser(url.to_string()));
        }
    })
    .await
    .map_err(|e| usage(format!("MCP server '{}': {e}", server.name)))?;
    say(format!("MCP server '{}' is authorized.", server.name));
    Ok(())
}

/// Before a session starts: authorizes the OAuth servers of `servers`
/// that have no tokens yet when there is a terminal to ask on; without
/// one, refuses with what to run.
pub async fn ensure_authorized(
    servers: &Map<String, Value>,
    store: Option<&Arc<FileOAuthStates>>,
) -> anyhow::Result<()> {
    let (Some(cfg), Some(store)) = (config_of(servers)?, store) else {
        return Ok(());
    };
    let missing = pending(&cfg, store.as_ref()).await;
    if missing.is_empty() {
        return Ok(());
    }
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if !terminal {
        let names: Vec<&str> = missing.iter().map(|s| s.name.as_str()).collect();
        return Err(usage(format!(
            "MCP server '{}' needs OAuth authorization first: run `openhands mcp login {}` \
             (or disable it with `openhands mcp disable {}`)",
            names[0], names[0], names[0]
        )));
    }
    for server in &missing {
        authorize_one(server, store.clone(), true, false).await?;
    }
    Ok(())
}

/// `openhands mcp login NAME`: authorizes the server now (again, when it
/// was authorized before).
pub async fn login(name: &str, servers: &Map<String, Value>, browser: bool) -> anyhow::Result<()> {
    let Some(entry) = servers.get(name) else {
        return Err(usage(format!(
            "no MCP server '{name}'; `openhands mcp list` shows them"
        )));
    };
    let mut one = Map::new();
    one.insert(name.to_string(), entry.clone());
    let cfg = config_of(&one)?.ok_or_else(|| {
        usage(format!(
            "MCP server '{name}' is disabled; enable it with `openhands mcp enable {name}`"
        ))
    })?;
    let Some(server) = openhands_sdk::mcp_oauth::oauth_servers(&cfg)
        .into_iter()
        .next()
    else {
        return Err(usage(format!(
            "MCP server '{name}' does not use OAuth (add it with --auth oauth)"
        )));
    };
    let store = store()?;
    authorize_one(&server, store.clone(), browser, true).await?;
    println!(
        "MCP server '{name}' is authorized; its tokens are kept encrypted in {}",
        store.path().display()
    );
    Ok(())
}

/// `openhands mcp logout NAME`: forgets the server's tokens.
pub fn logout(name: &str, servers: &Map<String, Value>) -> anyhow::Result<()> {
    let url = servers
        .get(name)
        .and_then(|s| s.get("url"))
        .and_then(Value::as_str)
        .ok_or_else(|| usage(format!("no remote MCP server '{name}'")))?;
    store()?
        .put(url, None)
        .map_err(|e| usage(format!("cannot update the token file: {e}")))?;
    println!("forgot the OAuth tokens of MCP server '{name}'");
    Ok(())
}
