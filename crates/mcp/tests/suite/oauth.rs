//! OAuth 2.1 against a real authorization server: the `mcp` package's own
//! (`tests/fixtures/oauth_server.py`: discovery metadata, dynamic client
//! registration, /authorize and /token with PKCE checks, refresh), in front
//! of a bearer-protected MCP server. The test plays the user's browser: it
//! opens the authorization URL (approved at once) and follows the redirect
//! to our callback listener.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_mcp::oauth::{Authorization, MemoryStates, OAuthStateStore};
use openhands_mcp::{McpClient, McpConfig, McpContent, McpSession, StartOptions, UnknownFields};
use openhands_testkit::fixtures::mcp_oauth_server;
use serde_json::{Map, json};
use std::sync::Arc;
use std::time::Duration;

fn config(url: &str, transport: &str) -> McpConfig {
    McpConfig::parse(
        &json!({"secure": {"url": url, "transport": transport,
                           "auth": {"strategy": "oauth2",
                                    "authentication": {"type": "oauth", "client_name": "oh-test"}}}}),
        UnknownFields::Refuse,
    )
    .unwrap()
}

/// Opens the authorization URL like a browser and follows its redirect to
/// the callback listener (`callback_url`), whose page says how the
/// exchange ended: run it beside [`Authorization::complete`].
async fn consent(url: String, callback_url: String) {
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    assert!(url.contains("code_challenge="), "{url}");
    assert!(url.contains("code_challenge_method=S256"), "{url}");
    let resp = browser.get(&url).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 302, "{:?}", resp.text().await);
    let location = resp.headers()["location"].to_str().unwrap().to_string();
    assert!(location.starts_with(&callback_url), "{location}");
    let page = browser.get(&location).send().await.unwrap();
    assert!(page.status().is_success());
    let text = page.text().await.unwrap();
    assert!(text.contains("Authorization complete"), "{text}");
}

async fn whoami(s: &McpSession) -> String {
    let r = s.call_tool("whoami", Map::new()).await.unwrap();
    assert!(!r.is_error, "{r:?}");
    match &r.content[..] {
        [McpContent::Text(t)] => t.clone(),
        other => panic!("unexpected content {other:?}"),
    }
}

async fn authorize_call_and_refresh(transport: &str) {
    let Some((_server, url)) = mcp_oauth_server(transport, 3).await else {
        return;
    };
    let cfg = config(&url, transport);
    let oauth = cfg.servers[0].oauth.clone().unwrap();

    // Without tokens a connection does not start an authorization itself.
    let started = McpSession::start(&cfg, StartOptions::new(std::env::temp_dir())).await;
    let failure = started
        .failures
        .first()
        .expect("a server without tokens must fail");
    assert!(
        failure
            .error
            .to_string()
            .contains("must be authorized again"),
        "{}",
        failure.error
    );
    started.session.close().await;

    // Discovery, registration, consent, code exchange with PKCE.
    let store = Arc::new(MemoryStates::new());
    let auth = Authorization::begin(&url, &oauth, store.clone())
        .await
        .unwrap();
    let browser = consent(
        auth.authorization_url().to_string(),
        auth.callback_url().to_string(),
    );
    let (_, completed) = tokio::join!(browser, auth.complete(Duration::from_secs(10)));
    completed.unwrap();
    let state = store.load(&url).await.unwrap();
    let first_token = state.access_token().unwrap().to_string();
    assert!(first_token.starts_with("access-1-"), "{first_token}");
    let stored = state.to_json();
    assert_eq!(stored["tokens"]["token_type"], "Bearer");
    assert!(stored["tokens"]["refresh_token"].is_string());
    assert!(stored["token_expires_at"].as_f64().unwrap() > 0.0);
    assert_eq!(
        stored["client_info"]["redirect_uris"][0],
        auth_redirect(&stored)
    );

    // A session uses the stored token.
    let mut opts = StartOptions::new(std::env::temp_dir());
    opts.oauth_states = store.clone();
    let started = McpSession::start(&cfg, opts.clone()).await;
    assert!(started.failures.is_empty(), "{:?}", started.failures);
    let s = started.session;
    assert_eq!(whoami(&s).await, "token 1 of 1");

    // The access token expires: the next call refreshes it first, and the
    // store gets the new tokens.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(whoami(&s).await, "token 2 of 2");
    let refreshed = store.load(&url).await.unwrap();
    assert!(refreshed.access_token().unwrap().starts_with("access-2-"));
    s.close().await;

    // A new session starts from the refreshed state.
    let started = McpSession::start(&cfg, opts).await;
    assert!(started.failures.is_empty(), "{:?}", started.failures);
    assert_eq!(whoami(&started.session).await, "token 2 of 2");
    started.session.close().await;
}

fn auth_redirect(stored: &serde_json::Value) -> String {
    let uri = stored["client_info"]["redirect_uris"][0].as_str().unwrap();
    assert!(
        uri.starts_with("http://localhost:") && uri.ends_with("/callback"),
        "{uri}"
    );
    uri.to_string()
}

#[tokio::test]
async fn streamable_http_server_is_authorized_called_and_refreshed() {
    authorize_call_and_refresh("streamable-http").await;
}

#[tokio::test]
async fn sse_server_is_authorized_called_and_refreshed() {
    authorize_call_and_refresh("sse").await;
}
