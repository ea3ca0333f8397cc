//! Session recording against a real Chromium and a local site serving
//! rrweb itself (the npm package `rrweb@2.0.0-alpha.17`, installed by
//! `scripts/test.sh`; `OPENHANDS_TEST_RRWEB` names its `rrweb.umd.cjs`).
//! Skipped (saying so) only when Chromium or rrweb is missing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_browser::ops::BrowserOp;
use openhands_browser::{
    BrowserConfig, BrowserError, BrowserSession, RecordingConfig, RrwebSource, browser_tool_set,
    find_chromium,
};
use openhands_sdk::tool::{Tool, ToolCallContext, ToolEnv};
use openhands_testkit::site::TestSite;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Where `scripts/test.sh` installs rrweb when `OPENHANDS_TEST_RRWEB` is unset.
const RRWEB_IN_CACHE: &str = "openhands-rs/rrweb/node_modules/rrweb/dist/rrweb.umd.cjs";

fn rrweb_file() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("OPENHANDS_TEST_RRWEB") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let mut candidates = vec![PathBuf::from("/var/cache").join(RRWEB_IN_CACHE)];
    if let Some(cache) = std::env::var_os("XDG_CACHE_HOME") {
        candidates.push(PathBuf::from(cache).join(RRWEB_IN_CACHE));
    }
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(PathBuf::from(home).join(".cache").join(RRWEB_IN_CACHE));
    }
    candidates.into_iter().find(|p| p.is_file())
}

fn prerequisites(test: &str) -> Option<PathBuf> {
    if find_chromium().is_none() {
        eprintln!("SKIPPED {test}: no Chromium installed (apt-get install chromium)");
        return None;
    }
    let rrweb = rrweb_file();
    if rrweb.is_none() {
        eprintln!(
            "SKIPPED {test}: rrweb is not installed (npm install rrweb@2.0.0-alpha.17, then set OPENHANDS_TEST_RRWEB to its dist/rrweb.umd.cjs)"
        );
    }
    rrweb
}

struct Tools(Vec<Arc<dyn Tool>>);

impl Tools {
    async fn call(&self, name: &str, args: Value) -> (bool, String) {
        let tool = self.0.iter().find(|t| t.name() == name).unwrap();
        let action = tool
            .parse_action(args.as_object().cloned().unwrap_or_default())
            .unwrap();
        let obs = tool
            .execute(action, &ToolCallContext::default())
            .await
            .unwrap();
        assert_eq!(obs["kind"], "BrowserObservation");
        (
            obs["is_error"].as_bool().unwrap(),
            obs["content"][0]["text"].as_str().unwrap().to_string(),
        )
    }

    async fn text(&self, name: &str, args: Value) -> String {
        let (is_error, text) = self.call(name, args).await;
        assert!(!is_error, "{name}: {text}");
        text
    }

    async fn close(&self) {
        for t in &self.0 {
            t.close().await;
        }
    }
}

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

/// The saved files of a recording folder, each parsed as an event array.
fn saved_events(dir: &Path) -> Vec<Vec<Value>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| {
            assert_eq!(f.extension().and_then(|e| e.to_str()), Some("json"));
            serde_json::from_slice::<Vec<Value>>(&std::fs::read(f).unwrap()).unwrap()
        })
        .collect()
}

/// `(events, files, folder)` from the stop summary.
fn parse_summary(text: &str) -> (usize, usize, PathBuf) {
    let rest = text
        .strip_prefix("Recording stopped. Captured ")
        .unwrap_or_else(|| panic!("{text}"));
    let (events, rest) = rest.split_once(" events in ").unwrap();
    let (files, rest) = rest.split_once(" file(s). Saved to: ").unwrap();
    (
        events.parse().unwrap(),
        files.parse().unwrap(),
        PathBuf::from(rest),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recording_follows_navigation_and_saves_rrweb_events() {
    let Some(rrweb) = prerequisites("recording_follows_navigation_and_saves_rrweb_events") else {
        return;
    };
    let script = std::fs::read_to_string(rrweb).unwrap();
    let site = TestSite::start_with_scripts(vec![("/lib/rrweb.umd.cjs".into(), script)])
        .await
        .unwrap();
    let ws = tempfile::tempdir().unwrap();
    let params = json!({"recording_script_url": site.url("/lib/rrweb.umd.cjs")});
    let tools =
        Tools(browser_tool_set(params.as_object().unwrap(), &ToolEnv::new(ws.path())).unwrap());

    // Recording failures are answered as plain text, as the reference
    // answers them (`is_error` false).
    let (is_error, text) = tools.call("browser_stop_recording", json!({})).await;
    assert!(!is_error);
    assert_eq!(
        text,
        "Error: Not recording. Call browser_start_recording first."
    );

    tools
        .text("browser_navigate", json!({"url": site.url("/")}))
        .await;
    assert_eq!(
        tools.text("browser_start_recording", json!({})).await,
        "Recording started"
    );
    assert_eq!(
        tools.text("browser_start_recording", json!({})).await,
        "Already recording"
    );
    let state = tools.text("browser_get_state", json!({})).await;
    tools
        .text(
            "browser_click",
            json!({"index": index_of(&state, "Open the greeting form")}),
        )
        .await;
    let state = tools.text("browser_get_state", json!({})).await;
    assert!(state.contains("/form"), "{state}");
    tools
        .text(
            "browser_type",
            json!({"index": index_of(&state, "Your name"), "text": "Ada"}),
        )
        .await;
    tools
        .text(
            "browser_click",
            json!({"index": index_of(&state, "Send greeting")}),
        )
        .await;
    let content = tools.text("browser_get_content", json!({})).await;
    assert!(content.contains("Hello, Ada!"), "{content}");

    let summary = tools.text("browser_stop_recording", json!({})).await;
    let (events, files, dir) = parse_summary(&summary);
    assert!(
        dir.starts_with(ws.path().join(".agent_tmp/browser_observations")),
        "{summary}"
    );
    let name = dir.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with("recording-"), "{name}");
    let saved = saved_events(&dir);
    assert_eq!(saved.len(), files, "{summary}");
    let all: Vec<&Value> = saved.iter().flatten().collect();
    assert_eq!(all.len(), events, "{summary}");
    // rrweb's event types: 2 = full snapshot, 3 = incremental, 4 = meta.
    let of_type = |t: i64| all.iter().filter(|e| e["type"] == t).count();
    assert!(
        of_type(2) >= 3,
        "a full snapshot of each of the three pages: {}",
        of_type(2)
    );
    assert!(of_type(3) >= 1, "incremental events (typing) were recorded");
    let hrefs: Vec<&str> = all
        .iter()
        .filter(|e| e["type"] == 4)
        .filter_map(|e| e["data"]["href"].as_str())
        .collect();
    assert!(hrefs.iter().any(|h| h.ends_with("/form")), "{hrefs:?}");
    assert!(
        hrefs.iter().any(|h| h.contains("/result?name=Ada")),
        "{hrefs:?}"
    );
    assert!(all.iter().all(|e| e["timestamp"].is_number()));

    let (is_error, text) = tools.call("browser_stop_recording", json!({})).await;
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        "Error: Not recording. Call browser_start_recording first."
    );
    tools.close().await;
}

