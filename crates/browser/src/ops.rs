//! What each browser action does on a running browser, and the text it
//! answers with.

use crate::content::format_content;
use crate::error::BrowserError;
use crate::record_ops;
use crate::running::Running;
use crate::script::eval;
use base64::Engine;
use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::dom_storage::{
    EnableParams as DomStorageEnable, SetDomStorageItemParams, StorageId,
};
use chromiumoxide::cdp::browser_protocol::input::InsertTextParams;
use chromiumoxide::cdp::browser_protocol::network::CookieParam;
use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, EventFrameNavigated, EventFrameStartedLoading,
    EventFrameStoppedLoading, EventLoadEventFired,
};
use chromiumoxide::layout::Point;
use chromiumoxide::page::ScreenshotParams;
use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use std::time::Duration;

const STATE_JS: &str = include_str!("js/state.js");
const MARKDOWN_JS: &str = include_str!("js/markdown.js");
const CLICK_TARGET_JS: &str = include_str!("js/click_target.js");
const FOCUS_JS: &str = include_str!("js/focus_for_typing.js");

/// How far one scroll moves, in CSS pixels.
const SCROLL_STEP: i64 = 500;
/// How long after a click or history step a navigation has to start to be
/// waited for.
const NAVIGATION_GRACE: Duration = Duration::from_millis(400);

/// One browser action.
#[derive(Debug, Clone, PartialEq)]
pub enum BrowserOp {
    /// Load `url` in the current tab, or in a new one.
    Navigate {
        /// Where to go.
        url: String,
        /// Open a new tab for it.
        new_tab: bool,
    },
    /// Click the element numbered `index` by the last state.
    Click {
        /// The element's number.
        index: i64,
        /// Open a link's target in a new tab instead.
        new_tab: bool,
    },
    /// Replace the text of the element numbered `index`.
    Type {
        /// The element's number.
        index: i64,
        /// What to type.
        text: String,
    },
    /// Describe the page and number its interactive elements.
    GetState {
        /// Add a PNG screenshot.
        screenshot: bool,
    },
    /// The page as Markdown.
    GetContent {
        /// Keep links as Markdown links.
        links: bool,
        /// The character to start from.
        start: usize,
    },
    /// Scroll by one step.
    Scroll {
        /// `true` for down.
        down: bool,
    },
    /// One step back in history.
    GoBack,
    /// The open tabs.
    ListTabs,
    /// Make the tab whose id ends in `tab_id` current.
    SwitchTab(String),
    /// Close the tab whose id ends in `tab_id`.
    CloseTab(String),
    /// Cookies and web storage.
    GetStorage,
    /// Restore cookies and web storage.
    SetStorage(Value),
    /// Start recording the session with rrweb.
    StartRecording,
    /// Stop recording and write the remaining events.
    StopRecording,
}

impl BrowserOp {
    /// Whether the action may load another page, so a recording takes the
    /// page's events before and restarts its recorder after (the
    /// reference's `recording_aware` actions).
    fn may_navigate(&self) -> bool {
        matches!(
            self,
            BrowserOp::Navigate { .. } | BrowserOp::Click { .. } | BrowserOp::GoBack
        )
    }
}

/// What an action answers: the text for the model and, for states with a
/// screenshot, the PNG as base64.
#[derive(Debug, Clone, PartialEq)]
pub struct OpOutput {
    /// The answer text.
    pub text: String,
    /// Base64 PNG, when a screenshot was taken.
    pub screenshot: Option<String>,
}

impl OpOutput {
    fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            screenshot: None,
        }
    }
}

/// The tab id the model sees: the last four characters of the target id.
pub fn tab_id(page: &Page) -> String {
    let id: &str = page.target_id().as_ref();
    let start = id.char_indices().rev().nth(3).map_or(0, |(i, _)| i);
    id[start..].to_string()
}

/// Performs `op` on `running`.
pub(crate) async fn perform(
    running: &mut Running,
    op: BrowserOp,
) -> Result<OpOutput, BrowserError> {
    let recording = running.recording.is_some() && op.may_navigate();
    if recording {
        record_ops::collect(running, false, false).await;
    }
    let out = perform_action(running, op).await;
    if recording {
        record_ops::restart_on_page(running).await;
    }
    out
}

