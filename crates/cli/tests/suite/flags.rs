//! End-to-end tests of the command-line flags, the settings file and bad
//! input: the real binary against the scripted LLM server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Sandbox, runtime};
use openhands_testkit::{MockLlmServer, Script, Turn};
use serde_json::{Value, json};
use std::process::{Command, Output, Stdio};

fn openhands(sb: &Sandbox, base_url: Option<&str>) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_openhands"));
    for var in [
        "LOG_LEVEL",
        "RUST_LOG",
        "OH_PERSISTENCE_DIR",
        "OH_SECRET_KEY",
        "LLM_MODEL",
        "LLM_API_KEY",
        "LLM_BASE_URL",
    ] {
        cmd.env_remove(var);
    }
    cmd.envs(sb.env(base_url))
        .current_dir(sb.workspace.path())
        .stdin(Stdio::null());
    cmd
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Bad input: exit code 2 and one line saying what to do.
fn assert_usage_error(out: &Output, needle: &str) {
    let (stdout, stderr) = text(out);
    assert_eq!(
        out.status.code(),
        Some(2),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
}

#[test]
fn run_with_grep_and_glob_uses_both_tools() {
    let rt = runtime();
    let sb = Sandbox::new();
    let ws = sb.workspace.path();
    std::fs::create_dir_all(ws.join("docs")).unwrap();
    std::fs::write(ws.join("docs/notes.md"), "intro\nthe needle-text is here\n").unwrap();
    std::fs::write(ws.join("main.rs"), "fn main() {}\n").unwrap();
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "grep",
            json!({"pattern": "needle-text", "path": ws.display().to_string()}),
        ),
        Turn::tool_call(
            "glob",
            json!({"pattern": "**/*.md", "path": ws.display().to_string()}),
        ),
        Turn::tool_call("finish", json!({"message": "found docs/notes.md"})),
    ]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let last = ws.join("last.txt");
    let out = openhands(&sb, Some(&server.base_url()))
        .args([
            "run",
            "--json",
            "--tools",
            "grep,glob",
            "--output-last-message",
        ])
        .arg(&last)
        .arg("find the needle")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let observation = |tool: &str| {
        events
            .iter()
            .find(|e| e["kind"] == "ObservationEvent" && e["tool_name"] == tool)
            .unwrap_or_else(|| panic!("no {tool} observation in {stdout}"))
            .to_string()
    };
    assert!(observation("grep").contains("notes.md"));
    assert!(observation("glob").contains("notes.md"));
    assert!(!observation("glob").contains("main.rs"));
    assert!(
        !events.iter().any(|e| e["kind"] == "AgentErrorEvent"),
        "{stdout}"
    );
    // Only the chosen tools (and the built-ins) were offered to the model.
    let offered: Vec<String> = server.completion_requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(offered, vec!["grep", "glob", "finish", "think"]);
    assert_eq!(
        std::fs::read_to_string(&last).unwrap(),
        "found docs/notes.md"
    );
}

