//! The browser tool set through the agent server: a scripted model opens a
//! local page, follows a link, fills in a form and reads the answer in a
//! real Chromium, which is gone once the conversation is deleted; and
//! `enable_browser` decides what the tool catalog reports. Browsing is
//! skipped (saying so) only when no Chromium is installed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use openhands_testkit::site::TestSite;
use openhands_testkit::{Script, Turn};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Processes whose command line names a browser profile of ours.
fn browser_pids() -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| {
                    String::from_utf8_lossy(&c).contains("--user-data-dir=/tmp/openhands-browser-")
                })
                .unwrap_or(false)
        })
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| {
                    s.rsplit(')')
                        .next()
                        .and_then(|r| r.split_whitespace().next())
                        != Some("Z")
                })
                .unwrap_or(false)
        })
        .collect()
}

fn browsing(site: &TestSite) -> Script {
    Script::from_turns([
        Turn::tool_call("browser_navigate", json!({"url": site.url("/")})),
        Turn::tool_call("browser_get_state", json!({})),
        Turn::tool_call("browser_click", json!({"index": 1})),
        Turn::tool_call("browser_get_state", json!({})),
        Turn::tool_call("browser_type", json!({"index": 1, "text": "Linus"})),
        Turn::tool_call("browser_click", json!({"index": 2})),
        Turn::tool_call("browser_get_content", json!({})),
        Turn::tool_call("finish", json!({"message": "greeted"})),
    ])
    .with_toolless_reply(Turn::text("Browsing"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_agent_browses_a_local_site_through_the_server() {
    if openhands_browser::find_chromium().is_none() {
        eprintln!(
            "SKIPPED a_scripted_agent_browses_a_local_site_through_the_server: no Chromium installed (apt-get install chromium)"
        );
        return;
    }
    let site = TestSite::start().await.unwrap();
    let before = browser_pids();
    let env = Env::start(|_| browsing(&site)).await;
    let (_, catalog) = env.get("/api/tools/catalog").await;
    let entry = catalog["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "browser_tool_set")
        .unwrap()
        .clone();
    assert_eq!(entry["usable"], true, "{entry}");
    assert_eq!(entry["user_selectable"], true);

    let info = env
        .create(json!({"agent": env.agent(&["browser_tool_set"])}))
        .await;
    assert_eq!(
        info["tool_module_qualnames"]["browser_tool_set"],
        "openhands.tools.browser_use.definition"
    );
    let id = info["id"].as_str().unwrap().to_string();
    env.send(&id, "Greet Linus on the local site.", true).await;
    let done = env.wait_status(&id, &["finished", "error"]).await;
    assert_eq!(done["execution_status"], "finished", "{done}");

    let events = env.events(&id).await;
    let obs: Vec<&Value> = events
        .iter()
        .filter(|e| {
            e["kind"] == "ObservationEvent"
                && e["tool_name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("browser_"))
        })
        .map(|e| &e["observation"])
        .collect();
    assert_eq!(obs.len(), 7);
    for o in &obs {
        assert_eq!(o["kind"], "BrowserObservation");
        assert_eq!(o["is_error"], false, "{o}");
    }
    let text = |i: usize| obs[i]["content"][0]["text"].as_str().unwrap().to_string();
    assert_eq!(text(0), format!("Navigated to: {}", site.url("/")));
    assert!(text(3).contains("Your name"), "{}", text(3));
    assert_eq!(text(4), "Typed 'Linus' into element 1");
    assert!(text(6).contains("# Hello, Linus!"), "{}", text(6));
    let actions: Vec<&str> = events
        .iter()
        .filter(|e| e["kind"] == "ActionEvent")
        .filter_map(|e| e["action"]["kind"].as_str())
        .collect();
    assert_eq!(actions[0], "BrowserNavigateAction");
    assert_eq!(actions[4], "BrowserTypeAction");

    // The conversation's browser runs until the conversation is deleted.
    let ours: Vec<u32> = browser_pids()
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    assert!(!ours.is_empty(), "no browser process found");
    let (status, _) = env
        .call("DELETE", &format!("/api/conversations/{id}"), None)
        .await;
    assert_eq!(status, 200);
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let alive: Vec<u32> = browser_pids()
            .into_iter()
            .filter(|p| ours.contains(p))
            .collect();
        if alive.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "browser processes {alive:?} survived the deletion"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn enable_browser_false_marks_the_browser_unusable() {
    let env = Env::start_with(
        |_| Script::from_turns([Turn::text("ok")]),
        |c| c.enable_browser = false,
    )
    .await;
    let (_, catalog) = env.get("/api/tools/catalog").await;
    let entry = catalog["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "browser_tool_set")
        .unwrap()
        .clone();
    assert_eq!(entry["usable"], false, "{entry}");
    let (_, info) = env.get("/server_info").await;
    let usable: Vec<&str> = info["usable_tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(usable.contains(&"terminal"), "{usable:?}");
    assert!(!usable.contains(&"browser_tool_set"), "{usable:?}");
    let (_, tools) = env.get("/api/tools/").await;
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "browser_tool_set"),
        "still registered: {tools}"
    );
}
