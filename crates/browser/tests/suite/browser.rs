//! The browser tools against a real Chromium and a local site: directly
//! through the tools, and driven by the scripted model through a
//! conversation. Skipped (saying so) only when no Chromium is installed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_browser::ops::BrowserOp;
use openhands_browser::{
    BROWSER_TOOL_SET_NAME, BrowserConfig, BrowserSession, browser_tool_set, find_chromium,
};
use openhands_llm::Llm;
use openhands_sdk::tool::{Tool, ToolCallContext, ToolEnv, ToolRegistry};
use openhands_sdk::{Agent, ConversationOptions, LocalConversation};
use openhands_testkit::site::TestSite;
use openhands_testkit::{ScriptedLlm, Turn};
use openhands_wire::LlmConfig;
use openhands_wire::agent::AgentSpec;
use openhands_wire::content::Content;
use openhands_wire::event::EventBody;
use openhands_wire::state::ExecutionStatus;
use openhands_wire::tool::ToolSpec;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn chromium_or_skip(test: &str) -> bool {
    if find_chromium().is_some() {
        return true;
    }
    eprintln!(
        "SKIPPED {test}: no Chromium installed (apt-get install chromium, or set OH_BROWSER_EXECUTABLE)"
    );
    false
}

struct Tools(Vec<Arc<dyn Tool>>);

impl Tools {
    fn new(env: &ToolEnv) -> Self {
        Tools(browser_tool_set(&Map::new(), env).unwrap())
    }

    async fn call(&self, name: &str, args: Value) -> Value {
        let tool = self.0.iter().find(|t| t.name() == name).unwrap();
        let action = tool
            .parse_action(args.as_object().cloned().unwrap_or_default())
            .unwrap();
        tool.execute(action, &ToolCallContext::default())
            .await
            .unwrap()
    }

    async fn text(&self, name: &str, args: Value) -> String {
        let obs = self.call(name, args).await;
        assert_eq!(obs["kind"], "BrowserObservation");
        assert_eq!(obs["is_error"], false, "{name}: {obs}");
        obs["content"][0]["text"].as_str().unwrap().to_string()
    }

    async fn close(&self) {
        for t in &self.0 {
            t.close().await;
        }
    }
}

/// The number `browser_get_state` gave the element whose text contains `text`.
fn index_of(state: &str, text: &str) -> i64 {
    let v: Value = serde_json::from_str(state).unwrap();
    v["interactive_elements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| {
            e["text"].as_str().unwrap_or("").contains(text)
                || e["placeholder"].as_str() == Some(text)
        })
        .unwrap_or_else(|| panic!("no element {text:?} in {state}"))["index"]
        .as_i64()
        .unwrap()
}