#[test]
fn bad_input_is_one_line_and_exit_code_2() {
    let sb = Sandbox::new();
    let url = Some("http://127.0.0.1:9/v1");
    let out = openhands(&sb, url)
        .args(["run", "--tools", "terminal,browser", "x"])
        .output()
        .unwrap();
    assert_usage_error(
        &out,
        "unknown tool 'browser' in --tools: the built-in tools are terminal",
    );

    let missing = sb.workspace.path().join("nope.json");
    let out = openhands(&sb, url)
        .args(["run", "--mcp-config"])
        .arg(&missing)
        .arg("x")
        .output()
        .unwrap();
    assert_usage_error(&out, "cannot read the MCP config file");

    let mcp = sb.workspace.path().join("mcp.json");
    std::fs::write(
        &mcp,
        r#"{"mcpServers": {"fetch": {"args": ["mcp-server-fetch"]}}}"#,
    )
    .unwrap();
    let out = openhands(&sb, url)
        .args(["run", "--mcp-config"])
        .arg(&mcp)
        .arg("x")
        .output()
        .unwrap();
    assert_usage_error(&out, "MCP server 'fetch'");
    assert!(text(&out).1.contains("field 'command'"));

    let out = openhands(&sb, None)
        .env("LLM_MODEL", "openai/gpt-5")
        .args(["run", "x"])
        .output()
        .unwrap();
    assert_usage_error(&out, "no API key for openai/gpt-5: set LLM_API_KEY");

    let out = openhands(&sb, None).args(["run", "x"]).output().unwrap();
    assert_usage_error(&out, "no model configured");

    let out = openhands(&sb, url)
        .args(["run", "--confirm", "always", "x"])
        .output()
        .unwrap();
    assert_usage_error(&out, "needs a terminal to ask on");

    let out = openhands(&sb, url)
        .args(["--tools", "grep", "run", "x"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "session flags before a subcommand are refused"
    );

    let out = openhands(&sb, url).output().unwrap();
    assert_usage_error(&out, "the interactive session needs a terminal");

    let out = openhands(&sb, url)
        .args(["--resume", "abcdef"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));

    let out = openhands(&sb, url)
        .args(["resume", "0123abcd"])
        .output()
        .unwrap();
    assert_usage_error(&out, "no conversation starting with '0123abcd'");
}

fn settings_path(sb: &Sandbox) -> std::path::PathBuf {
    sb.home.path().join(".openhands").join("settings.json")
}

#[test]
fn config_sets_the_reference_settings_file_and_run_uses_it() {
    let rt = runtime();
    let sb = Sandbox::new();
    let script = Script::from_turns(vec![Turn::tool_call("finish", json!({"message": "ok"}))]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let set = |key: &str, value: &str| {
        let out = openhands(&sb, None)
            .args(["config", "set", key, value])
            .output()
            .unwrap();
        assert!(out.status.success(), "{:?}", text(&out));
    };
    set("model", "openai/mock-model");
    set("api_key", "sk-test-secret-123");
    set("base_url", &server.base_url());
    set("tools", "terminal,GrepTool");
    set("confirm", "risky");
    set("max_iterations", "7");
    set("condenser", "none");

    let stored: Value =
        serde_json::from_slice(&std::fs::read(settings_path(&sb)).unwrap()).unwrap();
    assert_eq!(stored["schema_version"], 6);
    assert_eq!(stored["agent_settings"]["agent_kind"], "openhands");
    assert_eq!(
        stored["agent_settings"]["llm"]["model"],
        "openai/mock-model"
    );
    assert_eq!(
        stored["agent_settings"]["llm"]["api_key"],
        "sk-test-secret-123"
    );
    assert_eq!(
        stored["agent_settings"]["tools"],
        json!([{"name": "terminal", "params": {}}, {"name": "grep", "params": {}}])
    );
    assert_eq!(stored["agent_settings"]["condenser"]["enabled"], false);
    assert_eq!(stored["conversation_settings"]["confirmation_mode"], true);
    assert_eq!(stored["conversation_settings"]["security_analyzer"], "llm");
    assert_eq!(stored["conversation_settings"]["max_iterations"], 7);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(settings_path(&sb))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "the settings file holds a key: owner only");
    }

    let out = openhands(&sb, None).args(["config"]).output().unwrap();
    let (stdout, _) = text(&out);
    assert!(stdout.contains("openai/mock-model"), "{stdout}");
    assert!(stdout.contains("sk-…23"), "the key is masked: {stdout}");
    assert!(!stdout.contains("sk-test-secret-123"));
    assert!(stdout.contains("risky"));

    // The settings need a terminal for confirmations; switch them off by flag.
    let out = openhands(&sb, None)
        .args(["run", "--json", "--confirm", "never", "say ok"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", text(&out));
    let request = &server.completion_requests()[0];
    assert_eq!(
        request.headers["authorization"],
        "Bearer sk-test-secret-123"
    );
    let offered: Vec<&str> = request.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, vec!["terminal", "grep", "finish", "think"]);
    let dirs = sb.conversation_dirs();
    let state: Value =
        serde_json::from_slice(&std::fs::read(dirs[0].join("base_state.json")).unwrap()).unwrap();
    assert_eq!(state["max_iterations"], 7);
    assert!(
        state["agent"]["condenser"].is_null(),
        "{}",
        state["agent"]["condenser"]
    );

    let out = openhands(&sb, None)
        .args(["config", "unset", "model"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let out = openhands(&sb, None)
        .args(["config", "set", "confirm", "sometimes"])
        .output()
        .unwrap();
    assert_usage_error(
        &out,
        "invalid value for confirm: use never, risky or always",
    );
    let out = openhands(&sb, None)
        .args(["config", "set", "colour", "blue"])
        .output()
        .unwrap();
    assert_usage_error(&out, "unknown setting 'colour'");
}

#[test]
fn unsupported_settings_are_refused_not_ignored() {
    let sb = Sandbox::new();
    let dir = sb.home.path().join(".openhands");
    std::fs::create_dir_all(&dir).unwrap();
    let write = |v: Value| std::fs::write(dir.join("settings.json"), v.to_string()).unwrap();
    let url = Some("http://127.0.0.1:9/v1");

    write(
        json!({"agent_settings": {"mcp_config": {"mcpServers": {"gh": {"url": "http://x/mcp", "auth": {"strategy": "oauth2",
            "authentication": {"type": "oauth", "client_auth_method": "private_key_jwt"}}}}}}}),
    );
    let out = openhands(&sb, url).args(["run", "x"]).output().unwrap();
    assert_usage_error(&out, "MCP server 'gh'");
    assert!(text(&out).1.contains("not supported"));

    write(json!({"agent_settings": {"agent_context": {"load_public_skills": true}}}));
    let out = openhands(&sb, url).args(["run", "x"]).output().unwrap();
    assert_usage_error(&out, "load_public_skills is true");

    write(json!({"agent_settings": {"tools": [{"name": "browser_tool_set"}]}}));
    let out = openhands(&sb, url).args(["run", "x"]).output().unwrap();
    assert_usage_error(&out, "unknown tool 'browser_tool_set'");

    std::fs::write(dir.join("settings.json"), "{oops").unwrap();
    let out = openhands(&sb, url).args(["run", "x"]).output().unwrap();
    assert_usage_error(&out, "is not valid JSON");
}

#[test]
fn no_skills_drops_inline_skills_and_skill_loading() {
    let rt = runtime();
    let sb = Sandbox::new();
    let dir = sb.home.path().join(".openhands");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("settings.json"),
        json!({"agent_settings": {"agent_context": {
            "skills": [{"name": "style", "content": "Always answer in haiku."}],
            "load_user_skills": true}}})
        .to_string(),
    )
    .unwrap();
    let script = Script::from_turns(vec![Turn::tool_call("finish", json!({"message": "ok"}))]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let out = openhands(&sb, Some(&server.base_url()))
        .args(["run", "--no-skills", "--json", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", text(&out));
    let prompt = common::request_text(&server.completion_requests()[0].body);
    assert!(
        !prompt.contains("haiku"),
        "--no-skills removes the inline skill"
    );

    std::fs::write(
        dir.join("settings.json"),
        json!({"agent_settings": {"agent_context": {
            "skills": [{"name": "style", "content": "Always answer in haiku."}]}}})
        .to_string(),
    )
    .unwrap();
    let out = openhands(&sb, Some(&server.base_url()))
        .args(["run", "--json", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", text(&out));
    let prompt = common::request_text(&server.completion_requests()[1].body);
    assert!(
        prompt.contains("Always answer in haiku."),
        "inline skills are used"
    );
}

#[test]
fn max_iterations_flag_limits_the_run() {
    let rt = runtime();
    let sb = Sandbox::new();
    let script = Script::from_turns(vec![
        Turn::tool_call("think", json!({"thought": "one"})),
        Turn::tool_call("think", json!({"thought": "two"})),
        Turn::tool_call("finish", json!({"message": "ok"})),
    ]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let out = openhands(&sb, Some(&server.base_url()))
        .args(["run", "--max-iterations", "1", "think twice"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).1.contains("MaxIterationsReached"),
        "{:?}",
        text(&out)
    );
    assert_eq!(server.completion_requests().len(), 1);
}

#[test]
fn repository_skills_are_loaded_unless_no_skills() {
    let rt = runtime();
    let sb = Sandbox::new();
    std::fs::write(sb.workspace.path().join("AGENTS.md"), "Use tabs.").unwrap();
    let script = Script::from_turns(vec![Turn::tool_call("finish", json!({"message": "ok"}))]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let out = openhands(&sb, Some(&server.base_url()))
        .args(["run", "hi"])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let prompt = common::request_text(&server.completion_requests()[0].body);
    assert!(
        prompt.contains("[BEGIN context from [agents]]\nUse tabs.\n[END Context]"),
        "{prompt}"
    );
    // --no-skills leaves the repository out
    let out = openhands(&sb, Some(&server.base_url()))
        .args(["run", "--no-skills", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", text(&out));
    let prompt = common::request_text(&server.completion_requests()[1].body);
    assert!(!prompt.contains("Use tabs."), "{prompt}");
}

/// `run --mcp-config` with the reference MCP server (server-everything,
/// installed by scripts/test.sh): the model calls its `echo` tool; servers
/// of `~/.openhands/mcp.json` are used too, and one that cannot start is
/// an error event, not a failed run.
#[test]
fn run_with_an_mcp_config_uses_the_servers_tools() {
    let Some(index) = openhands_testkit::fixtures::mcp_everything() else {
        return;
    };
    let rt = runtime();
    let sb = Sandbox::new();
    let dir = sb.home.path().join(".openhands");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("mcp.json"),
        r#"{"mcpServers": {"broken": {"command": "definitely-not-a-program-xyz"}}}"#,
    )
    .unwrap();
    let file = sb.workspace.path().join("servers.json");
    std::fs::write(
        &file,
        json!({"mcpServers": {"everything": {"command": "node", "args": [index, "stdio"]}}})
            .to_string(),
    )
    .unwrap();
    let script = Script::from_turns(vec![
        Turn::tool_call("everything_echo", json!({"message": "from the cli"})),
        Turn::tool_call("finish", json!({"message": "ok"})),
    ]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let out = openhands(&sb, Some(&server.base_url()))
        .args(["run", "--json", "--mcp-config"])
        .arg(&file)
        .arg("echo something")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let obs = events
        .iter()
        .find(|e| e["kind"] == "ObservationEvent" && e["tool_name"] == "everything_echo")
        .unwrap_or_else(|| panic!("{stdout}"));
    assert_eq!(obs["observation"]["kind"], "MCPToolObservation");
    assert_eq!(
        obs["observation"]["content"][1]["text"],
        "Echo: from the cli"
    );
    let err = events
        .iter()
        .find(|e| e["kind"] == "ConversationErrorEvent")
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        err["detail"]
            .as_str()
            .unwrap()
            .contains("MCP server 'broken'")
    );
}

#[test]
fn sandbox_flag_confines_the_agents_commands() {
    let rt = runtime();
    let sb = Sandbox::new();
    let ws = sb.workspace.path();
    let home = sb.home.path();
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "terminal",
            json!({"command": format!(
                "echo in > inside.txt; echo out > {}/out.txt; touch /usr/oh-cli-sandbox-test 2>&1; \
                 (echo > /dev/tcp/127.0.0.1/9) 2>/dev/null || echo NO-NETWORK",
                home.display()
            )}),
        ),
        Turn::tool_call("finish", json!({"message": "ok"})),
    ]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let out = openhands(&sb, Some(&server.base_url()))
        .args([
            "run",
            "--json",
            "--tools",
            "terminal",
            "--sandbox",
            "--no-network",
            "write",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("Read-only file system"), "{stdout}");
    assert!(stdout.contains("NO-NETWORK"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(ws.join("inside.txt")).unwrap(),
        "in\n"
    );
    assert!(!home.join("out.txt").exists());
    assert!(!std::path::Path::new("/usr/oh-cli-sandbox-test").exists());
    // --no-network alone is a usage error.
    let out = openhands(&sb, Some(&server.base_url()))
        .args(["run", "--no-network", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{:?}", text(&out));
}
