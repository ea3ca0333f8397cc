//! What the conversations do: the scripted LLM's answers and the start
//! request, identical for both servers.

use openhands_testkit::{Script, Turn};
use serde_json::{Value, json};
use std::path::Path;

/// The two-step script: a `terminal` call running `echo hi`, then `finish`.
/// Tool-less requests (title generation) get a fixed title.
pub fn two_step_script() -> Script {
    Script::from_turns([
        Turn::tool_call("terminal", json!({"command": "echo hi"})),
        Turn::tool_call("finish", json!({"message": "done"})),
    ])
    .with_toolless_reply(Turn::text("Benchmark conversation"))
}

/// The `POST /api/conversations` body: an agent with the terminal, file
/// editor and task tracker tools, talking to the mock LLM at `llm_base_url`,
/// working in `workspace`.
pub fn start_request(llm_base_url: &str, workspace: &Path) -> Value {
    json!({
        "agent": {
            "kind": "Agent",
            "llm": {
                "model": "openai/mock-model",
                "base_url": llm_base_url,
                "api_key": "mock-key",
                "api_mode": "chat",
                "num_retries": 0
            },
            "tools": [{"name": "terminal"}, {"name": "file_editor"}, {"name": "task_tracker"}]
        },
        "workspace": {"kind": "LocalWorkspace", "working_dir": workspace.to_string_lossy()}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_request_names_the_mock_and_the_tools() {
        let body = start_request("http://127.0.0.1:9/v1", Path::new("/w"));
        assert_eq!(body["agent"]["llm"]["base_url"], "http://127.0.0.1:9/v1");
        assert_eq!(body["agent"]["llm"]["num_retries"], 0);
        assert_eq!(body["agent"]["tools"][0]["name"], "terminal");
        assert_eq!(body["workspace"]["working_dir"], "/w");
    }
}