fn process_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.split_whitespace().nth(2).is_none_or(|st| st != "Z"))
        .unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_navigate_read_click_type_and_use_tabs() {
    if !chromium_or_skip("tools_navigate_read_click_type_and_use_tabs") {
        return;
    }
    let site = TestSite::start().await.unwrap();
    let ws = tempfile::tempdir().unwrap();
    let tools = Tools::new(&ToolEnv::new(ws.path()));

    let nav = tools
        .text("browser_navigate", json!({"url": site.url("/")}))
        .await;
    assert_eq!(nav, format!("Navigated to: {}", site.url("/")));

    let content = tools.text("browser_get_content", json!({})).await;
    assert!(
        content.starts_with(&format!("<url>\n{}\n</url>", site.url("/"))),
        "{content}"
    );
    assert!(content.contains("# Welcome to the test site"), "{content}");
    assert!(content.contains("**browser tests**"), "{content}");
    assert!(content.contains("- first point"), "{content}");
    assert!(!content.contains("hidden text"), "{content}");
    assert!(
        !content.contains("](http"),
        "links only on request: {content}"
    );
    let with_links = tools
        .text("browser_get_content", json!({"extract_links": true}))
        .await;
    assert!(
        with_links.contains(&format!("[Open the greeting form]({})", site.url("/form"))),
        "{with_links}"
    );

    let state = tools.text("browser_get_state", json!({})).await;
    let v: Value = serde_json::from_str(&state).unwrap();
    assert_eq!(v["title"], "Test home");
    assert_eq!(v["url"], site.url("/"));
    assert_eq!(v["tabs"].as_array().unwrap().len(), 1);
    let link = index_of(&state, "Open the greeting form");
    let el = &v["interactive_elements"][usize::try_from(link - 1).unwrap()];
    assert_eq!(el["tag"], "a");
    assert_eq!(el["href"], "/form");

    assert_eq!(
        tools.text("browser_click", json!({"index": link})).await,
        format!("Clicked element {link}")
    );
    let state = tools.text("browser_get_state", json!({})).await;
    assert!(state.contains("\"title\": \"Greeting form\""), "{state}");
    let field = index_of(&state, "Your name");
    let typed = tools
        .text("browser_type", json!({"index": field, "text": "Ada"}))
        .await;
    assert_eq!(typed, format!("Typed 'Ada' into element {field}"));
    let send = index_of(&state, "Send greeting");
    tools.text("browser_click", json!({"index": send})).await;
    let content = tools.text("browser_get_content", json!({})).await;
    assert!(content.contains("# Hello, Ada!"), "{content}");
    assert!(content.contains("/result?name=Ada"), "{content}");

    assert_eq!(
        tools.text("browser_go_back", json!({})).await,
        "Navigated back"
    );
    let state = tools.text("browser_get_state", json!({})).await;
    assert!(state.contains("\"title\": \"Greeting form\""), "{state}");

    // A click that changes the page by script, without navigating.
    tools
        .text("browser_navigate", json!({"url": site.url("/button")}))
        .await;
    let state = tools.text("browser_get_state", json!({})).await;
    let add = index_of(&state, "Add one");
    tools.text("browser_click", json!({"index": add})).await;
    tools.text("browser_click", json!({"index": add})).await;
    let content = tools.text("browser_get_content", json!({})).await;
    assert!(content.contains("Clicked 2 times"), "{content}");
    assert_eq!(
        tools.text("browser_click", json!({"index": 999})).await,
        "Element with index 999 not found"
    );
    assert_eq!(
        tools
            .text("browser_scroll", json!({"direction": "up"}))
            .await,
        "Scrolled up"
    );

    // Screenshot: a PNG in the observation and an image for the model.
    let obs = tools
        .call("browser_get_state", json!({"include_screenshot": true}))
        .await;
    let shot = obs["screenshot_data"].as_str().unwrap();
    assert!(shot.starts_with("iVBORw0KGgo"), "not a PNG");
    let text: Value = serde_json::from_str(obs["content"][0]["text"].as_str().unwrap()).unwrap();
    assert!(text.get("screenshot").is_none());
    assert!(text["screenshot_dimensions"]["width"].as_i64().unwrap() > 0);
    let tool = tools
        .0
        .iter()
        .find(|t| t.name() == "browser_get_state")
        .unwrap();
    let seen = tool.observation_to_llm(&obs);
    assert!(
        matches!(seen.last(), Some(Content::Image(i)) if i.image_urls[0].starts_with("data:image/png;base64,"))
    );

    // Tabs.
    let opened = tools
        .text(
            "browser_navigate",
            json!({"url": site.url("/form"), "new_tab": true}),
        )
        .await;
    assert_eq!(
        opened,
        format!("Opened new tab with URL: {}", site.url("/form"))
    );
    let tabs: Value =
        serde_json::from_str(&tools.text("browser_list_tabs", json!({})).await).unwrap();
    let tabs = tabs.as_array().unwrap().clone();
    assert_eq!(tabs.len(), 2);
    assert_eq!(tabs[1]["url"], site.url("/form"));
    assert_eq!(tabs[1]["title"], "Greeting form");
    let first = tabs[0]["tab_id"].as_str().unwrap();
    let second = tabs[1]["tab_id"].as_str().unwrap();
    assert_eq!(first.len(), 4);
    // A link with target=_blank opens a tab of its own, which is listed.
    tools
        .text("browser_switch_tab", json!({"tab_id": first}))
        .await;
    tools
        .text("browser_navigate", json!({"url": site.url("/")}))
        .await;
    let state = tools.text("browser_get_state", json!({})).await;
    let blank = index_of(&state, "Button page in a new tab");
    tools.text("browser_click", json!({"index": blank})).await;
    let mut listed = Vec::new();
    for _ in 0..50 {
        let tabs: Value =
            serde_json::from_str(&tools.text("browser_list_tabs", json!({})).await).unwrap();
        listed = tabs.as_array().unwrap().clone();
        if listed.len() == 3 && listed[2]["url"] == site.url("/button") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert_eq!(listed[2]["url"], site.url("/button"));
    let third = listed[2]["tab_id"].as_str().unwrap().to_string();
    tools
        .text("browser_close_tab", json!({"tab_id": third}))
        .await;
    tools
        .text("browser_navigate", json!({"url": site.url("/button")}))
        .await;
    let switched = tools
        .text("browser_switch_tab", json!({"tab_id": first}))
        .await;
    assert_eq!(
        switched,
        format!("Switched to tab {first}: {}", site.url("/button"))
    );
    let closed = tools
        .text("browser_close_tab", json!({"tab_id": second}))
        .await;
    assert_eq!(
        closed,
        format!("Closed tab # {second}, now on {}", site.url("/button"))
    );
    let bad = tools
        .call("browser_switch_tab", json!({"tab_id": "zzzz"}))
        .await;
    assert_eq!(bad["is_error"], true);

    // Storage round trip.
    let set = tools
        .text(
            "browser_set_storage",
            json!({"storage_state": {
                "cookies": [{"name": "session", "value": "abc", "url": site.url("/")}],
                "origins": [{"origin": site.url("").trim_end_matches('/'), "localStorage": [{"name": "theme", "value": "dark"}]}]
            }}),
        )
        .await;
    assert_eq!(set, "Storage set successfully");
    let storage: Value =
        serde_json::from_str(&tools.text("browser_get_storage", json!({})).await).unwrap();
    assert!(
        storage["cookies"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "session" && c["value"] == "abc"),
        "{storage}"
    );
    assert!(
        storage["origins"][0]["localStorage"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["name"] == "theme" && i["value"] == "dark"),
        "{storage}"
    );

    tools.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_starts_lazily_and_dies_with_close_and_with_interrupts() {
    if !chromium_or_skip("browser_starts_lazily_and_dies_with_close_and_with_interrupts") {
        return;
    }
    let site = TestSite::start().await.unwrap();
    let session = BrowserSession::new(BrowserConfig::default());
    assert!(!session.is_running().await);
    assert_eq!(session.pid().await, None);
    let never = CancellationToken::new();
    session
        .run(
            BrowserOp::Navigate {
                url: site.url("/"),
                new_tab: false,
            },
            &never,
        )
        .await
        .unwrap();
    let pid = session.pid().await.unwrap();
    assert!(process_alive(pid));
    session.close().await;
    assert!(!session.is_running().await);
    assert!(!process_alive(pid), "browser {pid} survived close");

    // An interrupt during a page that never loads kills the browser at once;
    // the next action starts a new one.
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        c2.cancel();
    });
    let started = std::time::Instant::now();
    let err = session
        .run(
            BrowserOp::Navigate {
                url: site.url("/never"),
                new_tab: false,
            },
            &cancel,
        )
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(err.to_string().contains("interrupted"), "{err}");
    assert!(!session.is_running().await);
    let out = session
        .run(
            BrowserOp::GetContent {
                links: false,
                start: 0,
            },
            &never,
        )
        .await
        .unwrap();
    assert!(out.text.starts_with("<url>\nabout:blank"), "{}", out.text);
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_never_loads_times_out_with_an_error_observation() {
    if !chromium_or_skip("a_page_that_never_loads_times_out_with_an_error_observation") {
        return;
    }
    let site = TestSite::start().await.unwrap();
    let ws = tempfile::tempdir().unwrap();
    let mut params = Map::new();
    params.insert("action_timeout_seconds".into(), json!(2));
    let tools = Tools(browser_tool_set(&params, &ToolEnv::new(ws.path())).unwrap());
    let obs = tools
        .call("browser_navigate", json!({"url": site.url("/never")}))
        .await;
    assert_eq!(obs["is_error"], true);
    let text = obs["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("Browser operation failed:"), "{text}");
    assert!(text.contains("timed out"), "{text}");
    // The browser recovers on the next action.
    let nav = tools
        .text("browser_navigate", json!({"url": site.url("/")}))
        .await;
    assert!(nav.starts_with("Navigated to:"));
    tools.close().await;
}

#[tokio::test]
async fn a_missing_browser_is_an_error_observation_not_a_failure() {
    let ws = tempfile::tempdir().unwrap();
    let env = ToolEnv::new(ws.path());
    let tools = browser_tool_set(&Map::new(), &env).unwrap();
    assert_eq!(tools.len(), 14);
    // Every browser tool carries the one guidance block; the prompt gets it once.
    assert!(tools.iter().all(|t| t.prompt_guidance().is_some()));
    let guidance = openhands_sdk::agent::prompt::tool_guidance(
        tools.iter().filter_map(|t| t.prompt_guidance()),
    )
    .unwrap();
    assert_eq!(guidance.matches("<BROWSER_TOOLS>").count(), 1);
    let session = BrowserSession::new(BrowserConfig {
        executable: Some("/nonexistent/chromium".into()),
        ..BrowserConfig::default()
    });
    let err = session
        .run(BrowserOp::ListTabs, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("could not be started"), "{err}");
    assert!(!session.is_running().await);
}

#[test]
fn bad_tool_set_params_are_refused() {
    let ws = tempfile::tempdir().unwrap();
    let env = ToolEnv::new(ws.path());
    let mut params = Map::new();
    params.insert("action_timeout_seconds".into(), json!(-1));
    let err = browser_tool_set(&params, &env).err().unwrap();
    assert!(err.to_string().contains("action_timeout_seconds"), "{err}");
    let mut params = Map::new();
    params.insert("recording_script_url".into(), json!(5));
    let err = browser_tool_set(&params, &env).err().unwrap();
    assert!(err.to_string().contains("recording_script_url"), "{err}");
    let tools = browser_tool_set(&Map::new(), &env).unwrap();
    let click = tools.iter().find(|t| t.name() == "browser_click").unwrap();
    let e = click
        .parse_action(json!({"index": -1}).as_object().cloned().unwrap())
        .unwrap_err();
    assert!(e.to_string().contains("index"), "{e}");
}

fn browsing_agent(turns: Vec<Turn>) -> (Agent, Arc<ScriptedLlm>) {
    let mut config = LlmConfig::new("openai/scripted");
    config.usage_id = "agent".into();
    let backend = Arc::new(ScriptedLlm::from_turns(turns));
    let llm = Llm::with_backend(config.clone(), backend.clone());
    let spec = AgentSpec::new(config, vec![ToolSpec::named(BROWSER_TOOL_SET_NAME)]);
    let mut registry = ToolRegistry::new();
    registry.register_factory(BROWSER_TOOL_SET_NAME, Arc::new(browser_tool_set));
    (Agent::with_llm(spec, llm, registry), backend)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_agent_browses_fills_a_form_and_sees_a_screenshot() {
    if !chromium_or_skip("scripted_agent_browses_fills_a_form_and_sees_a_screenshot") {
        return;
    }
    let site = TestSite::start().await.unwrap();
    let ws = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    // On the home page the form link is element 1; on the form page the
    // field is 1 and the button 2 (numbering follows document order).
    let turns = vec![
        Turn::tool_call("browser_navigate", json!({"url": site.url("/")})),
        Turn::tool_call("browser_get_content", json!({})),
        Turn::tool_call("browser_get_state", json!({})),
        Turn::tool_call("browser_click", json!({"index": 1})),
        Turn::tool_call("browser_get_state", json!({})),
        Turn::tool_call("browser_type", json!({"index": 1, "text": "Grace"})),
        Turn::tool_call("browser_click", json!({"index": 2})),
        Turn::tool_call("browser_get_content", json!({})),
        Turn::tool_call("browser_get_state", json!({"include_screenshot": true})),
        Turn::tool_call("finish", json!({"message": "The site greeted Grace."})),
    ];
    let (agent, backend) = browsing_agent(turns);
    let c = LocalConversation::new(
        agent,
        ws.path(),
        ConversationOptions {
            persistence_dir: Some(root.path().to_path_buf()),
            ..ConversationOptions::default()
        },
    )
    .unwrap();
    c.send_message("Greet Grace on the local site").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let events = c.events();
    let actions: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Action(a) => a
                .action
                .as_ref()
                .and_then(|v| v["kind"].as_str())
                .map(str::to_string),
            _ => None,
        })
        .collect();
    assert_eq!(actions[0], "BrowserNavigateAction");
    assert_eq!(actions[5], "BrowserTypeAction");
    let obs: Vec<Value> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Observation(o) if o.tool_name.starts_with("browser_") => {
                Some(o.observation.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(obs.len(), 9);
    for o in &obs {
        assert_eq!(o["kind"], "BrowserObservation");
        assert_eq!(o["is_error"], false, "{o}");
    }
    let text = |i: usize| obs[i]["content"][0]["text"].as_str().unwrap().to_string();
    assert!(text(1).contains("# Welcome to the test site"));
    assert!(text(3).starts_with("Clicked element 1"));
    assert!(text(4).contains("Greeting form"));
    assert_eq!(text(5), "Typed 'Grace' into element 1");
    assert!(text(7).contains("# Hello, Grace!"), "{}", text(7));
    assert!(
        obs[8]["screenshot_data"]
            .as_str()
            .unwrap()
            .starts_with("iVBORw0KGgo")
    );
    // The model received the screenshot as an image, and it was saved.
    let reqs = backend.requests();
    let last = reqs.last().unwrap().messages.last().unwrap();
    assert!(
        last.content.iter().any(|p| matches!(p, Content::Image(_))),
        "no image sent to the model"
    );
    let saved = obs[8]["full_output_save_dir"].as_str().unwrap();
    assert!(std::fs::read_dir(saved).unwrap().count() >= 1);
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_during_a_hung_action_kills_the_browser_at_once() {
    if !chromium_or_skip("closing_during_a_hung_action_kills_the_browser_at_once") {
        return;
    }
    let site = TestSite::start().await.unwrap();
    let session = Arc::new(BrowserSession::new(BrowserConfig::default()));
    let never = CancellationToken::new();
    session
        .run(
            BrowserOp::GetContent {
                links: false,
                start: 0,
            },
            &never,
        )
        .await
        .unwrap();
    let pid = session.pid().await.unwrap();
    let s2 = session.clone();
    let url = site.url("/never");
    let hung = tokio::spawn(async move {
        s2.run(
            BrowserOp::Navigate {
                url,
                new_tab: false,
            },
            &CancellationToken::new(),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(800)).await;
    let started = std::time::Instant::now();
    session.close().await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "close waited for the hung action"
    );
    assert!(hung.await.unwrap().is_err());
    assert!(!process_alive(pid), "browser {pid} survived close");
    assert!(!session.is_running().await);
}
