//! The browser tools the model calls (`browser_navigate`, `browser_click`,
//! ...), all sharing the conversation's [`BrowserSession`], and the
//! `browser_tool_set` that creates them together.

use crate::error::BrowserError;
use crate::observation::{BrowserObservation, save_screenshot};
use crate::ops::BrowserOp;
use crate::recording::{RECORDING_DIR, RrwebSource};
use crate::session::{BrowserConfig, BrowserSession};
use openhands_sdk::tool::{Tool, ToolCallContext, ToolEnv, ToolError, TypedTool};
use openhands_wire::tool::ToolAnnotations;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Registered name of the tool set (what `ToolSpec.name` says).
pub const BROWSER_TOOL_SET_NAME: &str = "browser_tool_set";

/// State shared by the tools of one conversation.
#[derive(Debug)]
pub struct BrowserShared {
    session: BrowserSession,
    save_dir: Option<PathBuf>,
}

impl BrowserShared {
    /// The conversation's browser.
    pub fn session(&self) -> &BrowserSession {
        &self.session
    }

    async fn run(&self, op: BrowserOp, ctx: &ToolCallContext) -> BrowserObservation {
        let save_dir = self
            .save_dir
            .as_ref()
            .map(|d| d.to_string_lossy().into_owned());
        match self.session.run(op, &ctx.cancel).await {
            Ok(out) => {
                if let (Some(shot), Some(dir)) = (&out.screenshot, &self.save_dir) {
                    save_screenshot(shot, dir).await;
                }
                BrowserObservation::new(out.text, false, out.screenshot, save_dir)
            }
            // A recording that cannot start or stop is answered as text,
            // not as a failed action (the reference's recording tools
            // return their "Error: …" strings as plain results).
            Err(BrowserError::Recording(m)) => BrowserObservation::new(m, false, None, save_dir),
            Err(e) => {
                let text = match e {
                    BrowserError::Missing(m) => m,
                    other => format!("Browser operation failed: {other}"),
                };
                BrowserObservation::new(text, true, None, save_dir)
            }
        }
    }
}

fn annotations(
    title: &str,
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    open_world: bool,
) -> ToolAnnotations {
    ToolAnnotations {
        title: Some(title.to_string()),
        read_only_hint: read_only,
        destructive_hint: destructive,
        idempotent_hint: idempotent,
        open_world_hint: open_world,
    }
}

fn object_schema(properties: Value, required: &[&str]) -> Value {
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), properties);
    if !required.is_empty() {
        schema.insert("required".into(), json!(required));
    }
    Value::Object(schema)
}

fn non_negative(name: &str, v: i64) -> Result<(), ToolError> {
    if v < 0 {
        return Err(ToolError::InvalidArguments(format!(
            "`{name}` must be 0 or greater, got {v}"
        )));
    }
    Ok(())
}

