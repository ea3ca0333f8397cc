//! Fetching a conversation's stored events over REST
//! (`GET /api/conversations/{id}/events/search`, page by page).

use super::error::RemoteError;
use super::http::ApiClient;
use super::hub::Hub;
use openhands_wire::event::Event;
use reqwest::Method;
use serde::Deserialize;
use serde_json::Value;
use uuid::Uuid;

/// Route prefix of the conversation API.
const CONVERSATIONS: &str = "/api/conversations";
/// Page size of event syncs.
const PAGE: usize = 100;

#[derive(Deserialize)]
struct EventPage {
    items: Vec<Value>,
    #[serde(default)]
    next_page_id: Option<String>,
}

/// Fetches every stored event of `id` into the hub (deduplicated).
pub async fn sync_events(api: &ApiClient, id: Uuid, hub: &Hub) -> Result<(), RemoteError> {
    let mut page_id: Option<String> = None;
    loop {
        let mut path = format!("{CONVERSATIONS}/{id}/events/search?limit={PAGE}");
        if let Some(p) = &page_id {
            path.push_str(&format!("&page_id={p}"));
        }
        let (_, body) = api
            .call::<Value>(Method::GET, &path, None, &[], Some(id))
            .await?;
        let page: EventPage = serde_json::from_value(body).map_err(|e| RemoteError::Protocol {
            what: path.clone(),
            detail: e.to_string(),
        })?;
        for item in page.items {
            match serde_json::from_value::<Event>(item) {
                Ok(e) => hub.accept(e),
                Err(e) => {
                    tracing::warn!(conversation = %id, error = %e, "undecodable event skipped")
                }
            }
        }
        match page.next_page_id {
            Some(p) if !p.is_empty() => page_id = Some(p),
            _ => return Ok(()),
        }
    }
}