async fn perform_action(running: &mut Running, op: BrowserOp) -> Result<OpOutput, BrowserError> {
    match op {
        BrowserOp::Navigate { url, new_tab } => navigate(running, &url, new_tab).await,
        BrowserOp::Click { index, new_tab } => click(running, index, new_tab).await,
        BrowserOp::Type { index, text } => type_text(running, index, &text).await,
        BrowserOp::GetState { screenshot } => state(running, screenshot).await,
        BrowserOp::GetContent { links, start } => content(running, links, start).await,
        BrowserOp::Scroll { down } => {
            let dy = if down { SCROLL_STEP } else { -SCROLL_STEP };
            let _: Value = eval(running.page()?, &format!("window.scrollBy(0, {dy})")).await?;
            Ok(OpOutput::text(format!(
                "Scrolled {}",
                if down { "down" } else { "up" }
            )))
        }
        BrowserOp::GoBack => {
            let page = running.page()?.clone();
            let timeout = running.load_timeout;
            after_possible_navigation(&page, timeout, async {
                eval::<Value>(&page, "history.back()").await.map(|_| ())
            })
            .await?;
            Ok(OpOutput::text("Navigated back"))
        }
        BrowserOp::ListTabs => list_tabs(running).await,
        BrowserOp::SwitchTab(id) => switch_tab(running, &id).await,
        BrowserOp::CloseTab(id) => close_tab(running, &id).await,
        BrowserOp::GetStorage => get_storage(running).await,
        BrowserOp::SetStorage(state) => set_storage(running, &state).await,
        BrowserOp::StartRecording => record_ops::start(running).await.map(OpOutput::text),
        BrowserOp::StopRecording => record_ops::stop(running).await.map(OpOutput::text),
    }
}

async fn navigate(
    running: &mut Running,
    url: &str,
    new_tab: bool,
) -> Result<OpOutput, BrowserError> {
    if new_tab {
        let page = running.browser.new_page(url).await?;
        running.tabs.push(page);
        running.current = running.tabs.len() - 1;
        return Ok(OpOutput::text(format!("Opened new tab with URL: {url}")));
    }
    running.page()?.goto(url).await?;
    Ok(OpOutput::text(format!("Navigated to: {url}")))
}