/// Defines one browser tool: its action type, names, description, schema,
/// hints, validation and the operation it runs.
macro_rules! browser_tool {
    (
        $(#[$doc:meta])*
        $tool:ident, $action:ident, $name:literal, $kind:literal, $action_kind:literal,
        { $( $(#[$fattr:meta])* $field:ident : $fty:ty ),* $(,)? },
        description: $desc:expr,
        schema: $schema:expr,
        annotations: $ann:expr,
        validate: |$va:ident| $validate:expr,
        op: |$a:ident| $op:expr $(,)?
    ) => {
        #[doc = concat!("Arguments of `", $name, "`.")]
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        pub struct $action {
            $( $(#[$fattr])* pub $field: $fty, )*
        }

        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $tool {
            shared: Arc<BrowserShared>,
        }

        impl $tool {
            /// This tool on the shared browser.
            pub fn new(shared: Arc<BrowserShared>) -> Self {
                Self { shared }
            }
        }

        impl TypedTool for $tool {
            type Action = $action;
            type Observation = BrowserObservation;
            const NAME: &'static str = $name;
            const KIND: &'static str = $kind;
            const ACTION_KIND: &'static str = $action_kind;
            const OBSERVATION_KIND: &'static str = "BrowserObservation";

            fn description(&self) -> String {
                $desc.to_string()
            }
            fn parameters_schema(&self) -> Value {
                $schema
            }
            fn annotations(&self) -> ToolAnnotations {
                $ann
            }
            #[allow(unused_variables)]
            fn validate(&self, $va: &$action) -> Result<(), ToolError> {
                $validate
            }
            async fn run(&self, action: $action, ctx: &ToolCallContext) -> Result<BrowserObservation, ToolError> {
                let $a = action;
                Ok(self.shared.run($op, ctx).await)
            }
            fn observation_to_llm(
                &self,
                observation: openhands_sdk::tool::StoredObservation<'_, BrowserObservation>,
            ) -> Vec<openhands_wire::content::Content> {
                match observation.parse() {
                    Some(o) => o.to_llm_content(),
                    None => observation.content(),
                }
            }
            async fn close(&self) {
                self.shared.session.close().await;
            }
            fn prompt_guidance(&self) -> Option<&str> {
                Some(BROWSER_PROMPT_GUIDANCE)
            }
        }
    };
}

/// What every browser tool adds to the system prompt (once): when to reach
/// for the browser and how to drive it without wasting steps.
pub const BROWSER_PROMPT_GUIDANCE: &str = "<BROWSER_TOOLS>
A real browser is available for web pages that need JavaScript or interaction.
* Prefer plain HTTP (curl, wget, a script) for static pages and APIs; open the browser only when those do not work.
* Element indices are only valid for the page state they came from: call `browser_get_state` before each `browser_click` or `browser_type`, and again after it. A typical loop is navigate, get state, act, get state, read content.
* Keep each browser sub-task short (about ten actions); when an approach is not working, change it instead of repeating it.
* On a login wall, CAPTCHA or 403, try one alternative route, then give up on the browser for that page.
* Never submit forms, buy anything or create accounts unless the user asked for it.
</BROWSER_TOOLS>";

fn no_false() -> bool {
    false
}

browser_tool!(
    /// Loads a URL in the current tab or a new one.
    BrowserNavigateTool, BrowserNavigateAction, "browser_navigate", "BrowserNavigateTool", "BrowserNavigateAction",
    {
        /// Where to go.
        url: String,
        /// Open a new tab for it.
        #[serde(default = "no_false")]
        new_tab: bool,
    },
    description: "Open a web page in the browser.\n\nLoads `url` (a full address such as `http://localhost:3000/` or `https://example.org/docs`) in the current tab and waits until the page has loaded. Set `new_tab` to keep the current page open and load the address in a fresh tab instead.\n\nAfter loading, call browser_get_state to see the clickable elements or browser_get_content to read the text.",
    schema: object_schema(json!({
        "url": {"type": "string", "description": "Address of the page to open, including the scheme."},
        "new_tab": {"type": "boolean", "description": "Load the page in a new tab instead of the current one (default false)."}
    }), &["url"]),
    annotations: annotations("browser_navigate", false, false, false, true),
    validate: |a| if a.url.trim().is_empty() { Err(ToolError::InvalidArguments("`url` must not be empty".into())) } else { Ok(()) },
    op: |a| BrowserOp::Navigate { url: a.url, new_tab: a.new_tab },
);

browser_tool!(
    /// Clicks a numbered element.
    BrowserClickTool, BrowserClickAction, "browser_click", "BrowserClickTool", "BrowserClickAction",
    {
        /// The element's number.
        index: i64,
        /// Open a link's target in a new tab.
        #[serde(default = "no_false")]
        new_tab: bool,
    },
    description: "Click an element of the current page.\n\n`index` is the number browser_get_state gave the element (a link, button, checkbox, menu entry ...). Numbers are only valid for the page they were read from: after a click, a navigation or typing, ask for the state again before clicking. If the click loads another page, this waits for it. With `new_tab`, a link is opened in a new tab instead of the current one.",
    schema: object_schema(json!({
        "index": {"type": "integer", "description": "Number of the element in the latest browser_get_state answer."},
        "new_tab": {"type": "boolean", "description": "For links: open the target in a new tab (default false)."}
    }), &["index"]),
    annotations: annotations("browser_click", false, false, false, true),
    validate: |a| non_negative("index", a.index),
    op: |a| BrowserOp::Click { index: a.index, new_tab: a.new_tab },
);

browser_tool!(
    /// Types into a numbered field.
    BrowserTypeTool, BrowserTypeAction, "browser_type", "BrowserTypeTool", "BrowserTypeAction",
    {
        /// The field's number.
        index: i64,
        /// What to type.
        text: String,
    },
    description: "Enter text into a field of the current page.\n\nFocuses the input, text area or editable element numbered `index` by browser_get_state, replaces what it contains with `text`, and fires the page's input events as real typing would. It does not press Enter; click the form's button to submit. Refresh the numbers with browser_get_state after the page changes.",
    schema: object_schema(json!({
        "index": {"type": "integer", "description": "Number of the field in the latest browser_get_state answer."},
        "text": {"type": "string", "description": "Text that replaces the field's content."}
    }), &["index", "text"]),
    annotations: annotations("browser_type", false, false, false, true),
    validate: |a| non_negative("index", a.index),
    op: |a| BrowserOp::Type { index: a.index, text: a.text },
);

browser_tool!(
    /// Describes the page and numbers its interactive elements.
    BrowserGetStateTool, BrowserGetStateAction, "browser_get_state", "BrowserGetStateTool", "BrowserGetStateAction",
    {
        /// Add a screenshot.
        #[serde(default = "no_false")]
        include_screenshot: bool,
    },
    description: "Show what the current page offers.\n\nAnswers with JSON: the page's URL and title, the open tabs, the viewport, page size and scroll position, and every visible interactive element (links, buttons, inputs, selects ...) with a number, its tag, its text and, where present, its placeholder or link target. Use those numbers with browser_click and browser_type. Set `include_screenshot` to also receive a PNG image of the visible part of the page.",
    schema: object_schema(json!({
        "include_screenshot": {"type": "boolean", "description": "Also return a PNG screenshot of the viewport (default false)."}
    }), &[]),
    annotations: annotations("browser_get_state", true, false, true, true),
    validate: |a| Ok(()),
    op: |a| BrowserOp::GetState { screenshot: a.include_screenshot },
);

browser_tool!(
    /// The page's text as Markdown.
    BrowserGetContentTool, BrowserGetContentAction, "browser_get_content", "BrowserGetContentTool", "BrowserGetContentAction",
    {
        /// Keep links.
        #[serde(default = "no_false")]
        extract_links: bool,
        /// Where to start.
        #[serde(default)]
        start_from_char: i64,
    },
    description: "Read the current page as Markdown.\n\nRenders the visible content (headings, paragraphs, lists, tables, code) as Markdown, leaving out scripts, hidden parts and obvious advertising, and reports how much was kept. Long pages come in parts of at most 30,000 characters: the statistics then name the `start_from_char` value that continues where this part ended. Set `extract_links` to keep link targets as Markdown links.",
    schema: object_schema(json!({
        "extract_links": {"type": "boolean", "description": "Keep links as [text](url) (default false)."},
        "start_from_char": {"type": "integer", "description": "Character offset into the page's Markdown to start from (default 0)."}
    }), &[]),
    annotations: annotations("browser_get_content", true, false, true, true),
    validate: |a| non_negative("start_from_char", a.start_from_char),
    op: |a| BrowserOp::GetContent { links: a.extract_links, start: usize::try_from(a.start_from_char).unwrap_or(0) },
);

/// The direction of a scroll.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ScrollDirection {
    /// Towards the top.
    Up,
    /// Towards the bottom.
    #[default]
    Down,
}

browser_tool!(
    /// Scrolls the page.
    BrowserScrollTool, BrowserScrollAction, "browser_scroll", "BrowserScrollTool", "BrowserScrollAction",
    {
        /// Which way.
        #[serde(default)]
        direction: ScrollDirection,
    },
    description: "Scroll the current page by about one screen (500 pixels).\n\nUse it to reach content or elements below (or above) the visible part of the page, then call browser_get_state again: elements that came into view get numbers.",
    schema: object_schema(json!({
        "direction": {"type": "string", "description": "`down` (default) or `up`.", "enum": ["up", "down"]}
    }), &[]),
    annotations: annotations("browser_scroll", false, false, false, true),
    validate: |a| Ok(()),
    op: |a| BrowserOp::Scroll { down: a.direction == ScrollDirection::Down },
);

browser_tool!(
    /// One step back in history.
    BrowserGoBackTool, BrowserGoBackAction, "browser_go_back", "BrowserGoBackTool", "BrowserGoBackAction",
    {},
    description: "Return to the previous page of the current tab, like the browser's Back button, and wait for it to load.\n\nOnly the current tab's own history counts; a tab opened with `new_tab` has none before its first page. Element numbers from earlier states are stale afterwards: call browser_get_state again before clicking or typing.",
    schema: object_schema(json!({}), &[]),
    annotations: annotations("browser_go_back", false, false, false, true),
    validate: |a| Ok(()),
    op: |a| { let _ = a; BrowserOp::GoBack },
);

browser_tool!(
    /// Lists the open tabs.
    BrowserListTabsTool, BrowserListTabsAction, "browser_list_tabs", "BrowserListTabsTool", "BrowserListTabsAction",
    {},
    description: "List the browser's open tabs as JSON: for each its four-character `tab_id`, URL and title, in the order the tabs were opened.\n\nPass a `tab_id` to browser_switch_tab to work in that tab, or to browser_close_tab to close it. Tabs are opened by browser_navigate or browser_click with `new_tab`.",
    schema: object_schema(json!({}), &[]),
    annotations: annotations("browser_list_tabs", true, false, true, false),
    validate: |a| Ok(()),
    op: |a| { let _ = a; BrowserOp::ListTabs },
);

browser_tool!(
    /// Makes another tab current.
    BrowserSwitchTabTool, BrowserSwitchTabAction, "browser_switch_tab", "BrowserSwitchTabTool", "BrowserSwitchTabAction",
    {
        /// Which tab.
        tab_id: String,
    },
    description: "Make another open tab the one all further browser actions apply to.\n\nTake the four-character `tab_id` from browser_list_tabs. The answer names the URL now shown; call browser_get_state afterwards to get that page's element numbers before clicking or typing in it.",
    schema: object_schema(json!({
        "tab_id": {"type": "string", "description": "The four-character id browser_list_tabs shows for the tab."}
    }), &["tab_id"]),
    annotations: annotations("browser_switch_tab", false, false, false, false),
    validate: |a| Ok(()),
    op: |a| BrowserOp::SwitchTab(a.tab_id),
);

browser_tool!(
    /// Closes a tab.
    BrowserCloseTabTool, BrowserCloseTabAction, "browser_close_tab", "BrowserCloseTabTool", "BrowserCloseTabAction",
    {
        /// Which tab.
        tab_id: String,
    },
    description: "Close one open tab; its four-character `tab_id` comes from browser_list_tabs.\n\nIf it was the current tab, the tab opened before it becomes current and the answer names its URL; closing the last tab leaves one empty tab, so the browser itself stays open.",
    schema: object_schema(json!({
        "tab_id": {"type": "string", "description": "The four-character id browser_list_tabs shows for the tab to close."}
    }), &["tab_id"]),
    annotations: annotations("browser_close_tab", false, true, false, false),
    validate: |a| Ok(()),
    op: |a| BrowserOp::CloseTab(a.tab_id),
);

browser_tool!(
    /// Reads cookies and web storage.
    BrowserGetStorageTool, BrowserGetStorageAction, "browser_get_storage", "BrowserGetStorageTool", "BrowserGetStorageAction",
    {},
    description: "Dump the browser's cookies and the current site's localStorage and sessionStorage as JSON (`cookies` and `origins`). The answer can be given back to browser_set_storage later to restore a logged-in session.",
    schema: object_schema(json!({}), &[]),
    annotations: annotations("browser_get_storage", true, false, true, false),
    validate: |a| Ok(()),
    op: |a| { let _ = a; BrowserOp::GetStorage },
);

browser_tool!(
    /// Restores cookies and web storage.
    BrowserSetStorageTool, BrowserSetStorageAction, "browser_set_storage", "BrowserSetStorageTool", "BrowserSetStorageAction",
    {
        /// `cookies` and `origins`.
        storage_state: Map<String, Value>,
    },
    description: "Load cookies and web storage into the browser.\n\n`storage_state` has the shape browser_get_storage returns: `cookies`, a list of cookie objects (name, value, domain or url, path, ...), and `origins`, a list of objects with an `origin` and its `localStorage` / `sessionStorage` entries (`name` or `key`, and `value`). Existing entries with the same names are overwritten.",
    schema: object_schema(json!({
        "storage_state": {"type": "object", "description": "Object with `cookies` and `origins`, as browser_get_storage returns it."}
    }), &["storage_state"]),
    annotations: annotations("browser_set_storage", false, true, false, false),
    validate: |a| Ok(()),
    op: |a| BrowserOp::SetStorage(Value::Object(a.storage_state)),
);

browser_tool!(
    /// Starts an rrweb recording of the session.
    BrowserStartRecordingTool, BrowserStartRecordingAction, "browser_start_recording", "BrowserStartRecordingTool", "BrowserStartRecordingAction",
    {},
    description: "Begin recording what happens in the browser with rrweb: the page's DOM and every change to it, mouse movement, clicks, scrolling and input.\n\nThe recording goes to .agent_tmp/browser_observations/recording-<timestamp>/ in the workspace, as JSON files each holding an array of rrweb events; they are written every 5 seconds, sooner when more than 1 MB has collected, and can be replayed with rrweb-player. It goes on across page loads (the recorder is started again on each new page) until browser_stop_recording.",
    schema: object_schema(json!({}), &[]),
    annotations: annotations("browser_start_recording", false, false, false, false),
    validate: |a| Ok(()),
    op: |a| { let _ = a; BrowserOp::StartRecording },
);

browser_tool!(
    /// Stops the recording and writes what is left.
    BrowserStopRecordingTool, BrowserStopRecordingAction, "browser_stop_recording", "BrowserStopRecordingTool", "BrowserStopRecordingAction",
    {},
    description: "End the recording browser_start_recording began and write the events not yet saved.\n\nThe answer says how many rrweb events were captured, in how many JSON files, and names the recording's folder (under .agent_tmp/browser_observations/ in the workspace). Each file is an array of rrweb events that rrweb-player can replay.",
    schema: object_schema(json!({}), &[]),
    annotations: annotations("browser_stop_recording", false, false, false, false),
    validate: |a| Ok(()),
    op: |a| { let _ = a; BrowserOp::StopRecording },
);

/// Options of the tool set read from the agent's `ToolSpec.params`.
fn config_from_params(
    params: &Map<String, Value>,
    env: &ToolEnv,
) -> Result<BrowserConfig, ToolError> {
    let mut config = BrowserConfig {
        exec: env.exec.clone(),
        ..BrowserConfig::default()
    };
    config.recording.output_root = env.working_dir.join(RECORDING_DIR);
    match params.get("recording_script_url") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if !s.trim().is_empty() => {
            config.recording.source = RrwebSource::parse(s);
        }
        Some(_) => {
            return Err(ToolError::InvalidArguments(
                "browser_tool_set: `recording_script_url` must be a non-empty string (an http(s) URL or a local path of rrweb)".into(),
            ));
        }
    }
    let seconds = |name: &str| -> Result<Option<Duration>, ToolError> {
        match params.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_f64() {
                Some(s) if s > 0.0 && s.is_finite() => Ok(Some(Duration::from_secs_f64(s))),
                _ => Err(ToolError::InvalidArguments(format!(
                    "browser_tool_set: `{name}` must be a positive number of seconds"
                ))),
            },
        }
    };
    if let Some(d) = seconds("action_timeout_seconds")? {
        config.action_timeout = d;
    }
    if let Some(d) = seconds("init_timeout_seconds")? {
        config.startup_timeout = d;
    }
    if let Some(v) = params.get("headless") {
        config.headless = v.as_bool().ok_or_else(|| {
            ToolError::InvalidArguments("browser_tool_set: `headless` must be true or false".into())
        })?;
    }
    Ok(config)
}

/// The tools of `browser_tool_set` for one conversation, sharing one
/// browser that starts on first use. `params` may set
/// `action_timeout_seconds`, `init_timeout_seconds`, `headless` and
/// `recording_script_url` (where rrweb is loaded from; see
/// [`crate::recording::RRWEB_URL_ENV`]). Recordings go to
/// [`RECORDING_DIR`] in the workspace.
pub fn browser_tool_set(
    params: &Map<String, Value>,
    env: &ToolEnv,
) -> Result<Vec<Arc<dyn Tool>>, ToolError> {
    let config = config_from_params(params, env)?;
    let shared = Arc::new(BrowserShared {
        session: BrowserSession::new(config),
        save_dir: env
            .conversation_dir
            .as_ref()
            .map(|d| d.join("observations")),
    });
    Ok(vec![
        Arc::new(BrowserNavigateTool::new(shared.clone())),
        Arc::new(BrowserClickTool::new(shared.clone())),
        Arc::new(BrowserGetStateTool::new(shared.clone())),
        Arc::new(BrowserGetContentTool::new(shared.clone())),
        Arc::new(BrowserTypeTool::new(shared.clone())),
        Arc::new(BrowserScrollTool::new(shared.clone())),
        Arc::new(BrowserGoBackTool::new(shared.clone())),
        Arc::new(BrowserListTabsTool::new(shared.clone())),
        Arc::new(BrowserSwitchTabTool::new(shared.clone())),
        Arc::new(BrowserCloseTabTool::new(shared.clone())),
        Arc::new(BrowserGetStorageTool::new(shared.clone())),
        Arc::new(BrowserSetStorageTool::new(shared.clone())),
        Arc::new(BrowserStartRecordingTool::new(shared.clone())),
        Arc::new(BrowserStopRecordingTool::new(shared)),
    ])
}
