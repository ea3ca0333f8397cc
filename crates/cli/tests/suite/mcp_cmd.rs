//! End-to-end tests of `openhands mcp`: the servers in
//! `~/.openhands/mcp.json` as the reference CLI writes them, sessions using
//! (or, disabled, not using) them, and MCP OAuth from the command line —
//! authorized once with `openhands mcp login` against a local
//! OAuth-protected MCP server (the `mcp` package's own authorization
//! server), tokens encrypted at rest and used by later runs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Sandbox, command, runtime};
use openhands_testkit::{MockLlmServer, Script, Turn};
use serde_json::{Value, json};
use std::io::BufRead;
use std::process::{Output, Stdio};

fn mcp_file(sb: &Sandbox) -> std::path::PathBuf {
    sb.home.path().join(".openhands").join("mcp.json")
}

fn out_text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The observation of `tool` in a `run --json` output, as text (or every
/// event kind and error, to explain its absence).
fn observation_of(out: &Output, tool: &str) -> String {
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    match events
        .iter()
        .find(|e| e["kind"] == "ObservationEvent" && e["tool_name"] == tool)
    {
        Some(e) => e["observation"].to_string(),
        None => events
            .iter()
            .map(|e| match e["kind"].as_str() {
                Some(k @ ("AgentErrorEvent" | "ConversationErrorEvent")) => format!("{k}: {e}"),
                Some(k) => k.to_string(),
                None => String::new(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

fn mcp(sb: &Sandbox, args: &[&str]) -> Output {
    command(sb, None).arg("mcp").args(args).output().unwrap()
}

#[test]
fn add_list_get_disable_enable_remove() {
    let sb = Sandbox::new();
    let out = mcp(&sb, &["list"]);
    assert!(out.status.success());
    assert!(out_text(&out).contains("no MCP servers configured"));
    let out = mcp(
        &sb,
        &[
            "add",
            "--transport",
            "http",
            "plain",
            "https://p.invalid/mcp",
        ],
    );
    assert!(out.status.success(), "{}", out_text(&out));
    let out = mcp(&sb, &["login", "plain"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        out_text(&out).contains("does not use OAuth"),
        "{}",
        out_text(&out)
    );
    assert!(mcp(&sb, &["remove", "plain"]).status.success());

    let out = mcp(
        &sb,
        &[
            "add",
            "--transport",
            "http",
            "--header",
            "Authorization: Bearer sk-very-secret-token",
            "--header",
            "X-Client: cli",
            "web",
            "https://example.invalid/mcp",
        ],
    );
    assert!(out.status.success(), "{}", out_text(&out));
    let out = mcp(
        &sb,
        &[
            "add",
            "--transport",
            "stdio",
            "--env",
            "API_KEY=abc",
            "local",
            "python3",
            "--",
            "-m",
            "my_server",
        ],
    );
    assert!(out.status.success(), "{}", out_text(&out));
    let out = mcp(
        &sb,
        &[
            "add",
            "--transport",
            "sse",
            "--auth",
            "oauth",
            "--disabled",
            "notes",
            "https://n.invalid/sse",
        ],
    );
    assert!(out.status.success(), "{}", out_text(&out));
    assert!(out_text(&out).contains("openhands mcp login notes"));

    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(mcp_file(&sb)).unwrap()).unwrap();
    assert_eq!(
        file["mcpServers"]["local"],
        json!({"command": "python3", "args": ["-m", "my_server"], "env": {"API_KEY": "abc"},
               "transport": "stdio", "enabled": true})
    );
    assert_eq!(file["mcpServers"]["web"]["headers"]["X-Client"], "cli");
    assert_eq!(file["mcpServers"]["notes"]["auth"], "oauth");
    assert_eq!(file["mcpServers"]["notes"]["enabled"], false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(mcp_file(&sb))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "headers may hold keys: {mode:o}");
    }

    let list = out_text(&mcp(&sb, &["list"]));
    assert!(list.contains("web [enabled]"), "{list}");
    assert!(list.contains("notes [disabled]"), "{list}");
    assert!(list.contains("command: python3 -m my_server"), "{list}");
    assert!(!list.contains("sk-very-secret-token"), "{list}");
    assert!(list.contains("X-Client: cli"), "{list}");
    let get = out_text(&mcp(&sb, &["get", "notes"]));
    assert!(
        get.contains("auth: oauth") && get.contains("transport: sse"),
        "{get}"
    );

    assert!(mcp(&sb, &["disable", "web"]).status.success());
    assert!(mcp(&sb, &["enable", "notes"]).status.success());
    let list = out_text(&mcp(&sb, &["list"]));
    assert!(
        list.contains("web [disabled]") && list.contains("notes [enabled]"),
        "{list}"
    );
    assert!(mcp(&sb, &["remove", "local"]).status.success());
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(mcp_file(&sb)).unwrap()).unwrap();
    assert!(file["mcpServers"].get("local").is_none());

    // Mistakes are usage errors that say what to do.
    for (args, needle) in [
        (
            &["add", "--transport", "http", "web", "https://x.invalid"][..],
            "exists already",
        ),
        (&["remove", "nope"], "no MCP server 'nope'"),
        (&["enable", "nope"], "no MCP server 'nope'"),
        (
            &[
                "add",
                "--transport",
                "http",
                "--header",
                "nocolon",
                "h",
                "https://x",
            ],
            "invalid header",
        ),
        (
            &["add", "--transport", "http", "h", "python3"],
            "not an http(s) URL",
        ),
        (
            &["add", "--transport", "stdio", "--header", "A: b", "s", "x"],
            "--header is for http/sse",
        ),
        (&["login", "web"], "is disabled; enable it"),
    ] {
        let out = mcp(&sb, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", out_text(&out));
        assert!(
            out_text(&out).contains(needle),
            "{args:?}: {}",
            out_text(&out)
        );
    }
}

/// A stdio server added with `openhands mcp add` gives the agent its tools;
/// disabled, it is not started.
#[test]
fn sessions_use_the_added_servers_until_disabled() {
    let Some(python) = openhands_testkit::fixtures::mcp_python() else {
        return;
    };
    let rt = runtime();
    let sb = Sandbox::new();
    let server_py = sb.home.path().join("shout.py");
    std::fs::write(
        &server_py,
        "from mcp.server.fastmcp import FastMCP\n\
         app = FastMCP('shout')\n\
         @app.tool()\n\
         def shout(text: str) -> str:\n    \
             \"\"\"Upper-cases the text.\"\"\"\n    \
             return text.upper() + '!'\n\
         app.run()\n",
    )
    .unwrap();
    let out = mcp(
        &sb,
        &[
            "add",
            "--transport",
            "stdio",
            "loud",
            &python,
            "--",
            server_py.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", out_text(&out));
    let script = Script::from_turns(vec![
        // One server: its tools keep their own names (no `loud_` prefix).
        Turn::tool_call("shout", json!({"text": "quiet words"})),
        Turn::tool_call("finish", json!({"message": "shouted"})),
    ]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let out = command(&sb, Some(&server.base_url()))
        .args(["run", "--json", "shout it"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", out_text(&out));
    let obs = observation_of(&out, "shout");
    assert!(obs.contains("QUIET WORDS!"), "{obs}");

    assert!(mcp(&sb, &["disable", "loud"]).status.success());
    let script = Script::from_turns(vec![Turn::tool_call("finish", json!({"message": "ok"}))]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let out = command(&sb, Some(&server.base_url()))
        .args(["run", "--json", "anything"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", out_text(&out));
    let tools = server.completion_requests()[0].body["tools"].to_string();
    assert!(!tools.contains("MCPToolDefinition"), "{tools}");
}

/// Plays the user's browser: opens the authorization URL (the test server
/// approves at once) and follows its redirect to the callback listener.
async fn consent(url: &str) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let resp = browser.get(url).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 302, "{:?}", resp.text().await);
    let location = resp.headers()["location"].to_str().unwrap().to_string();
    assert!(location.starts_with("http://localhost:"), "{location}");
    let page = browser.get(&location).send().await.unwrap();
    assert!(page.status().is_success());
}

#[test]
fn oauth_servers_are_authorized_once_and_the_tokens_kept_encrypted() {
    let rt = runtime();
    let Some((_oauth, url)) = rt.block_on(openhands_testkit::fixtures::mcp_oauth_server(
        "streamable-http",
        3600,
    )) else {
        return;
    };
    let sb = Sandbox::new();
    let out = mcp(
        &sb,
        &[
            "add",
            "--transport",
            "http",
            "--auth",
            "oauth",
            "secure",
            &url,
        ],
    );
    assert!(out.status.success(), "{}", out_text(&out));

    let script = Script::from_turns(vec![
        Turn::tool_call("whoami", json!({})),
        Turn::tool_call("finish", json!({"message": "asked"})),
    ]);
    let llm = rt.block_on(MockLlmServer::start(script, 0)).unwrap();

    // Without a terminal and without tokens, a run says what to do.
    let out = command(&sb, Some(&llm.base_url()))
        .args(["run", "who am i"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", out_text(&out));
    assert!(
        out_text(&out).contains("run `openhands mcp login secure`"),
        "{}",
        out_text(&out)
    );

    // `mcp login` prints the URL and waits for the redirect.
    let mut login = command(&sb, None)
        .args(["mcp", "login", "secure", "--no-browser"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(login.stdout.take().unwrap()).lines();
    let auth_url = loop {
        let line = lines.next().expect("the URL is printed").unwrap();
        if line.starts_with("http") {
            break line;
        }
    };
    assert!(auth_url.contains("code_challenge="), "{auth_url}");
    rt.block_on(consent(&auth_url));
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    assert!(login.wait().unwrap().success(), "{rest:?}");
    assert!(rest.iter().any(|l| l.contains("is authorized")), "{rest:?}");

    // Encrypted at rest, owner-only.
    let dir = sb.home.path().join(".openhands");
    let tokens = std::fs::read_to_string(dir.join("mcp_oauth.json")).unwrap();
    assert!(!tokens.contains("access-"), "{tokens}");
    assert!(!tokens.contains("refresh-"), "{tokens}");
    assert!(tokens.contains(url.trim_end_matches('/')), "{tokens}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for f in ["mcp_oauth.json", "mcp_oauth.key"] {
            let mode = std::fs::metadata(dir.join(f)).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "{f}: {mode:o}");
        }
    }

    // Two later runs (two processes) use the kept token.
    for _ in 0..2 {
        let out = command(&sb, Some(&llm.base_url()))
            .args(["run", "--json", "who am i"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", out_text(&out));
        let obs = observation_of(&out, "whoami");
        assert!(obs.contains("token 1 of 1"), "{obs}");
    }

    // `mcp logout` forgets them.
    assert!(mcp(&sb, &["logout", "secure"]).status.success());
    let out = command(&sb, Some(&llm.base_url()))
        .args(["run", "who am i"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", out_text(&out));
}

/// On a terminal, a session authorizes an OAuth server that has no tokens
/// yet before it begins (the URL printed), then runs with it.
#[test]
fn a_session_on_a_terminal_authorizes_first() {
    let rt = runtime();
    let Some((_oauth, url)) = rt.block_on(openhands_testkit::fixtures::mcp_oauth_server(
        "streamable-http",
        3600,
    )) else {
        return;
    };
    let sb = Sandbox::new();
    let out = mcp(
        &sb,
        &[
            "add",
            "--transport",
            "http",
            "--auth",
            "oauth",
            "secure",
            &url,
        ],
    );
    assert!(out.status.success(), "{}", out_text(&out));
    let script = Script::from_turns(vec![
        Turn::tool_call("whoami", json!({})),
        Turn::tool_call("finish", json!({"message": "asked who"})),
    ]);
    let llm = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let mut env = sb.env(Some(&llm.base_url()));
    env.push(("DISPLAY".into(), String::new()));
    let mut tui = common::Tui::start(&["-t", "who am i"], &env, sb.workspace.path());
    let screen = tui.wait_for("waiting for the authorization");
    let auth_url: String = screen
        .split_whitespace()
        .find(|w| w.starts_with("http") && w.contains("code_challenge="))
        .unwrap_or_else(|| panic!("{screen}"))
        .to_string();
    rt.block_on(consent(&auth_url));
    let screen = tui.wait_for("asked who");
    assert!(screen.contains("token 1 of 1"), "{screen}");
    tui.send(b"\x04");
    assert_eq!(tui.wait_exit(), 0);
    assert!(sb.home.path().join(".openhands/mcp_oauth.json").is_file());
}