/// Runs `act` and, when it starts a navigation within a short grace time,
/// waits for the new page to load.
async fn after_possible_navigation(
    page: &Page,
    load_timeout: Duration,
    act: impl Future<Output = Result<(), BrowserError>>,
) -> Result<(), BrowserError> {
    let mut started = page.event_listener::<EventFrameStartedLoading>().await?;
    let mut loaded = page.event_listener::<EventLoadEventFired>().await?;
    let mut navigated = page.event_listener::<EventFrameNavigated>().await?;
    let mut stopped = page.event_listener::<EventFrameStoppedLoading>().await?;
    act.await?;
    if tokio::time::timeout(NAVIGATION_GRACE, started.next())
        .await
        .is_err()
    {
        return Ok(());
    }
    let deadline = tokio::time::Instant::now() + load_timeout;
    // A page restored from the back/forward cache commits without a load
    // event; a cancelled navigation only stops loading.
    let _ = tokio::time::timeout_at(deadline, async {
        tokio::select! {
            _ = loaded.next() => {},
            _ = navigated.next() => {},
            _ = stopped.next() => {},
        }
    })
    .await;
    while tokio::time::Instant::now() < deadline {
        if let Ok(state) = eval::<String>(page, "document.readyState").await
            && state == "complete"
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// The element numbered `index`, numbering the page first when it has not
/// been numbered since it loaded.
async fn locate<T: DeserializeOwned>(
    page: &Page,
    script: &str,
    index: i64,
) -> Result<Option<T>, BrowserError> {
    let call = format!("({script})({index})");
    let found: Option<T> = eval(page, &call).await?;
    if found.is_some() {
        return Ok(found);
    }
    let _: Value = eval(page, STATE_JS).await?;
    eval(page, &call).await
}

#[derive(serde::Deserialize)]
struct ClickTarget {
    x: f64,
    y: f64,
    href: Option<String>,
}

async fn click(running: &mut Running, index: i64, new_tab: bool) -> Result<OpOutput, BrowserError> {
    let page = running.page()?.clone();
    let Some(target) = locate::<ClickTarget>(&page, CLICK_TARGET_JS, index).await? else {
        return Ok(OpOutput::text(format!(
            "Element with index {index} not found"
        )));
    };
    if new_tab && let Some(href) = target.href {
        let tab = running.browser.new_page(href.as_str()).await?;
        running.tabs.push(tab);
        running.current = running.tabs.len() - 1;
        let short: String = href.chars().take(20).collect();
        return Ok(OpOutput::text(format!(
            "Clicked element {index} and opened in new tab {short}..."
        )));
    }
    after_possible_navigation(&page, running.load_timeout, async {
        page.click(Point::new(target.x, target.y)).await?;
        Ok(())
    })
    .await?;
    if new_tab {
        Ok(OpOutput::text(format!(
            "Clicked element {index} (new tab not supported for non-link elements)"
        )))
    } else {
        Ok(OpOutput::text(format!("Clicked element {index}")))
    }
}

/// Whether `text` looks like an e-mail address or a credential, which are
/// not echoed back.
fn sensitive_kind(text: &str) -> Option<&'static str> {
    if text.chars().count() < 6 {
        return None;
    }
    if let Some((_, domain)) = text.rsplit_once('@')
        && domain.contains('.')
    {
        return Some("email");
    }
    let long = text.chars().count() >= 16;
    let digit = text.chars().any(|c| c.is_ascii_digit());
    let alpha = text.chars().any(char::is_alphabetic);
    let punct = text.chars().any(|c| matches!(c, '.' | '-' | '_'));
    (long && digit && alpha && punct).then_some("credential")
}

async fn type_text(
    running: &mut Running,
    index: i64,
    text: &str,
) -> Result<OpOutput, BrowserError> {
    let page = running.page()?;
    let focused: Option<bool> = locate(page, FOCUS_JS, index).await?;
    if focused != Some(true) {
        return Ok(OpOutput::text(format!(
            "Element with index {index} not found"
        )));
    }
    page.execute(InsertTextParams::new(text)).await?;
    Ok(OpOutput::text(match sensitive_kind(text) {
        Some(kind) => format!("Typed <{kind}> into element {index}"),
        None => format!("Typed '{text}' into element {index}"),
    }))
}

async fn state(running: &mut Running, screenshot: bool) -> Result<OpOutput, BrowserError> {
    sync_tabs(running).await?;
    let page = running.page()?.clone();
    let mut described: Map<String, Value> = eval(&page, STATE_JS).await?;
    let mut tabs = Vec::new();
    for tab in &running.tabs {
        tabs.push(json!({
            "url": tab.url().await?.unwrap_or_default(),
            "title": tab.get_title().await?.unwrap_or_default(),
        }));
    }
    // The reference's key order: url, title, tabs, interactive_elements, ...
    let mut out = Map::new();
    for key in ["url", "title"] {
        out.insert(key.into(), described.remove(key).unwrap_or(Value::Null));
    }
    out.insert("tabs".into(), Value::Array(tabs));
    for (k, v) in described {
        out.insert(k, v);
    }
    let mut shot = None;
    if screenshot {
        let params = ScreenshotParams::builder()
            .format(CaptureScreenshotFormat::Png)
            .build();
        let png = page.screenshot(params).await?;
        shot = Some(base64::engine::general_purpose::STANDARD.encode(png));
        if let Some(viewport) = out.get("viewport").cloned() {
            out.insert("screenshot_dimensions".into(), viewport);
        }
    }
    Ok(OpOutput {
        text: pretty(&Value::Object(out)),
        screenshot: shot,
    })
}

#[derive(serde::Deserialize)]
struct Rendered {
    html_chars: usize,
    markdown: String,
}

async fn content(
    running: &mut Running,
    links: bool,
    start: usize,
) -> Result<OpOutput, BrowserError> {
    let page = running.page()?;
    let call = format!("({MARKDOWN_JS})({})", json!({ "links": links }));
    let rendered: Rendered = eval(page, &call).await?;
    let url = page.url().await?.unwrap_or_default();
    Ok(OpOutput::text(format_content(
        &url,
        rendered.html_chars,
        &rendered.markdown,
        start,
    )))
}

/// Adds the tabs our pages opened themselves (`target=_blank` links,
/// `window.open`) to the tab list.
async fn sync_tabs(running: &mut Running) -> Result<(), BrowserError> {
    let pages = running.browser.pages().await?;
    for page in pages {
        let known = |id: &chromiumoxide::cdp::browser_protocol::target::TargetId| {
            running.tabs.iter().any(|t| t.target_id() == id)
        };
        if known(page.target_id()) {
            continue;
        }
        if page.opener_id().as_ref().is_some_and(known) {
            running.tabs.push(page);
        }
    }
    Ok(())
}

fn find_tab(running: &Running, id: &str) -> Option<usize> {
    let id = id.trim();
    if id.is_empty() {
        return None;
    }
    running.tabs.iter().position(|p| {
        let full: &str = p.target_id().as_ref();
        full.to_ascii_lowercase()
            .ends_with(&id.to_ascii_lowercase())
    })
}

async fn list_tabs(running: &mut Running) -> Result<OpOutput, BrowserError> {
    sync_tabs(running).await?;
    let mut tabs = Vec::new();
    for page in &running.tabs {
        tabs.push(json!({
            "tab_id": tab_id(page),
            "url": page.url().await?.unwrap_or_default(),
            "title": page.get_title().await?.unwrap_or_default(),
        }));
    }
    Ok(OpOutput::text(pretty(&Value::Array(tabs))))
}

async fn switch_tab(running: &mut Running, id: &str) -> Result<OpOutput, BrowserError> {
    sync_tabs(running).await?;
    let Some(i) = find_tab(running, id) else {
        return Err(BrowserError::Cdp(format!("no tab with id {id}")));
    };
    running.current = i;
    let page = running.page()?;
    page.bring_to_front().await?;
    let url = page.url().await?.unwrap_or_default();
    Ok(OpOutput::text(format!("Switched to tab {id}: {url}")))
}

async fn close_tab(running: &mut Running, id: &str) -> Result<OpOutput, BrowserError> {
    sync_tabs(running).await?;
    let Some(i) = find_tab(running, id) else {
        return Err(BrowserError::Cdp(format!("no tab with id {id}")));
    };
    let page = running.tabs.remove(i);
    page.close().await?;
    if running.tabs.is_empty() {
        let blank = running.browser.new_page("about:blank").await?;
        running.tabs.push(blank);
    }
    if running.current >= i && running.current > 0 {
        running.current -= 1;
    }
    running.current = running.current.min(running.tabs.len() - 1);
    let current = running.page()?;
    current.bring_to_front().await?;
    let url = current.url().await?.unwrap_or_default();
    Ok(OpOutput::text(format!("Closed tab # {id}, now on {url}")))
}

const WEB_STORAGE_JS: &str = r#"(() => {
  const dump = (s) => { const out = []; for (let i = 0; i < s.length; i++) { const k = s.key(i); out.push({ name: k, value: s.getItem(k) }); } return out; };
  if (!/^https?:$/.test(location.protocol)) return [];
  return [{ origin: location.origin, localStorage: dump(localStorage), sessionStorage: dump(sessionStorage) }];
})()"#;