fn session(source: RrwebSource, out: &Path, load_timeout: Duration) -> BrowserSession {
    BrowserSession::new(BrowserConfig {
        recording: RecordingConfig {
            source,
            output_root: out.to_path_buf(),
            flush_interval: Duration::from_millis(700),
            load_timeout,
            max_buffer_bytes: 1024 * 1024,
        },
        ..BrowserConfig::default()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recording_from_a_local_copy_is_written_periodically() {
    let Some(rrweb) = prerequisites("recording_from_a_local_copy_is_written_periodically") else {
        return;
    };
    let site = TestSite::start().await.unwrap();
    let out = tempfile::tempdir().unwrap();
    let session = session(
        RrwebSource::File(rrweb),
        out.path(),
        Duration::from_secs(10),
    );
    let cancel = CancellationToken::new();
    let nav = BrowserOp::Navigate {
        url: site.url("/button"),
        new_tab: false,
    };
    session.run(nav, &cancel).await.unwrap();
    let started = session
        .run(BrowserOp::StartRecording, &cancel)
        .await
        .unwrap();
    assert_eq!(started.text, "Recording started");
    let dir = std::fs::read_dir(out.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    // The periodic writer saves without any browser action happening.
    let deadline = Instant::now() + Duration::from_secs(10);
    while saved_events(&dir).is_empty() {
        assert!(Instant::now() < deadline, "nothing written periodically");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let first = saved_events(&dir);
    assert!(first[0].iter().any(|e| e["type"] == 2), "{:?}", first[0]);
    // Closing the browser keeps what was recorded, as stopping does.
    session.close().await;
    let total: usize = saved_events(&dir).iter().map(Vec::len).sum();
    assert!(total >= first[0].len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unloadable_rrweb_is_a_clear_error_and_browsing_goes_on() {
    if find_chromium().is_none() {
        eprintln!("SKIPPED an_unloadable_rrweb_is_a_clear_error_and_browsing_goes_on: no Chromium");
        return;
    }
    let site = TestSite::start().await.unwrap();
    let out = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let unreachable = format!("http://127.0.0.1:{closed}/rrweb.umd.cjs");
    let s = session(
        RrwebSource::Url(unreachable.clone()),
        out.path(),
        Duration::from_secs(10),
    );
    s.run(
        BrowserOp::Navigate {
            url: site.url("/"),
            new_tab: false,
        },
        &cancel,
    )
    .await
    .unwrap();
    let Err(BrowserError::Recording(msg)) = s.run(BrowserOp::StartRecording, &cancel).await else {
        panic!("an unreachable rrweb must fail");
    };
    assert!(
        msg.starts_with("Error: Unable to start recording."),
        "{msg}"
    );
    assert!(
        msg.contains(&unreachable) && msg.contains("OH_BROWSER_RRWEB_URL"),
        "{msg}"
    );
    let Err(BrowserError::Recording(msg)) = s.run(BrowserOp::StopRecording, &cancel).await else {
        panic!("nothing is recording");
    };
    assert!(msg.contains("Not recording"), "{msg}");
    s.close().await;

    // A script that never arrives: the configured wait, then an error.
    let s = session(
        RrwebSource::Url(site.url("/never")),
        out.path(),
        Duration::from_secs(2),
    );
    s.run(
        BrowserOp::Navigate {
            url: site.url("/form"),
            new_tab: false,
        },
        &cancel,
    )
    .await
    .unwrap();
    let t0 = Instant::now();
    let Err(BrowserError::Recording(msg)) = s.run(BrowserOp::StartRecording, &cancel).await else {
        panic!("a script that never loads must fail");
    };
    assert!(t0.elapsed() < Duration::from_secs(8), "{:?}", t0.elapsed());
    assert!(
        msg.contains("did not load") && msg.contains("within 2 seconds"),
        "{msg}"
    );
    let content = s
        .run(
            BrowserOp::GetContent {
                links: false,
                start: 0,
            },
            &cancel,
        )
        .await
        .unwrap();
    assert!(content.text.contains("Who are you?"), "{}", content.text);
    s.close().await;
}