async fn get_storage(running: &mut Running) -> Result<OpOutput, BrowserError> {
    let cookies = running.browser.get_cookies().await?;
    let origins: Value = eval(running.page()?, WEB_STORAGE_JS).await?;
    let state = json!({
        "cookies": serde_json::to_value(cookies).map_err(|e| BrowserError::Cdp(e.to_string()))?,
        "origins": origins,
    });
    Ok(OpOutput::text(pretty(&state)))
}

async fn set_storage(running: &mut Running, state: &Value) -> Result<OpOutput, BrowserError> {
    if let Some(cookies) = state.get("cookies").filter(|c| !c.is_null()) {
        let params: Vec<CookieParam> = serde_json::from_value(cookies.clone())
            .map_err(|e| BrowserError::Cdp(format!("invalid cookies: {e}")))?;
        if !params.is_empty() {
            running.browser.set_cookies(params).await?;
        }
    }
    let origins = state
        .get("origins")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !origins.is_empty() {
        let page = running.page()?;
        page.execute(DomStorageEnable::default()).await?;
        for origin in &origins {
            let Some(name) = origin.get("origin").and_then(Value::as_str) else {
                continue;
            };
            for (field, local) in [("localStorage", true), ("sessionStorage", false)] {
                for item in origin
                    .get(field)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let key = item
                        .get("key")
                        .or_else(|| item.get("name"))
                        .and_then(Value::as_str);
                    let (Some(key), Some(value)) = (key, item.get("value").and_then(Value::as_str))
                    else {
                        continue;
                    };
                    let mut id = StorageId::new(local);
                    id.security_origin = Some(name.to_string());
                    page.execute(SetDomStorageItemParams::new(id, key, value))
                        .await?;
                }
            }
        }
    }
    Ok(OpOutput::text("Storage set successfully"))
}

/// JSON with two-space indentation, as the reference prints it.
fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::sensitive_kind;

    #[test]
    fn emails_and_tokens_are_not_echoed() {
        assert_eq!(sensitive_kind("me@example.com"), Some("email"));
        assert_eq!(sensitive_kind("sk-abc_123456789012"), Some("credential"));
        assert_eq!(sensitive_kind("hello world"), None);
        assert_eq!(sensitive_kind("a@b"), None);
    }
}
